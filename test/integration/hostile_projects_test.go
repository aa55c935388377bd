// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/fairqueue"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// attackingProjects projects of one attacker have attackingShoots shoots each whose reconciles
// hang: each project alone could fill its share of the workers (limits.projectWorkersPercent of
// floodWorkers), and together they would hold every worker but for the reserve.
const (
	attackingProjects = 3
	attackingShoots   = 11
)

var _ = Describe("Hostile tenant with several projects", func() {
	It("serves a bystander project from the reserve while three projects' reconciles hang", Label(labelDeployed), func(ctx SpecContext) {
		prefix, _, _ := attackerProject(ctx, "hp")

		By("creating a bystander project with one shoot before the attack")
		bystander := prefix + "b"
		bystanderNamespace := newProject(ctx, bystander)
		setProjectConfig(ctx, bystanderNamespace, legacyConfig(publicURL, "main", "public"))
		shoot := createShoots(ctx, []sandbox.ShootSpec{{Project: bystander, Name: "b00", SharedControlPlane: true}})[0]
		_, err := shoot.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())

		var specs []sandbox.ShootSpec
		for p := range attackingProjects {
			attacker := fmt.Sprintf("%sa%d", prefix, p)
			setProjectConfig(ctx, newProject(ctx, attacker), legacyConfig(publicURL, "main", "public"))
			for i := range attackingShoots {
				specs = append(specs, sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("h%02d", i), SharedControlPlane: true, Unresponsive: true})
			}
		}
		By(fmt.Sprintf("creating %d projects of %d shoots whose resource managers do not answer, so that each reconcile waits for the applied timeout (%s)",
			attackingProjects, attackingShoots, sb.ExtensionConfig().Timeouts.ManagedResourceApplied.Duration))
		hanging := createShoots(ctx, specs)
		DeferCleanup(func(ctx SpecContext) {
			// Answered, the shoots succeed, and no reconcile of theirs holds a worker in the next scenarios.
			for _, h := range hanging {
				Expect(h.Respond(ctx)).To(Succeed())
			}
			Expect(inParallel(len(hanging), func(i int) error {
				_, err := hanging[i].WaitSucceeded(ctx, reconcileTimeout)
				return err
			})).To(Succeed())
		})

		// The first two projects take their share and what the reserve leaves, the third one
		// reserved worker with its first reconcile; the rest waits without a worker.
		limits := sb.ExtensionConfig().Limits
		share, reserve := fairqueue.WorkerShares(floodWorkers, int(limits.ProjectWorkersPercent), int(limits.ReservedWorkersPercent))
		Expect(attackingShoots).To(BeNumerically(">", share), "each attacking project can fill its share")
		inFlight := floodWorkers - reserve + 1
		Eventually(func(g Gomega) {
			m, err := scrapeMetrics(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.sum("shoot_flux_reconciles_waiting_for_project_share", nil)).To(BeNumerically(">=", len(hanging)-inFlight))
		}).WithTimeout(reconcileTimeout).Should(Succeed(), "the hanging shoots hold all workers but the reserve, the rest wait")

		By("changing the bystander's ConfigMap")
		start := time.Now()
		setProjectConfig(ctx, bystanderNamespace, legacyConfig(publicURL, "release", "public"))
		// The hanging shoots never free their workers: without the reserve the change would never
		// reach the bystander, whatever the machine's load.
		Expect(waitForBranch(ctx, shoot, "release", shootTimeout)).To(Succeed())
		took := time.Since(start)
		m, err := scrapeMetrics(ctx)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("hanging projects", fmt.Sprintf("%d projects of %d hanging shoots, %d of %d workers theirs at most (share %d, reserve %d): %.0f of their reconciles waiting; the bystander's ConfigMap change reached its shoot after %s (%s)",
			attackingProjects, attackingShoots, inFlight, floodWorkers, share, reserve,
			m.sum("shoot_flux_reconciles_waiting_for_project_share", nil), took.Round(time.Millisecond), latencyBudgets))
	})
})
