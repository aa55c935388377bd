// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
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
