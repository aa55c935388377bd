// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"strings"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("a shoot switched from stackit's extension", func() {
		// stackitConfig is a providerConfig of stackit's extension as its example/shoot.yaml writes
		// it, with the Flux release pinned to version.
		stackitConfig := func(version string) string {
			return `{"apiVersion":"flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"` + version + `"},` +
				`"source":{"template":{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"GitRepository","spec":{"url":"https://git.example.com/org/repo.git","ref":{"branch":"main"}}}},` +
				`"kustomization":{"template":{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","spec":{"path":"./clusters/production"}}}}`
		}
		controllersMR := func() *resourcesv1alpha1.ManagedResource {
			mr := &resourcesv1alpha1.ManagedResource{}
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			return mr
		}

		It("installs the embedded release of the shoot's Kubernetes range once for a pinned release it does not embed, with a warning naming flux.version", func() {
			theShoot.Spec.Kubernetes.Version = "1.33.4"
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.6.1"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.7.5"), "applied once, then left to the repository")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.version: v2.6.1 is not a Flux release this extension embeds (v2.7, v2.9)")))
			Expect(status.Warnings).To(ContainElement(HavePrefix("installed Flux v2.7.5 instead")))
			Expect(status.NativeProviderConfig).NotTo(ContainSubstring("v2.6.1"))
		})

		It("leaves a newer Flux the shoot runs as it is, without applying or migrating anything, also on the next reconciles", func() {
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.10.0"}}}}
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.10.0"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			Expect(mr.Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.10.0")))
			Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.10.0"))
			Expect(status.HandedOverVersion).To(Equal("v2.10.0"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.version: v2.10.0 is newer than every Flux release this extension embeds")))
			Expect(status.Warnings).To(ContainElement("the shoot runs Flux v2.10.0 (Deployment flux-system/source-controller), a newer minor than the selected v2.9.5: " +
				"the extension installs no older Flux over it and leaves the controllers as they are (flux.management handover); select flux.version v2.10 or later once this extension embeds it"))

			By("reconciling again")
			rec.reset()
			Expect(reconcile()).To(Succeed())
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.10.0"))
		})

		It("leaves the bootstrap objects and the controllers in the shoot when the extension is disabled, as stackit's extension did", func() {
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.9"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			var writes []string
			for _, w := range rec.reset() {
				if strings.Contains(w, "*v1alpha1.ManagedResource") && !strings.Contains(w, "monitoring") {
					writes = append(writes, w)
				}
			}
			Expect(writes).To(Equal([]string{
				"patch *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"patch *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
			}), "keepObjects before each deletion")
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
			}
		})

		It("accepts the image automation controllers in componentsExtra, leaving what stackit installed of them as it is", func() {
			ex.Spec.ProviderConfig = providerConfig(strings.Replace(stackitConfig("v2.9"), `"version":"v2.9"`,
				`"version":"v2.9","componentsExtra":["image-reflector-controller","image-automation-controller"]`, 1))
			build(nil)
			Expect(reconcile()).To(Succeed())
			for _, doc := range managedResourceObjects(seed, constants.ManagedResourceControllers) {
				if strings.Contains(doc, "kind: Deployment\n") {
					Expect(doc).NotTo(ContainSubstring("name: image-"), "no image automation controller is delivered")
				}
			}
			Expect(providerStatus(ex).Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.componentsExtra: this extension does not deliver " +
				"image-reflector-controller, image-automation-controller: what stackit's extension installed of them stays in the shoot as it is")))
		})

		It("leaves the Flux the shoot runs as it is when no embedded release supports its Kubernetes version, and fails without one", func() {
			theShoot.Spec.Kubernetes.Version = "1.31.2"
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.4.0"))
			build(nil)
			err := reconcile()
			Expect(err).To(MatchError(HavePrefix("flux.version: no embedded Flux release supports the shoot's Kubernetes 1.31.2")), "no Flux to leave in place")
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))

			By("the shoot running the Flux stackit's extension installed")
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.4.0"}}}}
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.4.0")))
			Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.4.0"))
			Expect(status.Warnings).To(ContainElement("no embedded Flux release supports the shoot's Kubernetes 1.31.2 (v2.7.5: Kubernetes 1.32 to 1.34, v2.9.5: Kubernetes 1.34.1 to 1.36); " +
				"select a Kubernetes version in one of the ranges; the extension installs none and leaves the Flux the shoot runs (Deployment flux-system/source-controller, Flux v2.4.0) " +
				"as it is (flux.management handover)"))

			By("reconciling again")
			rec.reset()
			Expect(reconcile()).To(Succeed())
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			Expect(providerStatus(ex).Warnings).To(ContainElement(HavePrefix("no embedded Flux release supports the shoot's Kubernetes 1.31.2")))
		})

		It("installs its release over an older Flux the shoot runs", func() {
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.4.0"}}}}
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.4.0"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.9.5"), "applied once, then handed over")
			Expect(providerStatus(ex).Warnings).NotTo(ContainElement(ContainSubstring("the shoot runs Flux")))
			Expect(fakeShoot.clients).NotTo(BeZero(), "the stored versions are checked before the CRDs change")
		})
	})
})
