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

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/projectconfig"
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
