// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/promscrape"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// The shoot's Prometheus is not part of the sandbox; the spec does what it does with a
// ScrapeConfig: it discovers the pods of the ScrapeConfig's namespaces through the shoot's API
// server with the token of the Secret it names, applies its relabelling to find the target and the
// path, scrapes that path through the shoot's API server with the same token, and keeps what its
// metric relabelling keeps. The metrics come from the real controllers the kubelet stand-in runs,
// reached through the VPN stand-in as kube-apiserver reaches the pods of a shoot.
var _ = Describe("The shoot's monitoring", func() {
	It("lets the shoot's Prometheus scrape a kluctl shoot's controllers as the ScrapeConfigs say, and follows hibernation and disable", Label(labelDeployed), func(ctx SpecContext) {
		h, _, logs := kluctlShoot(ctx, "monkluctl", kluctlShootSpec{kluctl: map[string]any{"target": gitserver.TargetBlue}})
		token, err := h.PrometheusShootAccess(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("finding the ScrapeConfigs, the PrometheusRule and the dashboard with Gardener's labels")
		expectMonitoringObjects(ctx, h, "shoot-flux-source-controller", "shoot-flux-kluctl-controller")

		By("scraping each delivered controller as the shoot's Prometheus would")
		var series map[string][]model.LabelSet
		Eventually(func(g Gomega) {
			series = scrapeAsShootPrometheus(g, ctx, h, token)
			g.Expect(series).To(HaveKey("up"))
			g.Expect(readyBootstrap(series)).To(BeTrue(), "the KluctlDeployment's Ready condition as the rule reads it: %v", series["gotk_reconcile_condition"])
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		Expect(jobs(series["up"])).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kluctl-controller"))
		Expect(jobs(series["controller_runtime_reconcile_total"])).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kluctl-controller"))
		for name, sets := range series {
			if name == "up" {
				continue
			}
			Expect(monitoring.KeptMetrics).To(ContainElement(name))
			for _, ls := range sets {
				if objectName, ok := ls["name"]; ok {
					Expect(string(objectName)).To(Equal(constants.BootstrapName), "%s: only the bootstrap object's series are kept", name)
				}
			}
		}

		By("keeping them while the shoot is hibernated")
		Expect(h.SetHibernated(ctx, true)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectMonitoringObjects(ctx, h, "shoot-flux-source-controller", "shoot-flux-kluctl-controller")
		Expect(h.SetHibernated(ctx, false)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())

		By("removing them when the shoot owner turns the monitoring off, and when the extension is disabled")
		Expect(h.UpdateProviderConfig(ctx, []byte(`{"monitoring":{"shoot":{"enabled":false}}}`))).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectNoMonitoringObjects(ctx, h)
		Expect(h.UpdateProviderConfig(ctx, []byte(`{"monitoring":{"shoot":{"enabled":true}}}`))).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectMonitoringObjects(ctx, h, "shoot-flux-source-controller", "shoot-flux-kluctl-controller")
		Expect(h.Delete(ctx, reconcileTimeout)).To(Succeed())
		expectNoMonitoringObjects(ctx, h)
	})

	It("lets the shoot's Prometheus scrape a flux shoot's controllers and see the bootstrap's source fail", func(ctx SpecContext) {
		project := "monflux"
		newProject(ctx, project)
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", RunControllers: true, ProviderConfig: mustJSON(map[string]any{
			"source": map[string]any{
				"url":        git.URL(repoName),
				"ref":        map[string]any{"branch": "no-such-branch"},
				"path":       "configmap",
				"knownHosts": git.KnownHostsLine(),
			},
			"bootstrap": map[string]any{"mode": "flux"},
			"flux":      map[string]any{"components": []string{"source-controller", "kustomize-controller"}},
		})})
		Expect(git.AddAuthorizedKey(authorizedKey(ctx, h))).To(Succeed())
		token, err := h.PrometheusShootAccess(ctx)
		Expect(err).NotTo(HaveOccurred())
		// kluctl.enabled defaults to true in mode flux too.
		expectMonitoringObjects(ctx, h, "shoot-flux-source-controller", "shoot-flux-kustomize-controller", "shoot-flux-kluctl-controller")

		rule := &monitoringv1.PrometheusRule{}
		Expect(get(ctx, sb.Seed.Client, rule, h.SeedNamespace, "shoot-flux")).To(Succeed())
		var alerts []string
		for _, r := range rule.Spec.Groups[0].Rules {
			alerts = append(alerts, r.Alert)
		}
		Expect(alerts).To(ContainElement(monitoring.AlertSourceFailing))

		By("seeing the GitRepository's failed fetches in the series the alert reads")
		Eventually(func(g Gomega) {
			series := scrapeAsShootPrometheus(g, ctx, h, token)
			g.Expect(jobs(series["up"])).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kustomize-controller", "shoot-flux-kluctl-controller"))
			var errors float64
			for _, ls := range series["controller_runtime_reconcile_errors_total"] {
				if ls["controller"] == "gitrepository" && ls["job"] == "shoot-flux-source-controller" {
					value, err := strconv.ParseFloat(string(ls["__value__"]), 64)
					g.Expect(err).NotTo(HaveOccurred())
					errors += value
				}
			}
			g.Expect(errors).To(BeNumerically(">", 0), "failed fetches of the branch %s", gitserver.Branch)
		}).WithTimeout(gitopsTimeout).Should(Succeed(), func() string { return h.ControllerLogs() })
	})
})

// expectMonitoringObjects checks the shoot's monitoring objects in its seed namespace and their
// labels, which the shoot's Prometheus and Plutono select by.
func expectMonitoringObjects(ctx context.Context, h *sandbox.ShootHandle, scrapeConfigs ...string) {
	GinkgoHelper()
	list := &monitoringv1alpha1.ScrapeConfigList{}
	Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace), client.MatchingLabels{"prometheus": "shoot"})).To(Succeed())
	var names []string
	for _, sc := range list.Items {
		names = append(names, sc.Name)
	}
	Expect(names).To(ConsistOf(scrapeConfigs))
	rule := &monitoringv1.PrometheusRule{}
	Expect(get(ctx, sb.Seed.Client, rule, h.SeedNamespace, "shoot-flux")).To(Succeed())
	Expect(rule.Labels).To(HaveKeyWithValue("prometheus", "shoot"))
	cm := &corev1.ConfigMap{}
	Expect(get(ctx, sb.Seed.Client, cm, h.SeedNamespace, monitoring.DashboardConfigMapName)).To(Succeed())
	Expect(cm.Labels).To(HaveKeyWithValue(monitoring.LabelShootDashboard, "true"))
}

func expectNoMonitoringObjects(ctx context.Context, h *sandbox.ShootHandle) {
	GinkgoHelper()
	list := &monitoringv1alpha1.ScrapeConfigList{}
	Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace))).To(Succeed())
	Expect(list.Items).To(BeEmpty())
	Expect(apierrors.IsNotFound(get(ctx, sb.Seed.Client, &monitoringv1.PrometheusRule{}, h.SeedNamespace, "shoot-flux"))).To(BeTrue())
	Expect(apierrors.IsNotFound(get(ctx, sb.Seed.Client, &corev1.ConfigMap{}, h.SeedNamespace, monitoring.DashboardConfigMapName))).To(BeTrue())
}

// scrapeAsShootPrometheus follows every ScrapeConfig of the shoot labelled prometheus=shoot as the
// shoot's Prometheus does and returns the kept series by name, each with its labels after the
// target's and the value as the label __value__. up is 1 for every target scraped.
func scrapeAsShootPrometheus(g Gomega, ctx context.Context, h *sandbox.ShootHandle, token []byte) map[string][]model.LabelSet {
	list := &monitoringv1alpha1.ScrapeConfigList{}
	g.Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace), client.MatchingLabels{"prometheus": "shoot"})).To(Succeed())
	g.Expect(list.Items).NotTo(BeEmpty())
	shoot, err := client.New(h.TokenConfig(token), client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	series := map[string][]model.LabelSet{}
	for _, sc := range list.Items {
		g.Expect(sc.Spec.Authorization.Credentials.Name).To(Equal(sandbox.PrometheusShootAccessSecret))
		g.Expect(sc.Spec.KubernetesSDConfigs).To(HaveLen(1))
		sd := sc.Spec.KubernetesSDConfigs[0]
		g.Expect(sd.Role).To(Equal(monitoringv1alpha1.KubernetesRolePod))
		g.Expect(sd.Authorization.Credentials.Name).To(Equal(sandbox.PrometheusShootAccessSecret))
		// The token of the Secret the ScrapeConfig names is the one the spec uses.
		secret := &corev1.Secret{}
		g.Expect(get(ctx, sb.Seed.Client, secret, h.SeedNamespace, sc.Spec.Authorization.Credentials.Name)).To(Succeed())
		g.Expect(secret.Data[sc.Spec.Authorization.Credentials.Key]).To(Equal(token))

		for _, namespace := range sd.Namespaces.Names {
			pods := &corev1.PodList{}
			g.Expect(shoot.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
			for _, target := range podTargets(pods.Items) {
				labels, keep := relabel(target, sc.Spec.RelabelConfigs)
				if !keep {
					continue
				}
				body, err := h.ScrapePod(ctx, token, labels["__metrics_path__"])
				g.Expect(err).NotTo(HaveOccurred())
				parser := expfmt.NewTextParser(model.UTF8Validation)
				families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
				g.Expect(err).NotTo(HaveOccurred())
				own := model.LabelSet{}
				for k, v := range labels {
					if !strings.HasPrefix(k, "__") {
						own[model.LabelName(k)] = model.LabelValue(v)
					}
				}
				series["up"] = append(series["up"], own.Clone())
				for name, family := range families {
					for _, m := range family.GetMetric() {
						sample := map[string]string{"__name__": name}
						for _, l := range m.GetLabel() {
							sample[l.GetName()] = l.GetValue()
						}
						if _, keep := relabel(sample, sc.Spec.MetricRelabelConfigs); !keep {
							continue
						}
						ls := own.Clone()
						for k, v := range sample {
							if k != "__name__" {
								ls[model.LabelName(k)] = model.LabelValue(v)
							}
						}
						value := m.GetGauge().GetValue() + m.GetCounter().GetValue()
						ls["__value__"] = model.LabelValue(strconv.FormatFloat(value, 'g', -1, 64))
						series[name] = append(series[name], ls)
					}
				}
			}
		}
	}
	return series
}

// podTargets returns the targets of Prometheus' kubernetes service discovery of role pod: one per
// container port, with its meta labels.
func podTargets(pods []corev1.Pod) []map[string]string {
	var targets []map[string]string
	for _, pod := range pods {
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				t := map[string]string{
					"__meta_kubernetes_namespace":                 pod.Namespace,
					"__meta_kubernetes_pod_name":                  pod.Name,
					"__meta_kubernetes_pod_node_name":             pod.Spec.NodeName,
					"__meta_kubernetes_pod_container_name":        c.Name,
					"__meta_kubernetes_pod_container_port_name":   p.Name,
					"__meta_kubernetes_pod_container_port_number": strconv.Itoa(int(p.ContainerPort)),
					"__address__":      fmt.Sprintf("%s:%d", pod.Status.PodIP, p.ContainerPort),
					"__metrics_path__": "/metrics",
				}
				for k, v := range pod.Labels {
					t["__meta_kubernetes_pod_label_"+sanitizeLabelName(k)] = v
				}
				targets = append(targets, t)
			}
		}
	}
	return targets
}

var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitizeLabelName(s string) string { return invalidLabelChars.ReplaceAllString(s, "_") }

// relabel applies Prometheus' relabelling to a copy of labels (promscrape.Relabel).
func relabel(labels map[string]string, configs []monitoringv1.RelabelConfig) (map[string]string, bool) {
	GinkgoHelper()
	out, keep, err := promscrape.Relabel(labels, configs)
	Expect(err).NotTo(HaveOccurred())
	return out, keep
}

// jobs returns the job labels of the series, once each.
func jobs(sets []model.LabelSet) []string {
	var result []string
	for _, ls := range sets {
		job := string(ls["job"])
		if !slices.Contains(result, job) {
			result = append(result, job)
		}
	}
	return result
}

// readyBootstrap tells whether the series hold what ShootFluxDeploymentFailing reads of a ready
// KluctlDeployment: the bootstrap's Ready condition True, from the kluctl controller's job.
func readyBootstrap(series map[string][]model.LabelSet) bool {
	for _, ls := range series["gotk_reconcile_condition"] {
		if ls["job"] == model.LabelValue(monitoring.JobName("kluctl-controller")) && ls["kind"] == "KluctlDeployment" &&
			ls["name"] == constants.BootstrapName && ls["namespace"] == kluctlNamespace && ls["type"] == "Ready" &&
			ls["status"] == "True" && ls["__value__"] == "1" {
			return true
		}
	}
	return false
}
