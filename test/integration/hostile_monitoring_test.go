// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/promscrape"
)

// countingClient counts the write requests of c. A write that changes nothing leaves the object's
// resourceVersion as it was, so only the requests tell a write at rest.
func countingClient(c client.WithWatch, writes *atomic.Int32) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes.Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			writes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	})
}

var _ = Describe("The shoot's monitoring at rest", func() {
	It("is not written again when nothing changed, with the seed's prometheus-operator CRDs filling in their defaults", func(ctx SpecContext) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shoot--monrest--one"}}
		Expect(sb.Seed.Client.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error { return client.IgnoreNotFound(sb.Seed.Client.Delete(ctx, ns)) })
		var writes atomic.Int32
		c := countingClient(sb.Seed.Client, &writes)
		values := monitoring.Values{
			Controllers: []monitoring.Controller{
				{Component: fluxapi.ComponentSourceController, Namespace: "flux-system"},
				{Component: fluxapi.ComponentKustomizeController, Namespace: "flux-system"},
				{Component: fluxapi.ComponentKluctlController, Namespace: "kluctl-system"},
			},
			Bootstrap: &monitoring.Bootstrap{Mode: fluxapi.BootstrapModeFlux, Namespace: "flux-system"},
		}

		Expect(monitoring.New(c, c, ns.Name, values).Deploy(ctx)).To(Succeed())
		Expect(writes.Load()).To(BeEquivalentTo(5), "three ScrapeConfigs, the PrometheusRule and the dashboard created")
		for range 2 {
			writes.Store(0)
			Expect(monitoring.New(c, c, ns.Name, values).Deploy(ctx)).To(Succeed())
			Expect(writes.Load()).To(BeZero())
		}

		// The API server stores the bounds.
		list := &monitoringv1alpha1.ScrapeConfigList{}
		Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(ns.Name))).To(Succeed())
		Expect(list.Items).To(HaveLen(3))
		for _, sc := range list.Items {
			Expect(sc.Spec.SampleLimit).To(HaveValue(BeEquivalentTo(monitoring.SampleLimit)), sc.Name)
			Expect(sc.Spec.TargetLimit).To(HaveValue(BeEquivalentTo(2)), sc.Name)
			Expect(sc.Spec.MetricRelabelConfigs).To(ContainElement(HaveField("Action", "labelkeep")), sc.Name)
		}
	})
})

var _ = Describe("A shoot owner's crafted series", func() {
	It("stay within the bound of the shoot's Prometheus with the ScrapeConfigs the extension wrote", Label(labelDeployed), func(ctx SpecContext) {
		h, _, logs := kluctlShoot(ctx, "monhostile", kluctlShootSpec{kluctl: map[string]any{"target": gitserver.TargetBlue}})
		token, err := h.PrometheusShootAccess(ctx)
		Expect(err).NotTo(HaveOccurred())
		list := &monitoringv1alpha1.ScrapeConfigList{}
		Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace), client.MatchingLabels{"prometheus": "shoot"})).To(Succeed())
		Expect(list.Items).To(HaveLen(2), "source-controller and kluctl-controller")
		shoot, err := client.New(h.TokenConfig(token), client.Options{})
		Expect(err).NotTo(HaveOccurred())

		for _, sc := range list.Items {
			component := strings.TrimPrefix(sc.Name, "shoot-flux-")
			endpoint, err := manifests.ControllerMetricsEndpoint(component)
			Expect(err).NotTo(HaveOccurred())
			namespace := sc.Spec.KubernetesSDConfigs[0].Namespaces.Names[0]
			bound := endpoint.MaxPods * monitoring.SampleLimit

			By(component + ": scraping the real controller through the shoot's API server")
			var real []promscrape.Target
			Eventually(func(g Gomega) {
				real = nil
				pods := &corev1.PodList{}
				g.Expect(shoot.List(ctx, pods, client.InNamespace(namespace))).To(Succeed())
				for _, target := range podTargets(pods.Items) {
					labels, keep, err := promscrape.Relabel(target, sc.Spec.RelabelConfigs)
					g.Expect(err).NotTo(HaveOccurred())
					if !keep {
						continue
					}
					body, err := h.ScrapePod(ctx, token, labels["__metrics_path__"])
					g.Expect(err).NotTo(HaveOccurred())
					real = append(real, promscrape.Target{Labels: target, Exposition: body})
				}
				g.Expect(real).To(HaveLen(1))
			}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)

			By(component + ": a pod named like the controller serving 10,000 crafted series stores none of them")
			flood := promscrape.PodTarget(namespace, component+"-tenant", endpoint.Container, endpoint.Port,
				promscrape.Crafted(10000, monitoring.KeptMetrics, constants.BootstrapName, fluxv1alpha1.DefaultKluctlNamespace))
			result, err := promscrape.Scrape(sc.Spec, append(real, flood))
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Failures).To(ConsistOf(ContainSubstring(component + "-tenant")))
			Expect(result.Up).To(ContainElement(1), "the real controller is still scraped")
			Expect(len(result.Series)).To(BeNumerically("<=", bound))

			By(component + ": under the sample limit, tenant-chosen controllers, extra labels and long values store nothing new")
			small := promscrape.PodTarget(namespace, component+"-tenant", endpoint.Container, endpoint.Port,
				promscrape.Crafted(80, monitoring.KeptMetrics, constants.BootstrapName, fluxv1alpha1.DefaultKluctlNamespace))
			result, err = promscrape.Scrape(sc.Spec, append(real, small))
			Expect(err).NotTo(HaveOccurred())
			Expect(len(result.Series)).To(BeNumerically("<=", bound))
			for _, series := range result.Series {
				Expect(series["controller"]).To(Or(BeEmpty(), BeElementOf(endpoint.Reconcilers)), "%v", series)
				for label, value := range series {
					Expect(label).NotTo(HavePrefix("extra_"))
					Expect(len(value)).To(BeNumerically("<=", monitoring.LabelValueLengthLimit))
				}
			}

			By(component + ": more pods than the Deployment runs fail the job rather than add series")
			targets := append([]promscrape.Target{}, real...)
			for i := range 1000 {
				targets = append(targets, promscrape.PodTarget(namespace, fmt.Sprintf("%s-tenant-%d", component, i), endpoint.Container, endpoint.Port,
					promscrape.Crafted(40, monitoring.KeptMetrics, constants.BootstrapName, fluxv1alpha1.DefaultKluctlNamespace)))
			}
			result, err = promscrape.Scrape(sc.Spec, targets)
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Series).To(BeEmpty())
			Expect(result.Failures).To(ConsistOf(ContainSubstring("exceed the target limit")))
		}
	})
})
