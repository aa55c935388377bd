package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	// firstDeployTimeout bounds the wait for the repository's objects in every shoot.
	firstDeployTimeout = 5 * time.Minute
	// firstDeployPoll is how often each shoot is checked for its kluctl controller and objects.
	firstDeployPoll = 200 * time.Millisecond
	// controlPlaneParallelism is how many shoot control planes start at once; their start is set
	// up before the measurement and not part of it.
	controlPlaneParallelism = 3
)

const (
	firstDeployProject = "bench"
	// firstDeployGoalP50 and firstDeployGoalMax are the goals of issue 22 on the 2-core machine.
	firstDeployGoalP50 = 15 * time.Second
	firstDeployGoalMax = 30 * time.Second
)

// deployTimes are the milestones of one shoot's first deploy.
type deployTimes struct {
	created, succeeded, written, applied, controllerReady, deployed time.Time
}

// runFirstDeploy measures the time to first deploy: shoots in kluctl mode whose delivered
// source- and kluctl-controller run (sandbox ShootSpec.RunControllers), created at once, from the
// Extension's creation to the repository's ConfigMap in the shoot.
func (b *bench) runFirstDeploy(ctx context.Context) error {
	b.report = newReport(b.opts)
	defer b.writeReport()
	if err := b.setupFirstDeploy(ctx); err != nil {
		return b.report.fail(err)
	}
	if err := b.firstDeploy(ctx); err != nil {
		return b.report.fail(err)
	}
	return nil
}

func (b *bench) setupFirstDeploy(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join("cmd", "gardener-extension-shoot-flux")); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	flux, err := sandbox.ParseControllers(sandbox.FluxControllersEnv, os.Getenv(sandbox.FluxControllersEnv))
	if err != nil {
		return err
	}
	kluctl, err := sandbox.ParseControllers(sandbox.KluctlControllersEnv, os.Getenv(sandbox.KluctlControllersEnv))
	if err != nil {
		return err
	}
	if len(flux) == 0 || len(kluctl) == 0 {
		return fmt.Errorf("-first-deploy runs the real controllers: %s and %s must list their binaries (make bench sets them)",
			sandbox.FluxControllersEnv, sandbox.KluctlControllersEnv)
	}
	if err := b.buildExtension(ctx); err != nil {
		return err
	}

	repoRoot := filepath.Join(b.tmpDir, "git")
	if _, err := gitserver.NewKluctlProjectRepo(filepath.Join(repoRoot, repoName)); err != nil {
		return err
	}
	if b.git, err = gitserver.Start(gitserver.Options{RepoRoot: repoRoot}); err != nil {
		return err
	}

	step("starting the garden and seed API servers")
	startCtx, cancel := context.WithTimeout(ctx, sandboxStartTimeout)
	defer cancel()
	if b.sb, err = sandbox.Start(startCtx, sandbox.Options{WithoutExtension: true, FluxControllers: flux, KluctlControllers: kluctl, Log: b.log}); err != nil {
		return err
	}
	if err := b.sb.WriteKubeconfigs(b.tmpDir); err != nil {
		return err
	}
	if err := b.sb.WriteExtensionConfig(b.extArgs.configPath); err != nil {
		return err
	}

	ns, err := b.sb.CreateProject(ctx, firstDeployProject)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: constants.ProjectConfigMapName},
		Data: map[string]string{
			constants.ConfigMapKeyFluxVersion:      "2.9.5",
			constants.ConfigMapKeyRepositoryURL:    b.git.URL(repoName),
			constants.ConfigMapKeyRepositoryBranch: gitserver.Branch,
			constants.ConfigMapKeyRepositoryType:   "private",
		},
	}
	if err := b.sb.Garden.Client.Create(ctx, cm); err != nil {
		return fmt.Errorf("failed creating project ConfigMap: %w", err)
	}
	// The git server accepts the deploy keys as soon as the extension generated them, as a
	// developer who registered them at the git host beforehand.
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	b.stopAuthorize = stopAuth
	go b.authorizeDeployKeys(authCtx, ns)

	step("starting %d shoot control planes (API server, resource manager, kubelet stand-in)", b.opts.firstDeploy)
	start := time.Now()
	b.shoots = make([]*sandbox.ShootHandle, b.opts.firstDeploy)
	if err := parallel(ctx, b.opts.firstDeploy, controlPlaneParallelism, func(_ context.Context, i int) error {
		// A control plane's start takes longer than a request: bounded by the sandbox's start.
		shootCtx, cancel := context.WithTimeout(ctx, sandboxStartTimeout)
		defer cancel()
		h, err := b.sb.CreateShoot(shootCtx, sandbox.ShootSpec{
			Project:        firstDeployProject,
			Name:           fmt.Sprintf("s%02d", i),
			DeferExtension: true,
			RunControllers: true,
			// The repository defines a kluctl target, and kluctl refuses to guess one.
			ProviderConfig: []byte(`{"bootstrap":{"kluctl":{"target":"` + gitserver.Target + `"}}}`),
		})
		b.shoots[i] = h
		return err
	}); err != nil {
		return err
	}
	for _, h := range b.shoots {
		b.namespaces = append(b.namespaces, h.SeedNamespace)
	}
	b.report.add("shoots set up (control planes, Clusters; no Extension)", dur(time.Since(start)), "", "")

	trackerCtx, stopTracker := context.WithCancel(context.WithoutCancel(ctx))
	b.stopTracker = stopTracker
	b.tracker = newTracker()
	if err := b.tracker.start(trackerCtx, b.sb.Seed.Config); err != nil {
		return err
	}
	step("starting the extension")
	if b.ext, err = startExtension(ctx, b.extArgs); err != nil {
		return err
	}
	ready, err := b.ext.waitReady(ctx)
	if err != nil {
		return err
	}
	b.report.add("extension ready after start", dur(ready), "", "")
	return nil
}

// authorizeDeployKeys lets the project's deploy keys fetch from the git server until ctx ends.
func (b *bench) authorizeDeployKeys(ctx context.Context, namespace string) {
	var last []string
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		keys, err := b.sb.DeployPublicKeys(ctx, namespace)
		if err != nil {
			return false, nil //nolint:nilerr // a failed read is retried until ctx ends
		}
		if len(keys) == len(last) {
			// Keys are only added while the shoots are created.
			return false, nil
		}
		if err := b.git.SetAuthorizedKeys(keys); err == nil {
			last = keys
		}
		return false, nil
	})
}

// firstDeploy creates the Extensions at once and waits until every shoot holds the repository's
// ConfigMap, recording each shoot's milestones.
func (b *bench) firstDeploy(ctx context.Context) error {
	n := len(b.shoots)
	step("creating %d Extensions at once and waiting for the repository's objects in every shoot", n)
	times := make([]deployTimes, n)
	b.tracker.begin("")
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, h := range b.shoots {
		wg.Go(func() {
			err := b.deployOne(ctx, h, &times[i])
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", h.SeedNamespace, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	b.addFirstDeploy(times)
	return nil
}

func (b *bench) deployOne(ctx context.Context, h *sandbox.ShootHandle, t *deployTimes) error {
	t.created = time.Now()
	if err := h.CreateExtension(ctx); err != nil {
		return err
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, firstDeployPoll, firstDeployTimeout, true, func(ctx context.Context) (bool, error) {
		now := time.Now()
		if t.succeeded.IsZero() || t.applied.IsZero() {
			t.succeeded, t.written, t.applied = b.tracker.times(h.SeedNamespace, managedResourceNames)
		}
		if t.controllerReady.IsZero() {
			for _, c := range h.Controllers() {
				if c.Component == "kluctl" && c.Ready {
					t.controllerReady = c.ReadySince
				}
			}
		}
		cm := &corev1.ConfigMap{}
		if err := h.Shoot.Client.Get(ctx, client.ObjectKey{Namespace: gitserver.ConfigMapNamespace, Name: gitserver.ConfigMapName}, cm); err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not deployed yet: the poll goes on, last tells why
		}
		t.deployed = now
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the repository was not deployed within %s (%s); controller logs:\n%s", firstDeployTimeout, last, h.ControllerLogs())
	}
	// Milestones observed late (e.g. the tracker's) are bounded by the deploy they precede.
	if t.succeeded.IsZero() || t.applied.IsZero() {
		t.succeeded, t.written, t.applied = b.tracker.times(h.SeedNamespace, managedResourceNames)
	}
	return nil
}

// addFirstDeploy reports p50 and max of the total and of each phase. The phases are the steps
// between consecutive milestones, each taken no earlier than the one before. The steps overlap:
// the kubelet stand-in starts the controllers as soon as the resource manager created their
// Deployments, before it reports the ManagedResources applied, and the Extension's Succeeded
// comes with or after them; such a step counts as zero, the per-shoot rows show the milestones.
func (b *bench) addFirstDeploy(times []deployTimes) {
	var total, reconcile, apply, start, deploy []time.Duration
	for _, t := range times {
		written := later(t.written, t.created)
		applied := later(t.applied, written)
		ready := later(t.controllerReady, applied)
		deployed := later(t.deployed, ready)
		total = append(total, t.deployed.Sub(t.created))
		reconcile = append(reconcile, written.Sub(t.created))
		apply = append(apply, applied.Sub(written))
		start = append(start, ready.Sub(applied))
		deploy = append(deploy, deployed.Sub(ready))
	}
	for _, l := range [][]time.Duration{total, reconcile, apply, start, deploy} {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	p50, maxTotal := percentile(total, 0.5), percentile(total, 1)
	r := b.report
	r.section("Time to first deploy of %d shoots in kluctl mode, Extensions created at once (p50 / max)", len(times))
	r.add("Extension created → repository's ConfigMap in the shoot: p50", dur(p50), "≤ "+dur(firstDeployGoalP50), verdict(p50 <= firstDeployGoalP50))
	r.add("Extension created → repository's ConfigMap in the shoot: max", dur(maxTotal), "≤ "+dur(firstDeployGoalMax), verdict(maxTotal <= firstDeployGoalMax))
	split := func(name string, l []time.Duration) {
		r.add("  "+name, fmt.Sprintf("%s / %s", dur(percentile(l, 0.5)), dur(percentile(l, 1))), "", "")
	}
	split("extension reconcile (→ both ManagedResources written)", reconcile)
	split("resource manager apply (→ both ManagedResources applied)", apply)
	split("controller start (→ kluctl controller ready)", start)
	split("clone + deploy (→ ConfigMap in the shoot)", deploy)
	// The milestones as seen, after the Extension's creation: they tell which steps overlap.
	since := func(t, created time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return dur(t.Sub(created))
	}
	for i, t := range times {
		r.add(fmt.Sprintf("  %s: written / applied / Succeeded / controller ready / deployed", b.shoots[i].Name),
			fmt.Sprintf("%s / %s / %s / %s / %s", since(t.written, t.created), since(t.applied, t.created), since(t.succeeded, t.created),
				since(t.controllerReady, t.created), since(t.deployed, t.created)), "", "")
	}
	r.note("Each shoot has an API server, a gardener-resource-manager and a kubelet stand-in of its own, which runs the " +
		"delivered source-controller and kluctl controller as processes; all of them, the extension and the git server " +
		"share the machine. The phases are the steps between consecutive milestones of a shoot; p50 and max are taken " +
		"per phase, so they need not add up to the total's.")
}

// later returns t, or not if t is zero or before not.
func later(t, not time.Time) time.Time {
	if t.Before(not) {
		return not
	}
	return t
}
