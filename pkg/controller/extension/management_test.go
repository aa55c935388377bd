// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("flux.management", func() {
		controllersMR := func() *resourcesv1alpha1.ManagedResource {
			mr := &resourcesv1alpha1.ManagedResource{}
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			return mr
		}
		setProviderConfig := func(s string) {
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			ex.Spec.ProviderConfig = providerConfig(s)
			ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
		}
		newest := manifests.NewestFluxVersion

		It("owns the controllers by default", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("continuous"))
			Expect(status.HandedOverAt).To(BeNil())
		})

		Describe("a repository that manages Flux itself", func() {
			// As `flux bootstrap` leaves it: the repository's Kustomization applies Flux's own manifests.
			selfManaged := func() *appsv1.Deployment {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", Labels: map[string]string{
					"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system", "app.kubernetes.io/version": "v2.4.0",
				}}}
			}

			It("leaves the controllers to it in management handover, without applying or migrating anything", func() {
				adoptionShoot.objects = []client.Object{selfManaged()}
				build(nil)
				setProviderConfig(`{"flux":{"management":"handover"}}`)
				Expect(reconcile()).To(Succeed())
				mr := controllersMR()
				Expect(mr.Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.4.0")))
				Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
				status := providerStatus(ex)
				Expect(status.HandedOverVersion).To(Equal("v2.4.0"))
				Expect(status.Warnings).To(ContainElement("Kustomization flux-system/flux-system of the shoot applies the Flux controllers (Deployment flux-system/source-controller) of Flux v2.4.0: " +
					"the extension leaves the controllers to it (flux.management handover); to have the extension manage them, remove Flux from the repository and set flux.management to continuous"))

				By("reconciling again")
				clients := adoptionShoot.clients
				rec.reset()
				Expect(reconcile()).To(Succeed())
				Expect(adoptionShoot.clients).To(Equal(clients), "checked once, when the controllers would first be applied")
				for _, w := range rec.reset() {
					Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
				}
			})

			It("refuses to fight it in management continuous, writing no controllers", func() {
				adoptionShoot.objects = []client.Object{selfManaged()}
				build(nil)
				err := reconcile()
				Expect(err).To(MatchError(ContainSubstring("flux.management is continuous, but Kustomization flux-system/flux-system of the shoot applies the Flux controllers")))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
			})

			It("checks again before taking handed-over controllers back", func() {
				build(nil)
				setProviderConfig(`{"flux":{"management":"handover"}}`)
				Expect(reconcile()).To(Succeed())
				Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))

				By("the repository taking Flux over, then the owner choosing continuous")
				adoptionShoot.objects = []client.Object{selfManaged()}
				setProviderConfig(`{"flux":{"management":"continuous"}}`)
				Expect(reconcile()).To(MatchError(ContainSubstring("remove Flux from the repository, or set flux.management to handover")))
				Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), "still handed over")
			})

			It("deploys the controllers when the Kustomization does not apply them", func() {
				d := selfManaged()
				d.Labels = map[string]string{"app.kubernetes.io/version": "v2.4.0"}
				adoptionShoot.objects = []client.Object{d}
				build(nil)
				Expect(reconcile()).To(Succeed())
				Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
				Expect(adoptionShoot.clients).To(Equal(1))
			})
		})

		It("removes the condition FluxBootstrapped of stackit's extension and keeps the others", func() {
			build(nil)
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			ex.Status.Conditions = []gardencorev1beta1.Condition{
				{Type: "FluxBootstrapped", Status: gardencorev1beta1.ConditionTrue, Reason: "BootstrapSuccessful"},
				{Type: "ExtensionHealthy", Status: gardencorev1beta1.ConditionTrue, Reason: "HealthCheckSuccessful"},
			}
			Expect(seed.Status().Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			Expect(ex.Status.Conditions).To(ConsistOf(HaveField("Type", gardencorev1beta1.ConditionType("ExtensionHealthy"))))
		})

		It("hands the controllers over once applied and changes them no more", func() {
			oldest := manifests.FluxVersions()[0]
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover","version":"` + oldest + `"}}`)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			Expect(mr.Annotations).To(And(
				HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"),
				HaveKeyWithValue(constants.AnnotationHandedOverVersion, oldest),
				HaveKey(constants.AnnotationHandedOverAt),
			))
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("handover"))
			Expect(status.HandedOverVersion).To(Equal(oldest))
			Expect(status.HandedOverAt).NotTo(BeNil())
			Expect(status.HandedOverAt.Time).To(BeTemporally("~", time.Now(), 5*time.Second))
			Expect(status.Warnings).To(BeEmpty())
			oldImages := status.Images

			By("selecting another release")
			setProviderConfig(`{"flux":{"management":"handover","version":"` + newest() + `"}}`)
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Spec).To(Equal(mr.Spec), "the handed-over ManagedResource keeps its content")
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal(oldest), "the shoot still runs the handed-over release")
			Expect(status.Images).To(Equal(oldImages))
			Expect(status.HandedOverVersion).To(Equal(oldest))
			Expect(status.Warnings).To(ConsistOf(ContainSubstring("flux.version selects " + newest() + ", but the controllers were handed over with " + oldest)))
		})

		It("hands a hibernated shoot's controllers over only after they were applied", func() {
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			rec.noApply = true
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
			Expect(providerStatus(ex).HandedOverAt).To(BeNil())
		})

		It("takes handed-over controllers over again in mode continuous and waits for the resource manager to apply them", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())

			By("waiting in vain while the resource manager does not apply")
			cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 50 * time.Millisecond}
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)
			rec.noApply = true
			setProviderConfig(`{"flux":{"management":"continuous"}}`)
			Expect(reconcile()).To(MatchError(ContainSubstring("has not applied the ManagedResource since it was ignored")))
			Expect(controllersMR().Annotations).NotTo(Or(HaveKey(resourcesv1alpha1.Ignore), HaveKey(constants.AnnotationHandedOverAt), HaveKey(constants.AnnotationHandedOverVersion)))

			By("succeeding once it applies")
			rec.noApply = false
			Expect(seed.Update(ctx, controllersMR())).To(Succeed())
			Expect(rec.apply(ctx, seed.(client.WithWatch), controllersMR())).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("continuous"))
			Expect(status.HandedOverAt).To(BeNil())
			Expect(status.HandedOverVersion).To(BeEmpty())
		})

		It("leaves a ManagedResource alone that an operator paused", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			metav1.SetMetaDataAnnotation(&mr.ObjectMeta, resourcesv1alpha1.Ignore, "true")
			Expect(seed.Update(ctx, mr)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))
		})

		It("leaves handed-over controllers in the shoot when the extension is disabled", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())
			cfg.Timeouts.Deletion = metav1.Duration{Duration: 50 * time.Millisecond}
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(MatchError(ContainSubstring(constants.ManagedResourceControllers + " was not deleted")))
			mr = controllersMR()
			Expect(mr.DeletionTimestamp).NotTo(BeNil())
			Expect(mr.Spec.KeepObjects).To(Equal(ptr.To(true)))
		})

		It("keeps the handover across a control plane migration without applying the controllers again", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			handedOver := providerStatus(ex).HandedOverAt
			Expect(ex.Status.State).NotTo(BeNil(), "gardener moves the state with the shoot")

			Expect(act.Migrate(ctx, logr.Discard(), ex)).To(Succeed())
			// On the new seed the Extension has the state, not the providerStatus.
			ex.Status.ProviderStatus = nil
			Expect(seed.Status().Update(ctx, ex)).To(Succeed())
			rec.reset()
			Expect(act.Restore(ctx, logr.Discard(), ex)).To(Succeed())
			writes := rec.reset()
			Expect(writes).To(ContainElement("create *v1alpha1.ManagedResource "+constants.ManagedResourceControllers), "created ignored")
			Expect(writes).NotTo(ContainElement("patch *v1alpha1.ManagedResource "+constants.ManagedResourceControllers), "ignored from its creation on, not after the resource manager applied it")
			mr := controllersMR()
			Expect(mr.Annotations).To(And(
				HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"),
				HaveKeyWithValue(constants.AnnotationHandedOverAt, handedOver.UTC().Format(time.RFC3339)),
			))
			Expect(providerStatus(ex).HandedOverAt.Equal(handedOver)).To(BeTrue())

			By("forgetting the state when the extension takes the controllers back")
			setProviderConfig(`{"flux":{"management":"continuous"}}`)
			Expect(reconcile()).To(Succeed())
			Expect(ex.Status.State).To(BeNil())
		})

		It("rejects an unknown mode naming the field", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"manual"}}`)
			Expect(reconcile()).To(MatchError(ContainSubstring(`flux.management: Unsupported value: "manual": supported values: "continuous", "handover"`)))
		})
	})
})
