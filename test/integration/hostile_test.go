// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/projectconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

var (
	// healthyProjects x healthyPerProject are the healthy shoots of other projects next to an
	// attacking project.
	healthyProjects   = 2
	healthyPerProject = 5
	// floodShoots is the number of shoots of the project whose ConfigMap is flooded; floodUpdates
	// updates are written within floodDuration.
	floodShoots   = 20
	floodUpdates  = 100
	floodDuration = 10 * time.Second
	// floodWorkers is the chart's default number of workers (values.yaml extension.concurrentSyncs).
	floodWorkers = 20
	// settingsShoots shoots of one project change their controller settings settingsRounds times
	// each, every time to a value no shoot had before, one change after the other per shoot (each
	// reaches the extension with a reconcile of its Shoot): settingsShoots changes are in flight at
	// any time, far more than gardenlet's Shoot reconciles (minutes each) let through.
	settingsShoots = 4
	settingsRounds = 50
	// settingsSelectorEntries nodeSelector entries of 63-character values make the controllers
	// layer ~13.5 KiB as JSON, just below the default limit (16 KiB), so that each distinct setting
	// costs a render of the largest size a tenant can ask for.
	settingsSelectorEntries = 150
	// rotationAttackPairs fabricated key pairs make a rotation of all, with rsa-4096 keys, cost
	// about 0.8 s of CPU per pair on every reconcile that tries it: ten minutes of CPU.
	rotationAttackPairs = 700
	// The attacker asks for the rotation again every rotationAttackInterval for
	// rotationAttackWindow and reconciles its shoot every rotationAttackReconcile, far more often
	// than gardenlet reconciles a Shoot; the extension may spend at most rotationAttackCPUBudget
	// per minute on it.
	rotationAttackInterval  = 2 * time.Second
	rotationAttackWindow    = time.Minute
	rotationAttackReconcile = 15 * time.Second
	rotationAttackCPUBudget = time.Second
)

// hostileRun makes the names of a scenario unique when the suite repeats it (-ginkgo.repeat).
var hostileRun int

// healthyTenants are the shoots of projects that do nothing wrong next to an attacking one.
type healthyTenants struct {
	namespaces []string
	shoots     [][]*sandbox.ShootHandle
}

// createHealthyTenants creates the healthy projects with light shoots and checks that they
// succeed within quietBudget of their creation.
func createHealthyTenants(ctx context.Context, prefix string) *healthyTenants {
	GinkgoHelper()
	t := &healthyTenants{}
	var specs []sandbox.ShootSpec
	for p := range healthyProjects {
		project := fmt.Sprintf("%sh%d", prefix, p)
		ns := newProject(ctx, project)
		setProjectConfig(ctx, ns, legacyConfig(publicURL, "main", "public"))
		t.namespaces = append(t.namespaces, ns)
		for i := range healthyPerProject {
			specs = append(specs, sandbox.ShootSpec{Project: project, Name: fmt.Sprintf("q%02d", i), SharedControlPlane: true})
		}
	}
	start := time.Now()
	shoots := createShoots(ctx, specs)
	for p := range healthyProjects {
		t.shoots = append(t.shoots, shoots[p*healthyPerProject:(p+1)*healthyPerProject])
	}
	took := make([]time.Duration, len(shoots))
	Expect(inParallel(len(shoots), func(i int) error {
		_, err := shoots[i].WaitSucceeded(ctx, reconcileTimeout)
		took[i] = time.Since(start)
		return err
	})).To(Succeed())
	AddReportEntry("healthy shoots", fmt.Sprintf("%d healthy shoots Succeeded %s after their creation (%s)",
		len(shoots), slices.Max(took).Round(time.Millisecond), latencyBudgets))
	return t
}

// expectPropagation changes the ConfigMap of the first healthy project and checks that the
// bootstrap ManagedResources of all its shoots carry the change within propagationBudget. The
// light shoots share one API server, so the seed's ManagedResources are what tells them apart.
func (t *healthyTenants) expectPropagation(ctx context.Context, branch string) {
	GinkgoHelper()
	shoots := t.shoots[0]
	start := time.Now()
	setProjectConfig(ctx, t.namespaces[0], legacyConfig(publicURL, branch, "public"))
	took := make([]time.Duration, len(shoots))
	Expect(inParallel(len(shoots), func(i int) error {
		if err := waitForBranch(ctx, shoots[i], branch, shootTimeout); err != nil {
			return err
		}
		took[i] = time.Since(start)
		return nil
	})).To(Succeed())
	AddReportEntry("propagation", fmt.Sprintf("a ConfigMap change of a healthy project reached its %d shoots after %s (%s)",
		len(shoots), slices.Max(took).Round(time.Millisecond), latencyBudgets))
}

// waitForBranch waits until the shoot's bootstrap ManagedResource in the seed deploys the branch.
// Light shoots share one API server, so the seed's ManagedResource is what tells them apart.
func waitForBranch(ctx context.Context, h *sandbox.ShootHandle, branch string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		objs, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
		if err == nil && bootstrapBranch(objs) == branch {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("shoot %s: branch %q not delivered within %s: %w", h.Name, branch, timeout, err)
			}
			return fmt.Errorf("shoot %s: branch %q not delivered within %s", h.Name, branch, timeout)
		}
		if err := sandbox.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// bootstrapBranch returns the git branch of the bootstrap KluctlDeployment among objs.
func bootstrapBranch(objs []*unstructured.Unstructured) string {
	for _, o := range objs {
		if o.GroupVersionKind() == kluctlDeploymentGVK {
			return nestedString(o, "spec", "source", "git", "ref", "branch")
		}
	}
	return ""
}

// craftedKnownHosts returns a known_hosts line for a pattern with a valid host key.
func craftedKnownHosts(pattern string) string {
	GinkgoHelper()
	fields := strings.Fields(git.KnownHostsLine())
	Expect(fields).To(HaveLen(3))
	return pattern + " " + fields[1] + " " + fields[2] + "\n"
}

// newKnownHostsAttacker creates a project with a private repository on host and a deploy key
// Secret whose known_hosts holds pattern.
func newKnownHostsAttacker(ctx context.Context, project, host, pattern string) {
	GinkgoHelper()
	ns := newProject(ctx, project)
	Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: constants.DeployKeysSecretName},
		Data:       map[string][]byte{constants.SecretKeyKnownHosts: []byte(craftedKnownHosts(pattern))},
	})).To(Succeed())
	setProjectConfig(ctx, ns, legacyConfig("ssh://git@"+host+"/fleet", "main", "private"))
}

// reconcileDuration waits for the next reconcile of the shoot to end and returns how long it ran
// (from the first Processing state seen to its end) and the Extension at its end.
func reconcileDuration(ctx context.Context, h *sandbox.ShootHandle) (time.Duration, *extensionsv1alpha1.Extension) {
	GinkgoHelper()
	var (
		started time.Time
		took    time.Duration
		last    *extensionsv1alpha1.Extension
	)
	Expect(h.WatchExtension(ctx, errorTimeout, func(ex *extensionsv1alpha1.Extension, _ bool) (bool, error) {
		op := ex.Status.LastOperation
		if op == nil {
			return false, nil
		}
		if op.State == gardencorev1beta1.LastOperationStateProcessing {
			if started.IsZero() {
				started = time.Now()
			}
			return false, nil
		}
		if started.IsZero() {
			return false, nil
		}
		took, last = time.Since(started), ex
		return true, nil
	})).To(Succeed())
	Expect(last).NotTo(BeNil(), "shoot %s: no reconcile ended within %s", h.Name, errorTimeout)
	return took, last
}

// longHost is a valid DNS name of n characters.
func longHost(n int) string {
	var labels []string
	for n > 0 {
		l := min(n, 60)
		labels = append(labels, strings.Repeat("a", l))
		n -= l + 1
	}
	return strings.Join(labels, ".")
}

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

// attackerProject restarts the extension with floodWorkers workers, as the chart runs it, and
// makes the attacking project of a scenario with a public repository in its ConfigMap. It returns
// the scenario's prefix of project names (unique when the suite repeats it), the attacker's name
// and its namespace.
func attackerProject(ctx context.Context, code string) (prefix, attacker, namespace string) {
	GinkgoHelper()
	hostileRun++
	prefix = fmt.Sprintf("%s%d", code, hostileRun)
	By(fmt.Sprintf("running the extension with %d workers", floodWorkers))
	restartExtension(ctx, sandbox.ExtensionSettings{MaxConcurrentReconciles: floodWorkers})
	attacker = prefix + "a"
	namespace = newProject(ctx, attacker)
	setProjectConfig(ctx, namespace, legacyConfig(publicURL, "main", "public"))
	return prefix, attacker, namespace
}

// hangingShoots shoots of one project hang in every reconcile.
const hangingShoots = 30

// failingShoots shoots of one project get failedApplies changes of their kluctl args in all, each
// of which their owner's admission policy makes fail to apply; the failure message is
// failingMessage.
const (
	failingShoots  = 3
	failedApplies  = 21
	failingMessage = "the owner froze the KluctlDeployment"
)

// failingArgs is the providerConfig of the failing applies' shoot i in a round: kluctl args no
// other shoot or round has.
func failingArgs(shoot, round int) []byte {
	return fmt.Appendf(nil, `{"bootstrap":{"kluctl":{"args":{"round":"%d-%d"}}}}`, shoot, round)
}

// denyKluctlDeploymentChanges creates a ValidatingAdmissionPolicy in the shoot that refuses every
// update of a KluctlDeployment, as a shoot owner can, and waits until the API server enforces it.
// The message names the round, so that every failing apply is a new failure to the resource
// manager's condition, as a denial naming what was denied is.
func denyKluctlDeploymentChanges(ctx context.Context, h *sandbox.ShootHandle) {
	GinkgoHelper()
	denyKluctlDeploymentUpdates(ctx, h, failingMessage,
		`"`+failingMessage+` (round " + (has(object.spec.args) && has(object.spec.args.round) ? string(object.spec.args.round) : "?") + ")"`)
}

// backgroundAttack is an attack that runs beside a spec's checks.
type backgroundAttack struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// attackInBackground runs attack with a context of its own. A spec that fails before it waits for
// the attack still ends and waits for it (DeferCleanup), so that no attack outlives its spec and
// works on shoots and clients that are gone.
func attackInBackground(ctx context.Context, attack func(context.Context) error) *backgroundAttack {
	attackCtx, cancel := context.WithCancel(ctx)
	a := &backgroundAttack{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(a.done)
		a.err = attack(attackCtx)
	}()
	DeferCleanup(func() {
		cancel()
		<-a.done
	})
	return a
}

// wait waits until the attack ended by itself.
func (a *backgroundAttack) wait() error {
	<-a.done
	return a.err
}

// stop ends the attack and waits for it.
func (a *backgroundAttack) stop() error {
	a.cancel()
	return a.wait()
}

// ignoreEnded drops the error of a request that failed because ctx ended: the end of an attack
// loop, not a failure.
func ignoreEnded(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return nil
}

// distinctSettings is the providerConfig of the settings attacker's shoot i in a round: all Flux
// controllers and kluctl, with controller settings that no other shoot or round has.
func distinctSettings(shoot, round int) []byte {
	GinkgoHelper()
	cfg := map[string]any{
		"flux": map[string]any{"components": flux.KnownComponents},
		"controllers": map[string]any{
			flux.ControllersDefaults: map[string]any{"nodeSelector": json.RawMessage(settingsSelector(shoot, round))},
		},
	}
	data, err := json.Marshal(cfg)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// settingsSelector is a nodeSelector of settingsSelectorEntries entries as JSON, distinct per
// shoot and round.
func settingsSelector(shoot, round int) []byte {
	GinkgoHelper()
	selector := make(map[string]string, settingsSelectorEntries)
	for k := range settingsSelectorEntries {
		selector[fmt.Sprintf("pool.example.com/k%03d", k)] = fmt.Sprintf("%s-%03d-%03d", strings.Repeat("v", 55), shoot, round)
	}
	data, err := json.Marshal(selector)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// addHeapReport reports the Go heap of the running extension from its metrics: what is live and
// where the garbage collector will next run, which together explain its RSS.
func addHeapReport(ctx context.Context, name string) {
	GinkgoHelper()
	s, err := scrapeMetrics(ctx)
	Expect(err).NotTo(HaveOccurred())
	mib := func(metric string) float64 { return s.sum(metric, nil) / (1 << 20) }
	AddReportEntry(name, fmt.Sprintf("heap allocated %.1f MiB, in use %.1f MiB, idle %.1f MiB of which released %.1f MiB, next GC at %.1f MiB",
		mib("go_memstats_heap_alloc_bytes"), mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_idle_bytes"),
		mib("go_memstats_heap_released_bytes"), mib("go_memstats_next_gc_bytes")))
}

// unreturnedHeap returns the heap the deployed extension's Go runtime has freed but not returned
// to the kernel (idle less released), which its RSS still counts.
func unreturnedHeap(ctx context.Context) int64 {
	GinkgoHelper()
	s, err := scrapeMetrics(ctx)
	Expect(err).NotTo(HaveOccurred())
	return int64(s.sum("go_memstats_heap_idle_bytes", nil) - s.sum("go_memstats_heap_released_bytes", nil))
}

// memorySampleInterval is how often sampleMemory reads the extension's RSS.
const memorySampleInterval = 100 * time.Millisecond

// sampleMemory reads the deployed extension's RSS from now on and returns a function that stops
// and returns the highest RSS seen and the last reading. The process's own peak (VmHWM) also
// counts what came before, e.g. the creation of a scenario's shoots.
func sampleMemory(ctx context.Context) func() (int64, kubelet.Memory) {
	GinkgoHelper()
	first, err := sb.ExtensionMemory()
	Expect(err).NotTo(HaveOccurred())
	var (
		mu      sync.Mutex
		highest = first.RSS
		sampErr error
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(memorySampleInterval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			m, err := sb.ExtensionMemory()
			mu.Lock()
			if err != nil && sampErr == nil {
				sampErr = err
			}
			highest = max(highest, m.RSS)
			mu.Unlock()
		}
	}()
	return func() (int64, kubelet.Memory) {
		GinkgoHelper()
		close(stop)
		<-done
		last, err := sb.ExtensionMemory()
		Expect(err).NotTo(HaveOccurred())
		mu.Lock()
		defer mu.Unlock()
		Expect(sampErr).NotTo(HaveOccurred())
		return max(highest, last.RSS), last
	}
}

// coalesceWindows returns how many of a project's coalescing windows a stream of ConfigMap
// updates of duration d opens: each window makes one reconcile per shoot, which writes at most one
// new bootstrap ManagedResource Secret (the controllers' content does not depend on the
// ConfigMap's repository).
func coalesceWindows(d time.Duration) int {
	n := 0
	for t, w := time.Duration(0), projectconfig.CoalesceWindow; t < d; t, w = t+w, min(2*w, projectconfig.MaxCoalesceWindow) {
		n++
	}
	return n
}

// managedResourceSecrets lists the ManagedResource Secrets in the shoots' seed namespaces, and
// the Secrets their ManagedResources reference, as namespace/name.
func managedResourceSecrets(ctx context.Context, shoots []*sandbox.ShootHandle) (kept, referenced []string, err error) {
	for _, h := range shoots {
		secrets := &corev1.SecretList{}
		if err := sb.Seed.Client.List(ctx, secrets, client.InNamespace(h.SeedNamespace)); err != nil {
			return nil, nil, err
		}
		for _, s := range secrets.Items {
			if strings.HasPrefix(s.Name, "managedresource-") {
				kept = append(kept, h.SeedNamespace+"/"+s.Name)
			}
		}
		mrs := &resourcesv1alpha1.ManagedResourceList{}
		if err := sb.Seed.Client.List(ctx, mrs, client.InNamespace(h.SeedNamespace)); err != nil {
			return nil, nil, err
		}
		for _, mr := range mrs.Items {
			for _, ref := range mr.Spec.SecretRefs {
				referenced = append(referenced, h.SeedNamespace+"/"+ref.Name)
			}
		}
	}
	return kept, referenced, nil
}

// countSecretCreations watches the seed's Secrets from now on and returns a function that tells
// how many ManagedResource Secrets were created in namespaces so far. The extension deletes
// superseded ones, so only a watch sees them all.
func countSecretCreations(ctx context.Context, namespaces map[string]bool) func() int {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(sb.Seed.Config)
	Expect(err).NotTo(HaveOccurred())
	list, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1})
	Expect(err).NotTo(HaveOccurred())
	w, err := cs.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var (
		mu sync.Mutex
		n  int
	)
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if ev.Type != watch.Added || !ok || !namespaces[s.Namespace] || !strings.HasPrefix(s.Name, "managedresource-") {
				continue
			}
			mu.Lock()
			n++
			mu.Unlock()
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}
