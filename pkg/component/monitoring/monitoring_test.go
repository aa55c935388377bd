// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package monitoring_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

const namespace = "shoot--project--name"

var (
	kluctlShoot = monitoring.Values{
		Controllers: []monitoring.Controller{
			{Component: fluxapi.ComponentSourceController, Namespace: "flux-system"},
			{Component: fluxapi.ComponentKluctlController, Namespace: "gitops"},
		},
		Bootstrap: &monitoring.Bootstrap{Mode: fluxapi.BootstrapModeKluctl, Namespace: "gitops", DeployKey: true},
	}
	fluxShoot = monitoring.Values{
		Controllers: []monitoring.Controller{
			{Component: fluxapi.ComponentSourceController, Namespace: "flux-system"},
			{Component: fluxapi.ComponentKustomizeController, Namespace: "flux-system"},
		},
		Bootstrap: &monitoring.Bootstrap{Mode: fluxapi.BootstrapModeFlux, Namespace: "flux-system"},
	}
)

// writes counts the writes of a fake client.
type writes struct{ n int }

func newClient(w *writes, objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
	count := func() { w.n++ }
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
}

func scrapeConfigNames(c client.Client) []string {
	GinkgoHelper()
	list := &monitoringv1alpha1.ScrapeConfigList{}
	Expect(c.List(context.Background(), list, client.InNamespace(namespace))).To(Succeed())
	var names []string
	for _, sc := range list.Items {
		names = append(names, sc.Name)
	}
	return names
}

var _ = Describe("Monitoring", func() {
	var ctx = context.Background()

	Describe("ScrapeConfigs", func() {
		It("scrapes each delivered controller's pods in its namespace through the shoot's API server with the shoot-access token", func() {
			scs, err := monitoring.ScrapeConfigs(namespace, kluctlShoot)
			Expect(err).NotTo(HaveOccurred())
			Expect(scs).To(HaveLen(2))
			sc := scs[1]
			Expect(sc.Name).To(Equal("shoot-flux-kluctl-controller"))
			Expect(sc.Labels).To(HaveKeyWithValue("prometheus", "shoot"))
			Expect(sc.Spec.Authorization.Credentials.Name).To(Equal("shoot-access-prometheus-shoot"))
			Expect(sc.Spec.KubernetesSDConfigs).To(HaveLen(1))
			sd := sc.Spec.KubernetesSDConfigs[0]
			Expect(*sd.APIServer).To(Equal("https://kube-apiserver"))
			Expect(sd.Role).To(Equal(monitoringv1alpha1.KubernetesRolePod))
			Expect(sd.Namespaces.Names).To(Equal([]string{"gitops"}))

			relabel := map[string]monitoringv1.RelabelConfig{}
			for _, r := range sc.Spec.RelabelConfigs {
				relabel[r.TargetLabel+"|"+r.Regex] = r
			}
			Expect(relabel).To(HaveKeyWithValue("job|", HaveField("Replacement", HaveValue(Equal("shoot-flux-kluctl-controller")))))
			Expect(relabel).To(HaveKeyWithValue("__metrics_path__|(.+);(.+)", HaveField("Replacement", HaveValue(Equal("/api/v1/namespaces/gitops/pods/${1}:${2}/proxy/metrics")))))
			Expect(relabel).To(HaveKeyWithValue("|kluctl-controller-.*", HaveField("Action", Equal("keep"))))
			Expect(relabel).To(HaveKeyWithValue("|controller;metrics", HaveField("Action", Equal("keep"))))
			for _, r := range sc.Spec.RelabelConfigs {
				Expect(r.TargetLabel).NotTo(Equal("type"), "gotk_reconcile_condition has a label type of its own")
			}
		})

		It("keeps the controller totals of its own reconcilers and the series of the bootstrap objects only", func() {
			scs, err := monitoring.ScrapeConfigs(namespace, kluctlShoot)
			Expect(err).NotTo(HaveOccurred())
			rules := scs[0].Spec.MetricRelabelConfigs
			Expect(rules).To(HaveLen(3))
			names := regexp.MustCompile(`^(?:` + rules[0].Regex + `)$`)
			Expect(names.MatchString("gotk_reconcile_condition")).To(BeTrue())
			Expect(names.MatchString("go_goroutines")).To(BeFalse())
			objects := regexp.MustCompile(`^(?:` + rules[1].Regex + `)$`)
			Expect(rules[1].SourceLabels).To(Equal([]monitoringv1.LabelName{"__name__", "name", "namespace", "controller", "result"}))
			Expect(objects.MatchString("gotk_reconcile_condition;shoot-flux-bootstrap;gitops;;")).To(BeTrue())
			Expect(objects.MatchString("gotk_reconcile_condition;my-app;gitops;;")).To(BeFalse())
			Expect(objects.MatchString("gotk_reconcile_condition;shoot-flux-bootstrap;other;;")).To(BeFalse())
			Expect(objects.MatchString("controller_runtime_reconcile_total;;;gitrepository;success")).To(BeTrue())
			Expect(objects.MatchString("controller_runtime_reconcile_total;;;gitrepository;tenant")).To(BeFalse())
			Expect(objects.MatchString("controller_runtime_reconcile_errors_total;;;ocirepository;")).To(BeTrue())
			// Another controller's reconciler, or one the shoot owner names.
			Expect(objects.MatchString("controller_runtime_reconcile_errors_total;;;kustomization;")).To(BeFalse())
			Expect(objects.MatchString("controller_runtime_reconcile_errors_total;;;my-app;")).To(BeFalse())
			Expect(rules[2].Action).To(Equal("labelkeep"))
			labels := regexp.MustCompile(`^(?:` + rules[2].Regex + `)$`)
			Expect(labels.MatchString("controller")).To(BeTrue())
			Expect(labels.MatchString("__name__")).To(BeTrue())
			Expect(labels.MatchString("tenant_label")).To(BeFalse())
		})

		It("bounds the targets, samples, labels and label values of every scrape", func() {
			scs, err := monitoring.ScrapeConfigs(namespace, fluxShoot)
			Expect(err).NotTo(HaveOccurred())
			for _, sc := range scs {
				Expect(sc.Spec.TargetLimit).To(HaveValue(BeEquivalentTo(2)), sc.Name)
				Expect(sc.Spec.SampleLimit).To(HaveValue(BeEquivalentTo(monitoring.SampleLimit)), sc.Name)
				Expect(sc.Spec.LabelLimit).To(HaveValue(BeEquivalentTo(monitoring.LabelLimit)), sc.Name)
				Expect(sc.Spec.LabelValueLengthLimit).To(HaveValue(BeEquivalentTo(monitoring.LabelValueLengthLimit)), sc.Name)
				Expect(sc.Spec.KeepDroppedTargets).To(HaveValue(BeNumerically(">", 0)), sc.Name)
			}
		})

		It("keeps no per-object series without bootstrap objects", func() {
			scs, err := monitoring.ScrapeConfigs(namespace, monitoring.Values{Controllers: kluctlShoot.Controllers})
			Expect(err).NotTo(HaveOccurred())
			objects := regexp.MustCompile(`^(?:` + scs[0].Spec.MetricRelabelConfigs[1].Regex + `)$`)
			Expect(objects.MatchString("gotk_reconcile_condition;shoot-flux-bootstrap;gitops;;")).To(BeFalse())
			Expect(objects.MatchString("controller_runtime_reconcile_total;;;gitrepository;requeue_after")).To(BeTrue())
		})

		It("refuses a controller without a known metrics endpoint", func() {
			_, err := monitoring.ScrapeConfigs(namespace, monitoring.Values{Controllers: []monitoring.Controller{{Component: "image-automation-controller"}}})
			Expect(err).To(MatchError(ContainSubstring("image-automation-controller")))
		})
	})

	Describe("PrometheusRule", func() {
		alerts := func(v monitoring.Values) map[string][]monitoringv1.Rule {
			rule := monitoring.PrometheusRule(namespace, v)
			Expect(rule.Name).To(Equal("shoot-flux"))
			Expect(rule.Labels).To(HaveKeyWithValue("prometheus", "shoot"))
			byName := map[string][]monitoringv1.Rule{}
			for _, r := range rule.Spec.Groups[0].Rules {
				byName[r.Alert+r.Record] = append(byName[r.Alert+r.Record], r)
			}
			return byName
		}

		It("alerts the shoot owner on each delivered controller and the KluctlDeployment, naming the object and the deploy key", func() {
			byName := alerts(kluctlShoot)
			Expect(byName).To(HaveKey(monitoring.RecordErrors))
			Expect(byName[monitoring.AlertControllerDown]).To(HaveLen(2))
			Expect(byName).NotTo(HaveKey(monitoring.AlertSourceFailing))
			failing := byName[monitoring.AlertDeploymentFailing]
			Expect(failing).To(HaveLen(1))
			Expect(failing[0].Expr.String()).To(ContainSubstring(`name="shoot-flux-bootstrap",namespace="gitops"`))
			Expect(failing[0].Labels).To(HaveKeyWithValue("visibility", "owner"))
			Expect(failing[0].Labels).To(HaveKeyWithValue("type", "shoot"))
			Expect(failing[0].Annotations["description"]).To(ContainSubstring("providerStatus.publicKey"))
		})

		It("alerts on the GitRepository in flux mode, whose failures source-controller's metrics tell", func() {
			byName := alerts(fluxShoot)
			Expect(byName[monitoring.AlertSourceFailing]).To(HaveLen(1))
			Expect(byName[monitoring.AlertSourceFailing][0].Annotations["summary"]).To(Equal("GitRepository flux-system/shoot-flux-bootstrap of the shoot cannot be fetched."))
			Expect(byName[monitoring.AlertSourceFailing][0].Annotations["description"]).NotTo(ContainSubstring("deploy key"))
			Expect(byName).NotTo(HaveKey(monitoring.AlertDeploymentFailing))
		})

		It("keeps the controller alerts only without bootstrap objects", func() {
			byName := alerts(monitoring.Values{Controllers: fluxShoot.Controllers})
			Expect(byName[monitoring.AlertControllerDown]).To(HaveLen(2))
			Expect(byName).NotTo(HaveKey(monitoring.AlertSourceFailing))
			Expect(byName).NotTo(HaveKey(monitoring.AlertDeploymentFailing))
		})
	})

	It("ships a dashboard for the shoot's Plutono that is valid JSON and only queries kept series", func() {
		cm := monitoring.DashboardConfigMap(namespace)
		Expect(cm.Labels).To(HaveKeyWithValue("dashboard.monitoring.gardener.cloud/shoot", "true"))
		var dashboard struct {
			Panels []struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		Expect(json.Unmarshal([]byte(monitoring.Dashboard()), &dashboard)).To(Succeed())
		Expect(dashboard.Panels).NotTo(BeEmpty())
		metric := regexp.MustCompile(`\b([a-z_]+)(?:\{|\[)`)
		for _, p := range dashboard.Panels {
			for _, t := range p.Targets {
				for _, m := range metric.FindAllStringSubmatch(t.Expr, -1) {
					if m[1] == "up" || m[1] == "by" || strings.HasPrefix(m[1], "histogram") {
						continue
					}
					Expect(monitoring.KeptMetrics).To(ContainElement(m[1]), "query %s", t.Expr)
				}
			}
		}
	})

	Describe("Deploy and Destroy", func() {
		It("creates the objects once, writes nothing when nothing changed and removes a controller that is no longer delivered", func() {
			w := &writes{}
			c := newClient(w)
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			Expect(w.n).To(Equal(4))
			Expect(scrapeConfigNames(c)).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kluctl-controller"))
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-flux"}, &monitoringv1.PrometheusRule{})).To(Succeed())
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: monitoring.DashboardConfigMapName}, &corev1.ConfigMap{})).To(Succeed())

			w.n = 0
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			Expect(w.n).To(BeZero())

			Expect(monitoring.New(c, c, namespace, fluxShoot).Deploy(ctx)).To(Succeed())
			Expect(scrapeConfigNames(c)).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kustomize-controller"))
			// kluctl's ScrapeConfig deleted, kustomize's created, source-controller's updated (the
			// bootstrap objects moved to flux-system), the rule updated.
			Expect(w.n).To(Equal(4))
		})

		It("writes nothing when the API server returns the objects with its defaults filled in", func() {
			w := &writes{}
			c := newClient(w)
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			// What the API server returns of a ScrapeConfig it stored: the CRD defaults the action
			// of every relabelling to replace.
			list := &monitoringv1alpha1.ScrapeConfigList{}
			Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			Expect(list.Items).To(HaveLen(2))
			for i := range list.Items {
				sc := &list.Items[i]
				for _, configs := range [][]monitoringv1.RelabelConfig{sc.Spec.RelabelConfigs, sc.Spec.MetricRelabelConfigs} {
					for j := range configs {
						if configs[j].Action == "" {
							configs[j].Action = "replace"
						}
					}
				}
				Expect(c.Update(ctx, sc)).To(Succeed())
			}

			w.n = 0
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			Expect(w.n).To(BeZero())
		})

		It("leaves others' objects alone and removes its own, without writes when there are none", func() {
			other := &monitoringv1alpha1.ScrapeConfig{}
			other.Name, other.Namespace = "shoot-other", namespace
			w := &writes{}
			c := newClient(w, other)
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())

			w.n = 0
			Expect(monitoring.New(c, c, namespace, monitoring.Values{}).Destroy(ctx)).To(Succeed())
			Expect(w.n).To(Equal(4))
			Expect(scrapeConfigNames(c)).To(ConsistOf("shoot-other"))

			w.n = 0
			Expect(monitoring.New(c, c, namespace, monitoring.Values{}).Destroy(ctx)).To(Succeed())
			Expect(w.n).To(BeZero())
		})

		It("restores an object changed in the seed", func() {
			w := &writes{}
			c := newClient(w)
			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			rule := &monitoringv1.PrometheusRule{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-flux"}, rule)).To(Succeed())
			rule.Spec.Groups = nil
			delete(rule.Labels, constants.LabelManagedBy)
			Expect(c.Update(ctx, rule)).To(Succeed())

			Expect(monitoring.New(c, c, namespace, kluctlShoot).Deploy(ctx)).To(Succeed())
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "shoot-flux"}, rule)).To(Succeed())
			Expect(rule.Spec).To(Equal(monitoring.PrometheusRule(namespace, kluctlShoot).Spec))
			Expect(rule.Labels).To(HaveKeyWithValue(constants.LabelManagedBy, constants.ExtensionName))
		})
	})
})
