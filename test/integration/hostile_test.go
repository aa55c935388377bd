// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

var _ = Describe("Hostile tenant", func() {
	It("serves the other projects while one crafts a known_hosts pattern for a long host", Label(labelDeployed), func(ctx SpecContext) {
		hostileRun++
		prefix := fmt.Sprintf("kh%d", hostileRun)
		host := longHost(180)
		Expect(host).To(HaveLen(180))
		// Within the wildcard limit, so the matcher runs on it; it never matches (the host has no z).
		wildcards := sshkey.DefaultKnownHostsLimits().MaxWildcards
		pattern := strings.Repeat("*a", wildcards) + "z"
		newKnownHostsAttacker(ctx, prefix+"a", host, pattern)
		// One wildcard over the limit.
		newKnownHostsAttacker(ctx, prefix+"b", host, strings.Repeat("*a", wildcards+1)+"z")

		attackers := make(chan *sandbox.ShootHandle, 2)
		go func() {
			defer GinkgoRecover()
			attackers <- createShoot(ctx, sandbox.ShootSpec{Project: prefix + "a", Name: "one", SharedControlPlane: true})
			attackers <- createShoot(ctx, sandbox.ShootSpec{Project: prefix + "b", Name: "one", SharedControlPlane: true})
		}()
		healthy := createHealthyTenants(ctx, prefix)
		crafted, overLimit := <-attackers, <-attackers

		By("checking that the crafted pattern's reconciles return")
		Expect(crafted.Checkpoint(ctx)).To(Succeed())
		Expect(crafted.TriggerReconcile(ctx)).To(Succeed())
		took, ex := reconcileDuration(ctx, crafted)
		// reconcileDuration bounds the reconcile by errorTimeout: an exponential matcher never ends.
		AddReportEntry("crafted known_hosts", fmt.Sprintf("a reconcile with %q against a %d-character host took %s, ended %s",
			pattern, len(host), took.Round(time.Millisecond), lastOperation(ex)))
		// The host does not resolve in the sandbox (and no policy allows it): the pattern did not
		// match, so the extension tried to scan.
		Expect(ex.Status.LastError).NotTo(BeNil())
		Expect(ex.Status.LastError.Description).To(ContainSubstring(deploykey.ScanFailedMessage))

		lastErr, err := overLimit.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring("data[known_hosts]"))
		Expect(lastErr.Description).To(ContainSubstring(fmt.Sprintf("may not have more than %d", wildcards)))
		Expect(lastErr.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))

		healthy.expectPropagation(ctx, "release")
	})

	It("writes a bounded number of ManagedResource Secrets for a flood of project ConfigMap updates", Label(labelDeployed), func(ctx SpecContext) {
		prefix, attacker, attackerNamespace := attackerProject(ctx, "fl")
		specs := make([]sandbox.ShootSpec, floodShoots)
		for i := range specs {
			specs[i] = sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("f%02d", i), SharedControlPlane: true}
		}
		flooded := createShoots(ctx, specs)
		Expect(inParallel(len(flooded), func(i int) error {
			_, err := flooded[i].WaitSucceeded(ctx, reconcileTimeout)
			return err
		})).To(Succeed())

		By("counting the Secrets created in the flooded shoots' seed namespaces")
		namespaces := map[string]bool{}
		for _, h := range flooded {
			namespaces[h.SeedNamespace] = true
		}
		created := countSecretCreations(ctx, namespaces)
		// In-process, the extension's memory is the test process's: there is nothing of its own
		// to read.
		var floodMemory func() (int64, kubelet.Memory)
		if sb.Deployed() {
			floodMemory = sampleMemory(ctx)
		}

		By(fmt.Sprintf("writing %d ConfigMap updates within %s while healthy shoots are created", floodUpdates, floodDuration))
		floodDone := make(chan error, 1)
		var (
			lastBranch string
			floodTook  time.Duration
		)
		go func() {
			defer GinkgoRecover()
			tick := floodDuration / time.Duration(floodUpdates)
			start := time.Now()
			var err error
			for i := range floodUpdates {
				// On a schedule, so that the updates fit into floodDuration however long each takes.
				time.Sleep(time.Until(start.Add(time.Duration(i) * tick)))
				lastBranch = fmt.Sprintf("flood-%03d", i)
				cm := &corev1.ConfigMap{}
				if err = get(ctx, sb.Garden.Client, cm, attackerNamespace, constants.ProjectConfigMapName); err != nil {
					break
				}
				cm.Data[constants.ConfigMapKeyRepositoryBranch] = lastBranch
				if err = sb.Garden.Client.Update(ctx, cm); err != nil {
					break
				}
			}
			floodTook = time.Since(start)
			floodDone <- err
		}()
		healthy := createHealthyTenants(ctx, prefix)
		healthy.expectPropagation(ctx, "release")
		Expect(<-floodDone).To(Succeed())
		AddReportEntry("flood", fmt.Sprintf("%d ConfigMap updates written, the last %s after the first (budget %s)", floodUpdates, floodTook.Round(time.Millisecond), floodDuration))
		// The updates are scheduled over floodDuration; on a loaded machine the last ones land
		// later, and the bound below follows the flood's real duration.
		floodSpan := max(floodDuration, floodTook)

		By("waiting for the last update to reach every flooded shoot")
		Expect(inParallel(len(flooded), func(i int) error {
			return waitForBranch(ctx, flooded[i], lastBranch, reconcileTimeout)
		})).To(Succeed())
		// A reconcile still running writes nothing new: the content is the last update's.
		time.Sleep(consistentlyDuration)
		n := created()
		perShoot := coalesceWindows(floodSpan)
		AddReportEntry("flood secrets", fmt.Sprintf("%d ConfigMap updates for %d shoots created %d ManagedResource Secrets (bound %d x %d)",
			floodUpdates, floodShoots, n, floodShoots, perShoot))
		Expect(n).To(BeNumerically("<=", floodShoots*perShoot))

		// What the seed's etcd keeps of the flood: every ManagedResource Secret in the flooded
		// shoots' namespaces, whoever deleted the superseded ones (the extension after each apply,
		// the garbage collector of the seed's gardener-resource-manager those a failed reconcile
		// left behind). At rest that is the one Secret each of a shoot's two ManagedResources
		// references.
		By("counting the ManagedResource Secrets the seed keeps once the garbage collector ran")
		var kept, referenced []string
		Eventually(func(g Gomega) {
			var err error
			kept, referenced, err = managedResourceSecrets(ctx, flooded)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(referenced).To(HaveLen(2 * floodShoots))
			g.Expect(kept).To(ConsistOf(referenced))
		}).WithTimeout(garbageCollectionTimeout).Should(Succeed())
		AddReportEntry("flood secrets kept", fmt.Sprintf("the seed keeps %d ManagedResource Secrets of the %d flooded shoots, the %d their ManagedResources reference", len(kept), floodShoots, len(referenced)))

		if floodMemory != nil {
			highest, mem := floodMemory()
			addHeapReport(ctx, "flood heap")
			budget := sandbox.BenchRSS500Shoots * 6 / 5
			AddReportEntry("flood memory", fmt.Sprintf("extension RSS during the flood at most %.1f MiB, after it %s (budget: the bench's 500-shoot figure + 20%%, %.1f MiB; highest since the start of the process, with the creation of the shoots, %.1f MiB)",
				float64(highest)/(1<<20), mem, float64(budget)/(1<<20), float64(mem.Peak)/(1<<20)))
			Expect(highest).To(BeNumerically("<=", budget), "the flood grew the extension's memory beyond the bench's 500-shoot figure + 20%")
		}
	})

	// The attacking shoots are hibernated, with control planes of their own: the extension renders,
	// compresses and writes every distinct setting as for an awake shoot, but does not wait for a
	// resource manager. Awake, each change would make the sandbox's one shared resource manager
	// rewrite all Flux CRDs in the one shared API server, which every light shoot, the healthy ones
	// included, waits for; in a seed each shoot has a resource manager and an API server of its own,
	// so that load would be the attacker's alone.
	It("keeps the memory of 200 distinct controller settings within the render cache's bound", Label(labelDeployed), func(ctx SpecContext) {
		hostileRun++
		prefix := fmt.Sprintf("cs%d", hostileRun)
		By(fmt.Sprintf("running the extension with %d workers", floodWorkers))
		restartExtension(ctx, sandbox.ExtensionSettings{MaxConcurrentReconciles: floodWorkers})

		attacker := prefix + "a"
		newProject(ctx, attacker)
		specs := make([]sandbox.ShootSpec, settingsShoots)
		for i := range specs {
			specs[i] = sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("s%02d", i), Hibernated: true, ProviderConfig: distinctSettings(i, 0)}
		}
		shoots := createShoots(ctx, specs)
		Expect(inParallel(len(shoots), func(i int) error {
			_, err := shoots[i].WaitSucceeded(ctx, reconcileTimeout)
			return err
		})).To(Succeed())
		// In-process, the extension's memory is the test process's: there is nothing of its own
		// to read.
		var (
			before           kubelet.Memory
			beforeUnreturned int64
			attackMemory     func() (int64, kubelet.Memory)
			changes          = settingsShoots * settingsRounds
			attackStarted    = time.Now()
		)
		if sb.Deployed() {
			var err error
			before, err = sb.ExtensionMemory()
			Expect(err).NotTo(HaveOccurred())
			beforeUnreturned = unreturnedHeap(ctx)
			attackMemory = sampleMemory(ctx)
		}

		By(fmt.Sprintf("changing the controller settings %d times to distinct values while healthy shoots are created", changes))
		attack := attackInBackground(ctx, func(attackCtx context.Context) error {
			return inParallel(len(shoots), func(i int) error {
				h := shoots[i]
				for round := 1; round <= settingsRounds; round++ {
					if err := h.UpdateProviderConfig(attackCtx, distinctSettings(i, round)); err != nil {
						return err
					}
					if _, err := h.WaitSucceeded(attackCtx, reconcileTimeout); err != nil {
						return fmt.Errorf("shoot %s, round %d: %w", h.Name, round, err)
					}
				}
				return nil
			})
		})
		healthy := createHealthyTenants(ctx, prefix)
		healthy.expectPropagation(ctx, "release")
		Expect(attack.wait()).To(Succeed())
		AddReportEntry("settings", fmt.Sprintf("%d distinct controller settings of ~%.1f KiB served in %s", changes,
			float64(len(settingsSelector(0, 0)))/1024, time.Since(attackStarted).Round(time.Millisecond)))

		if attackMemory != nil {
			highest, after := attackMemory()
			addHeapReport(ctx, "settings heap")
			afterUnreturned := unreturnedHeap(ctx)
			// What the extension keeps: its RSS less the heap the Go runtime has freed but not yet
			// returned to the kernel, which its scavenger returns within minutes. On a loaded
			// machine the scavenger lags, and the RSS right after the attack counted up to 70 MiB
			// of such free heap.
			grown := (after.RSS - afterUnreturned) - (before.RSS - beforeUnreturned)
			AddReportEntry("settings memory", fmt.Sprintf("extension RSS %s before, %s after, of which %.1f and %.1f MiB freed heap not yet returned: "+
				"kept %.1f MiB more, at most %.1f MiB RSS during the attack (budget: the render cache's %d MiB, doubled for the garbage collector)",
				before, after, float64(beforeUnreturned)/(1<<20), float64(afterUnreturned)/(1<<20), float64(grown)/(1<<20),
				float64(highest)/(1<<20), rendercache.DefaultMaxBytes>>20))
			Expect(grown).To(BeNumerically("<=", 2*rendercache.DefaultMaxBytes))
		}
	})

	It("refuses at once a key rotation that can never finish, at no cost to the other projects", Label(labelDeployed), func(ctx SpecContext) {
		hostileRun++
		prefix := fmt.Sprintf("rk%d", hostileRun)
		By("running the extension with rsa-4096 deploy keys, about 0.8 s of CPU each")
		cfg := sb.ExtensionConfig()
		cfg.SSHKey.Algorithm = config.KeyAlgorithmRSA4096
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})

		attacker := prefix + "a"
		attackerNamespace := newProject(ctx, attacker)
		setProjectConfig(ctx, attackerNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: attacker, Name: "one", SharedControlPlane: true})
		_, keys := deployKeys(ctx, attackerNamespace)
		Expect(keys).To(HaveLen(1))

		By(fmt.Sprintf("fabricating %d key pairs of the extension's naming with a 1-byte private key each", rotationAttackPairs))
		secret := &corev1.Secret{}
		Expect(get(ctx, sb.Garden.Client, secret, attackerNamespace, constants.DeployKeysSecretName)).To(Succeed())
		for i := range rotationAttackPairs {
			repository := fmt.Sprintf("git.example.org:22/org/fake-%04d", i)
			name := deploykey.KeyName(deploykey.ScopeRepository, "", repository)
			identity, _ := deploykey.DataKeys(name)
			// Not one byte: the suite's leak check looks for every private key of the garden in
			// what the extension logs and reports.
			secret.Data[identity] = fmt.Appendf(nil, "fabricated-%s-%04d", prefix, i)
			secret.Data[name+".repository"] = []byte(repository)
		}
		Expect(sb.Garden.Client.Update(ctx, secret)).To(Succeed())

		// requestRotation annotates the Secret for a rotation of all key pairs, as the project admin
		// does again and again.
		requestRotation := func(ctx context.Context) error {
			secret := &corev1.Secret{}
			if err := get(ctx, sb.Garden.Client, secret, attackerNamespace, constants.DeployKeysSecretName); err != nil {
				return err
			}
			patch := client.MergeFrom(secret.DeepCopy())
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, deploykey.RotateAll)
			return sb.Garden.Client.Patch(ctx, secret, patch)
		}

		By("requesting the rotation of all key pairs, which needs more keys than one rotation may generate")
		Expect(requestRotation(ctx)).To(Succeed())
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		ex, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred(), "the shoot keeps its key and reconciles")
		Expect(get(ctx, sb.Garden.Client, secret, attackerNamespace, constants.DeployKeysSecretName)).To(Succeed())
		Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate), "refused once, not on every reconcile")
		refused := fmt.Sprintf("the request needs %d new key pairs, more than the %d one rotation may generate", rotationAttackPairs+1, cfg.Limits.DeployKeysMaxRotatedKeys)
		Expect(secret.Annotations[constants.AnnotationRotateRefused]).To(HavePrefix(refused))
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		fingerprint, err := sshkey.FingerprintOf(keys[0].Pub)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Fingerprint).To(Equal(fingerprint), "no key was changed")
		Expect(status.Warnings).To(ContainElement(ContainSubstring(refused)))
		Expect(lastOperation(ex)).To(ContainSubstring("Succeeded"))

		By(fmt.Sprintf("requesting it again every %s for %s, with a reconcile of the attacker's shoot every %s", rotationAttackInterval, rotationAttackWindow, rotationAttackReconcile))
		// In-process, the extension's CPU time is the test process's: there is nothing of its own to
		// read.
		var cpuBefore time.Duration
		if sb.Deployed() {
			cpuBefore, err = sb.ExtensionCPU()
			Expect(err).NotTo(HaveOccurred())
		}
		start := time.Now()
		// attack goes on until ctx ends.
		attack := func(ctx context.Context) error {
			nextReconcile := time.Now()
			for ctx.Err() == nil {
				if err := requestRotation(ctx); err != nil {
					return ignoreEnded(ctx, err)
				}
				if !time.Now().Before(nextReconcile) {
					if err := h.TriggerReconcile(ctx); err != nil {
						return ignoreEnded(ctx, err)
					}
					if _, err := h.WaitSucceeded(ctx, reconcileTimeout); err != nil {
						return ignoreEnded(ctx, err)
					}
					nextReconcile = time.Now().Add(rotationAttackReconcile)
				}
				select {
				case <-ctx.Done():
				case <-time.After(rotationAttackInterval):
				}
			}
			return nil
		}
		window, cancelWindow := context.WithTimeout(ctx, rotationAttackWindow)
		defer cancelWindow()
		Expect(attack(window)).To(Succeed())
		if sb.Deployed() {
			cpuAfter, err := sb.ExtensionCPU()
			Expect(err).NotTo(HaveOccurred())
			took := time.Since(start)
			perMinute := time.Duration(float64(cpuAfter-cpuBefore) * float64(time.Minute) / float64(took))
			AddReportEntry("rotation attack", fmt.Sprintf("a rotation of %d fabricated rsa-4096 key pairs requested every %s for %s cost the extension %s of CPU, %s per minute (budget %s per minute)",
				rotationAttackPairs, rotationAttackInterval, took.Round(time.Second), cpuAfter-cpuBefore, perMinute.Round(time.Millisecond), rotationAttackCPUBudget))
			Expect(perMinute).To(BeNumerically("<", rotationAttackCPUBudget))
		}

		By("creating healthy shoots of other projects while the attack goes on")
		running := attackInBackground(ctx, attack)
		healthy := createHealthyTenants(ctx, prefix)
		healthy.expectPropagation(ctx, "release")
		Expect(running.stop()).To(Succeed())
	})

	It("leaves at most two ManagedResource Secrets per shoot when every apply of new content fails", Label(labelDeployed), func(ctx SpecContext) {
		hostileRun++
		attacker := fmt.Sprintf("fa%da", hostileRun)
		attackerNamespace := newProject(ctx, attacker)
		setProjectConfig(ctx, attackerNamespace, legacyConfig(publicURL, "main", "public"))
		// Each shoot has an API server of its own: its owner's admission policy must not reach the
		// shoots that share one.
		specs := make([]sandbox.ShootSpec, failingShoots)
		for i := range specs {
			specs[i] = sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("f%d", i), ProviderConfig: failingArgs(i, 0)}
		}
		shoots := createShoots(ctx, specs)
		Expect(inParallel(len(shoots), func(i int) error {
			_, err := shoots[i].WaitSucceeded(ctx, reconcileTimeout)
			return err
		})).To(Succeed())

		By("denying every change of the KluctlDeployment in the shoots, as their owner can")
		for _, h := range shoots {
			denyKluctlDeploymentChanges(ctx, h)
		}

		By(fmt.Sprintf("changing the kluctl args %d times, each change failing to apply", failedApplies))
		var (
			mu       sync.Mutex
			most     int
			timedOut int
		)
		// The resource manager retries a ManagedResource that keeps failing with a growing backoff
		// and tries new content at once; when that first try loses a race (a conflict), the next
		// comes after the backoff, and the extension reports its own bound instead of the policy.
		applied := sb.ExtensionConfig().Timeouts.ManagedResourceApplied.Duration
		start := time.Now()
		Expect(inParallel(len(shoots), func(i int) error {
			h := shoots[i]
			for round := 1; round <= failedApplies/len(shoots); round++ {
				if err := h.UpdateProviderConfig(ctx, failingArgs(i, round)); err != nil {
					return err
				}
				lastErr, err := h.WaitError(ctx, applied+errorTimeout)
				if err != nil {
					return fmt.Errorf("shoot %s, round %d: %w", h.Name, round, err)
				}
				// A write of the ManagedResource can lose the optimistic-locking race with the
				// resource manager's status update; the extension retries, and the retry's error is
				// the one this spec is about.
				deadline := time.Now().Add(errorTimeout)
				for strings.Contains(lastErr.Description, "the object has been modified") && time.Now().Before(deadline) {
					if err := h.Checkpoint(ctx); err != nil {
						return err
					}
					if lastErr, err = h.WaitError(ctx, time.Until(deadline)); err != nil {
						return fmt.Errorf("shoot %s, round %d, after a write conflict: %w", h.Name, round, err)
					}
				}
				// The first round fails before any backoff has grown: it must be the policy.
				backedOff := round > 1 && strings.Contains(lastErr.Description, fmt.Sprintf("was not applied within %s", applied))
				if !backedOff && !strings.Contains(lastErr.Description, failingMessage) {
					return fmt.Errorf("shoot %s, round %d: the apply did not fail for the owner's policy: %s", h.Name, round, lastErr.Description)
				}
				kept, _, err := managedResourceSecrets(ctx, []*sandbox.ShootHandle{h})
				if err != nil {
					return err
				}
				mu.Lock()
				most = max(most, len(kept))
				if backedOff {
					timedOut++
				}
				mu.Unlock()
			}
			return nil
		})).To(Succeed())
		kept, _, err := managedResourceSecrets(ctx, shoots)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("failed applies", fmt.Sprintf("%d failed applies of new content in %d shoots within %s (%d of them waiting for the resource manager's backoff until %s): at most %d ManagedResource Secrets in a shoot's seed namespace after a failed apply, %d in all after the last (budget 2 per shoot)",
			failedApplies/len(shoots)*len(shoots), len(shoots), time.Since(start).Round(time.Second), timedOut, applied, most, len(kept)))
		Expect(most).To(BeNumerically("<=", 2))
		Expect(len(kept)).To(BeNumerically("<=", 2*len(shoots)))
	})

	It("serves the other projects while the reconciles of one project's shoots hang", Label(labelDeployed), func(ctx SpecContext) {
		prefix, attacker, _ := attackerProject(ctx, "hg")
		specs := make([]sandbox.ShootSpec, hangingShoots)
		for i := range specs {
			specs[i] = sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("h%02d", i), SharedControlPlane: true, Unresponsive: true}
		}
		By(fmt.Sprintf("creating %d shoots whose resource managers do not answer, so that each reconcile waits for the applied timeout (%s)",
			hangingShoots, sb.ExtensionConfig().Timeouts.ManagedResourceApplied.Duration))
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
		share := floodWorkers * int(sb.ExtensionConfig().Limits.ProjectWorkersPercent) / 100
		Eventually(func(g Gomega) {
			m, err := scrapeMetrics(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.sum("shoot_flux_reconciles_waiting_for_project_share", nil)).To(BeNumerically(">=", hangingShoots-share))
		}).WithTimeout(reconcileTimeout).Should(Succeed(), "the hanging shoots occupy their project's share, the rest wait")

		healthy := createHealthyTenants(ctx, prefix)
		healthy.expectPropagation(ctx, "release")
		m, err := scrapeMetrics(ctx)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("hanging project", fmt.Sprintf("%d hanging shoots of one project, %d of %d workers theirs: %.0f of their reconciles waiting while the healthy projects were served",
			hangingShoots, share, floodWorkers, m.sum("shoot_flux_reconciles_waiting_for_project_share", nil)))
	})
})
