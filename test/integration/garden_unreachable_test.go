// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/network"
)

// gardenDownRetryWindow is how long the retries of a reconcile that needs the unreachable garden
// are watched.
var gardenDownRetryWindow = 5 * time.Second

var _ = Describe("Garden unreachable at start", Label(labelDeployed), func() {
	It("starts, checks health, migrates and deletes without the garden, reports the garden as the cause of reconcile errors, and converges once the garden is back", func(ctx SpecContext) {
		project := "gdown"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		// The health check reads the bootstrap KluctlDeployment, which needs a shoot API server of
		// its own; the other shoots share one.
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
		migrating := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "migrate", SharedControlPlane: true})
		deleting := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "delete", SharedControlPlane: true})

		By("starting the extension with its garden connection through a proxy that resets every connection")
		gardenAddress, err := sb.Garden.Address()
		Expect(err).NotTo(HaveOccurred())
		proxy, err := network.StartProxy(gardenAddress)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		proxy.Down()
		start := time.Now()
		// The sandbox waits until the extension's /readyz answers OK.
		restartExtension(ctx, sandbox.ExtensionSettings{GardenAddress: proxy.Addr()})
		AddReportEntry("ready without the garden", fmt.Sprintf("ready %s after the start", time.Since(start).Round(time.Millisecond)))

		By("checking health")
		setKluctlReady(ctx, h, "False", "PrepareFailed", "garden outage probe")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionFalse, "garden outage probe")

		By("migrating a shoot")
		Expect(migrating.Migrate(ctx, reconcileTimeout)).To(Succeed())
		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			_, err := migrating.ManagedResource(ctx, name)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "managed resource %s should be gone, got %v", name, err)
		}

		By("disabling the extension for a shoot")
		Expect(deleting.Delete(ctx, deleteTimeout)).To(Succeed())

		By("asking for a reconcile, which reads the project ConfigMap from the garden")
		before := snapshotManagedResources(ctx, h)
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		attempts, lastErr := operationAttempts(ctx, h, gardenDownRetryWindow)
		limit := maxAttemptsWithBackoff(gardenDownRetryWindow)
		AddReportEntry("garden unreachable", fmt.Sprintf("%d reconcile attempts in %s (backoff allows %d)", attempts, gardenDownRetryWindow, limit))
		Expect(lastErr).NotTo(BeNil(), "the reconcile should fail while the garden is unreachable")
		Expect(lastErr.Description).To(ContainSubstring("garden cluster is not reachable"))
		// A reconcile that waited for the garden would hold its worker and make one attempt.
		Expect(attempts).To(BeNumerically(">=", 3), "the extension should fail at once and retry")
		Expect(attempts).To(BeNumerically("<=", limit), "the extension should back off")
		Expect(snapshotManagedResources(ctx, h)).To(Equal(before), "a failed reconcile must not touch the ManagedResources")

		By("letting the garden connections through")
		proxy.Up()
		start = time.Now()
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("garden recovery", fmt.Sprintf("Succeeded %s after the garden was reachable", time.Since(start).Round(time.Millisecond)))

		By("changing the project ConfigMap")
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "next", "public"))
		// The change may reach a reconcile that is already under way, so what counts is the state
		// the extension reports, not the count of operations.
		Eventually(func(g Gomega) {
			status, err := h.ProviderStatus(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status.Ref).To(Equal("branch:next"))
		}).WithTimeout(reconcileTimeout).Should(Succeed())
		objects, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(mustJSON(objects))).To(ContainSubstring(`"branch":"next"`))
	})
})
