// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package adoption_test

import (
	"context"
	"errors"
	"testing"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
)

func TestAdoption(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Adoption Suite")
}

var _ = Describe("Adoption", func() {
	shoot := func(objs ...client.Object) client.Client {
		scheme := runtime.NewScheme()
		Expect(appsv1.AddToScheme(scheme)).To(Succeed())
		return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	}
	deployment := func(labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", Labels: labels}}
	}

	Describe("FindSelfManagedFlux", func() {
		It("names the Kustomization that applies source-controller and the release it is labelled with", func() {
			found, err := adoption.FindSelfManagedFlux(context.Background(), shoot(deployment(map[string]string{
				"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "gitops", "app.kubernetes.io/version": "v2.4.0",
			})), "flux-system")
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(Equal(&adoption.SelfManagedFlux{Kustomization: "gitops/flux-system", Version: "v2.4.0"}))
			Expect(found.Describe("flux-system")).To(Equal("Kustomization gitops/flux-system of the shoot applies the Flux controllers (Deployment flux-system/source-controller) of Flux v2.4.0"))
		})

		It("finds none for controllers no Kustomization applies, or none at all", func() {
			Expect(adoption.FindSelfManagedFlux(context.Background(), shoot(deployment(map[string]string{"app.kubernetes.io/version": "v2.4.0"})), "flux-system")).To(BeNil())
			Expect(adoption.FindSelfManagedFlux(context.Background(), shoot(), "flux-system")).To(BeNil())
		})

		It("defaults the Kustomization's namespace to Flux's and reports a read failure", func() {
			found, err := adoption.FindSelfManagedFlux(context.Background(), shoot(deployment(map[string]string{"kustomize.toolkit.fluxcd.io/name": "infra"})), "flux-system")
			Expect(err).NotTo(HaveOccurred())
			Expect(found.Describe("flux-system")).To(Equal("Kustomization flux-system/infra of the shoot applies the Flux controllers (Deployment flux-system/source-controller)"))

			failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errors.New("connection refused")
			}}).Build()
			_, err = adoption.FindSelfManagedFlux(context.Background(), failing, "flux-system")
			Expect(err).To(MatchError("failed reading Deployment flux-system/source-controller of the shoot: connection refused"))
		})
	})

	It("drops only stackit's condition FluxBootstrapped", func() {
		conditions := []gardencorev1beta1.Condition{{Type: "ExtensionHealthy"}, {Type: adoption.ConditionFluxBootstrapped}, {Type: "ControllersReady"}}
		out, removed := adoption.WithoutForeignConditions(conditions)
		Expect(removed).To(BeTrue())
		Expect(out).To(Equal([]gardencorev1beta1.Condition{{Type: "ExtensionHealthy"}, {Type: "ControllersReady"}}))
		Expect(conditions).To(HaveLen(3), "the input stays")
		_, removed = adoption.WithoutForeignConditions(out)
		Expect(removed).To(BeFalse())
	})
})
