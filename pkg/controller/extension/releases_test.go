// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("the Kubernetes ranges of the Flux releases", func() {
		// The embedded Flux releases are v2.7.5 (Kubernetes 1.32 to 1.34) and v2.9.5 (1.34.1 to 1.36).
		It("installs the newest release in range on the first installation, with a warning", func() {
			theShoot.Spec.Kubernetes.Version = "1.33.4"
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.KubernetesVersion).To(Equal("1.33.4"))
			Expect(status.Warnings).To(ContainElement("installed Flux v2.7.5 instead: the selected Flux v2.9.5, which supports Kubernetes 1.34.1 to 1.36, " +
				"not the shoot's 1.33.4; select flux.version v2.7, which supports it"))
		})

		It("fails the first installation when no release supports the shoot's Kubernetes version, naming the ranges", func() {
			theShoot.Spec.Kubernetes.Version = "1.31.2"
			build(nil)
			err := reconcile()
			Expect(err).To(MatchError("flux.version: no embedded Flux release supports the shoot's Kubernetes 1.31.2 (v2.7.5: Kubernetes 1.32 to 1.34, " +
				"v2.9.5: Kubernetes 1.34.1 to 1.36); select a Kubernetes version in one of the ranges"))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(rec.reset()).To(BeEmpty(), "nothing is written")
		})

		It("keeps the installed release when the selection leaves the shoot's range, with a warning naming the range and the fix", func() {
			theShoot.Spec.Kubernetes.Version = "1.34.2"
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.7"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.7.5"))

			By("a Kubernetes upgrade out of v2.7's range")
			theShoot.Spec.Kubernetes.Version = "1.35.1"
			cluster := clusterObject(theShoot)
			existing := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(cluster), existing)).To(Succeed())
			existing.Spec.Shoot = cluster.Spec.Shoot
			Expect(seed.Update(ctx, existing)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.KubernetesVersion).To(Equal("1.35.1"))
			Expect(status.Warnings).To(ContainElement("keeping Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, not the shoot's 1.35.1; " +
				"select flux.version v2.9, which supports it"))

			By("a selection of a release that supports it")
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Warnings).To(BeEmpty())

			By("a selection out of range again")
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.7"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Warnings).To(ContainElement("keeping Flux v2.9.5: the selected Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, " +
				"not the shoot's 1.35.1; select flux.version v2.9, which supports it"))
		})

		It("shows the native equivalent of stackit's providerConfig in the providerStatus", func() {
			theShoot.Spec.Kubernetes.Version = "1.35.1"
			ex.Spec.ProviderConfig = providerConfig(`{"apiVersion":"flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"v2.9.5"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Management).To(Equal("handover"))
			Expect(status.NativeProviderConfig).To(ContainSubstring("apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1"))
			Expect(status.NativeProviderConfig).To(ContainSubstring("management: handover"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig is stackit's FluxConfig")))
		})
	})

	Describe("releases nobody of the project asked for", func() {
		var now *testclock.FakePassiveClock

		// restart builds the actuator anew with cfg, as an extension restarted with another
		// configuration, on the same seed and garden.
		restart := func() {
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)
			act.clock = now
		}
		controllersWrites := func() []string {
			var out []string
			for _, w := range rec.reset() {
				if strings.Contains(w, constants.ManagedResourceControllers) {
					out = append(out, w)
				}
			}
			return out
		}

		BeforeEach(func() {
			theShoot.Spec.Maintenance = &gardencorev1beta1.Maintenance{TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: "220000+0000", End: "230000+0000"}}
			now = testclock.NewFakePassiveClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
			cfg.DefaultFluxVersion = "v2.7"
			build(nil)
			act.clock = now
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.7.5"))
			rec.reset()
		})

		It("keep a shoot outside its maintenance window on its release when the operator's default moves, and move it in the window", func() {
			cfg.DefaultFluxVersion = "v2.9"
			restart()
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.Pending).NotTo(BeNil())
			Expect(status.Pending.NextMaintenance).NotTo(BeNil())
			Expect(status.Pending.NextMaintenance.Time).To(BeTemporally("==", time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)))
			status.Pending.NextMaintenance = nil
			Expect(status.Pending).To(Equal(&fluxv1alpha1.PendingRelease{
				FluxVersion: "v2.9.5",
				Reason:      "Flux v2.9.5 is what the operator's default version selects now; it is installed in the shoot's maintenance time window",
			}))
			Expect(controllersWrites()).To(BeEmpty(), "the controllers stay as they are")

			By("reconciling in the window")
			now.SetTime(time.Date(2026, 11, 26, 22, 10, 0, 0, time.UTC))
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Pending).To(BeNil())
			Expect(controllersWrites()).NotTo(BeEmpty())
		})

		It("apply the project's own version change at once, outside the window", func() {
			cfg.DefaultFluxVersion = "v2.9"
			restart()
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Pending).To(BeNil())
			Expect(status.Requested).To(Equal(&fluxv1alpha1.RequestedVersions{Flux: "v2.9", Kluctl: ""}))
		})

		It("apply them at once with rollout.window immediate", func() {
			cfg.DefaultFluxVersion = "v2.9"
			cfg.Rollout.Window = config.RolloutWindowImmediate
			restart()
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.9.5"))
		})

		Context("with the installed release expired", func() {
			expired := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

			BeforeEach(func() {
				cfg.Rollout.Releases.Flux = []config.ReleaseLifecycle{{Version: "v2.7.5", Classification: config.ReleaseDeprecated, ExpirationDate: &metav1.Time{Time: expired}}}
				restart()
			})

			It("move the shoot to the next supported minor in its window, with the move in providerStatus and an event", func() {
				Expect(reconcile()).To(Succeed())
				status := providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.7.5"), "outside its window")
				Expect(status.Pending).NotTo(BeNil())
				Expect(status.Pending.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending.Reason).To(Equal("Flux v2.7.5 expired on 2026-11-20; it is replaced by v2.9.5; it is installed in the shoot's maintenance time window"))
				Expect(status.ForcedMoves).To(BeEmpty())
				Expect(controllersWrites()).To(BeEmpty(), "the controllers stay as they are")
				Expect(eventRecorder.Events).To(BeEmpty())

				By("reconciling in the window")
				inWindow := time.Date(2026, 11, 26, 22, 10, 0, 0, time.UTC)
				now.SetTime(inWindow)
				Expect(reconcile()).To(Succeed())
				status = providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1))
				move := status.ForcedMoves[0]
				Expect([]string{move.Component, move.From, move.To}).To(Equal([]string{"flux", "v2.7.5", "v2.9.5"}))
				Expect(move.ExpirationDate.Time).To(BeTemporally("==", expired))
				Expect(move.Time.Time).To(BeTemporally("==", inWindow))
				Expect(controllersWrites()).NotTo(BeEmpty())
				Expect(eventRecorder.Events).To(Receive(Equal("Normal ReleaseExpired Moved flux from v2.7.5, which expired on 2026-11-20, to v2.9.5")))

				By("reconciling again after the window, the configuration still selecting the expired minor")
				now.SetTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
				Expect(reconcile()).To(Succeed())
				status = providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1), "the move is kept")
				Expect(eventRecorder.Events).To(BeEmpty())
			})

			It("install the replacement at once on a shoot that has no release yet", func() {
				ex.Status.ProviderStatus = nil
				Expect(seed.Status().Update(ctx, ex)).To(Succeed())
				Expect(reconcile()).To(Succeed())
				status := providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1))
			})
		})
	})
})
