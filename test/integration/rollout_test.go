// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	extensioncontroller "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// maintenanceWindow is a maintenance time window of gardener's format that begins at begin (UTC)
// and lasts d.
func maintenanceWindow(begin time.Time, d time.Duration) *gardencorev1beta1.MaintenanceTimeWindow {
	format := func(t time.Time) string { return t.UTC().Format("150405") + "+0000" }
	return &gardencorev1beta1.MaintenanceTimeWindow{Begin: format(begin), End: format(begin.Add(d))}
}

var _ = Describe("Rollout of releases nobody of the project asked for", func() {
	It("keeps a shoot outside its maintenance window on its release when the operator's default moves, moves the one in its window, and applies the owner's own change at once", func(ctx SpecContext) {
		releases := manifests.FluxVersions()
		older, newer := releases[0], releases[len(releases)-1]
		Expect(semver.MajorMinor(older)).NotTo(Equal(semver.MajorMinor(newer)), "the extension embeds two Flux minors")

		By("running the extension with the older minor as the operator's default")
		cfg := sb.ExtensionConfig()
		cfg.DefaultFluxVersion = semver.MajorMinor(older)
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})

		project := "rollout"
		projectNamespace := newProject(ctx, project)
		// The project leaves the version to the operator's default.
		data := legacyConfig(publicURL, "main", "public")
		delete(data, constants.ConfigMapKeyFluxVersion)
		setProjectConfig(ctx, projectNamespace, data)
		now := time.Now()
		inWindow, outside := windowShoots(ctx, project, now, true, older)
		controllersBefore, err := outside.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())

		By("restarting the extension with the newer minor as the default, and reconciling both shoots")
		cfg.DefaultFluxVersion = semver.MajorMinor(newer)
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})
		reconcileShoots(ctx, inWindow, outside)

		status := expectPending(ctx, outside, older, newer)
		Expect(status.Pending.Reason).To(ContainSubstring("the operator's default version selects now"))
		Expect(status.Pending.NextMaintenance).NotTo(BeNil())
		Expect(status.Pending.NextMaintenance.Time).To(BeTemporally("~", now.Add(6*time.Hour).Truncate(time.Second), time.Minute))
		controllersAfter, err := outside.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		Expect(controllersAfter.Generation).To(Equal(controllersBefore.Generation), "no write to the controllers ManagedResource")
		Expect(controllersAfter.Spec.SecretRefs).To(Equal(controllersBefore.Spec.SecretRefs))
		AddReportEntry("pending release", fmt.Sprintf("%s: installed %s, pending %s until %s: %s", outside.SeedNamespace, status.FluxVersion,
			status.Pending.FluxVersion, status.Pending.NextMaintenance.UTC().Format(time.RFC3339), status.Pending.Reason))

		status, err = inWindow.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(newer), "in its window")
		Expect(status.Pending).To(BeNil())

		By("changing flux.version in the shoot outside its window, as its owner")
		Expect(outside.UpdateProviderConfig(ctx, []byte(`{"flux":{"version":"`+semver.MajorMinor(newer)+`"}}`))).To(Succeed())
		_, err = outside.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err = outside.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(newer), "the owner's own change applies at once")
		Expect(status.Pending).To(BeNil())
	})

	It("moves shoots off a release the operator let expire in their maintenance window, with the move in providerStatus and an event", func(ctx SpecContext) {
		embedded := manifests.FluxVersions()
		older, newer := embedded[0], embedded[len(embedded)-1]
		Expect(semver.MajorMinor(older)).NotTo(Equal(semver.MajorMinor(newer)), "the extension embeds two Flux minors")

		project := "expiry"
		projectNamespace := newProject(ctx, project)
		// The project selects the older minor; only the controllers are installed.
		setProjectConfig(ctx, projectNamespace, fluxVersionConfig(semver.MajorMinor(older)))
		now := time.Now()
		// Each with its own control plane: the source-controller image in the shoot is checked.
		inWindow, outside := windowShoots(ctx, project, now, false, older)
		images := map[*sandbox.ShootHandle]string{}
		for _, h := range []*sandbox.ShootHandle{inWindow, outside} {
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			images[h] = sourceControllerImage(ctx, h)
			Expect(images[h]).To(Equal(status.Images["source-controller"]))
		}
		controllersBefore, err := outside.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())

		By("restarting the extension with " + older + " expired yesterday, and reconciling both shoots")
		cfg := sb.ExtensionConfig()
		expired := metav1.NewTime(now.Add(-24 * time.Hour).Truncate(time.Second))
		cfg.Rollout.Releases.Flux = []config.ReleaseLifecycle{{Version: older, Classification: config.ReleaseDeprecated, ExpirationDate: &expired}}
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})
		reconcileShoots(ctx, inWindow, outside)

		status := expectPending(ctx, outside, older, newer)
		pendingReason := status.Pending.Reason
		Expect(status.Pending.Reason).To(HavePrefix(fmt.Sprintf("Flux %s expired on %s; it is replaced by %s", older, expired.UTC().Format(time.DateOnly), newer)))
		Expect(status.ForcedMoves).To(BeEmpty())
		controllersAfter, err := outside.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		Expect(controllersAfter.Generation).To(Equal(controllersBefore.Generation), "no write to the controllers ManagedResource")
		Expect(sourceControllerImage(ctx, outside)).To(Equal(images[outside]))

		status, err = inWindow.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(newer), "in its window")
		Expect(status.Pending).To(BeNil())
		Expect(status.ForcedMoves).To(HaveLen(1))
		Expect(status.ForcedMoves[0]).To(And(HaveField("Component", "flux"), HaveField("From", older), HaveField("To", newer)))
		Expect(status.ForcedMoves[0].ExpirationDate.Time).To(BeTemporally("==", expired.Time))
		Eventually(func(g Gomega) {
			g.Expect(sourceControllerImage(ctx, inWindow)).To(And(Equal(status.Images["source-controller"]), Not(Equal(images[inWindow]))))
		}).WithTimeout(reconcileTimeout).Should(Succeed(), "the shoot runs the newer release's source-controller")
		Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(sb.Seed.Client.List(ctx, list, client.InNamespace(inWindow.SeedNamespace))).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Reason == extensioncontroller.ReasonReleaseExpired && e.Regarding.Kind == "Extension" {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ConsistOf(fmt.Sprintf("Moved flux from %s, which expired on %s, to %s", older, expired.UTC().Format(time.DateOnly), newer)))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the Extension has an event about the move")
		AddReportEntry("forced move", fmt.Sprintf("%s moved from %s to %s in its window; %s keeps %s: %s", inWindow.SeedNamespace, older, newer,
			outside.SeedNamespace, older, pendingReason))
	})
})

// sourceControllerImage returns the image of the source-controller Deployment in the shoot.
func sourceControllerImage(ctx context.Context, h *sandbox.ShootHandle) string {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, "source-controller")).To(Succeed())
	return d.Spec.Template.Spec.Containers[0].Image
}

// windowShoots creates two shoots of the project, one in its maintenance window at now and one
// outside it, and waits until both succeeded with the Flux release installed. gardener's effective
// window ends 15 minutes early: the shoot in its window has well over an hour left, the other's
// begins in six hours.
func windowShoots(ctx context.Context, project string, now time.Time, sharedControlPlane bool, installed string) (inWindow, outside *sandbox.ShootHandle) {
	GinkgoHelper()
	inWindow = createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "in", SharedControlPlane: sharedControlPlane, MaintenanceWindow: maintenanceWindow(now.Add(-30*time.Minute), 3*time.Hour)})
	outside = createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "out", SharedControlPlane: sharedControlPlane, MaintenanceWindow: maintenanceWindow(now.Add(6*time.Hour), time.Hour)})
	for _, h := range []*sandbox.ShootHandle{inWindow, outside} {
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(installed))
	}
	return inWindow, outside
}

// reconcileShoots has gardenlet reconcile the shoots and waits until each succeeded.
func reconcileShoots(ctx context.Context, shoots ...*sandbox.ShootHandle) {
	GinkgoHelper()
	for _, h := range shoots {
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
	}
}

// expectPending checks that the shoot still runs installed, with pending waiting for its window,
// and returns its providerStatus.
func expectPending(ctx context.Context, h *sandbox.ShootHandle, installed, pending string) *fluxv1alpha1.FluxStatus {
	GinkgoHelper()
	status, err := h.ProviderStatus(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(status.FluxVersion).To(Equal(installed), "outside its window")
	Expect(status.Pending).NotTo(BeNil())
	Expect(status.Pending.FluxVersion).To(Equal(pending))
	return status
}
