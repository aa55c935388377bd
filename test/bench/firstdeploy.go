// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
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

// deployTimes are the milestones of one shoot's first deploy. The extension writes the
// controllers' ManagedResource, waits until the resource manager applied it (the bootstrap's kinds
// come with it), then writes the bootstrap's.
type deployTimes struct {
	created, succeeded                     time.Time
	controllersWritten, controllersApplied time.Time
	bootstrapWritten, bootstrapApplied     time.Time
	controllerReady, deployed              time.Time
}

// observe records the milestones the tracker and the kubelet stand-in have seen so far.
func (t *deployTimes) observe(tr *tracker, h *sandbox.ShootHandle) {
	t.succeeded = tr.succeeded(h.SeedNamespace)
	t.controllersWritten, t.controllersApplied = tr.managedResourceTimes(h.SeedNamespace, constants.ManagedResourceControllers)
	t.bootstrapWritten, t.bootstrapApplied = tr.managedResourceTimes(h.SeedNamespace, constants.ManagedResourceBootstrap)
	if t.controllerReady.IsZero() {
		for _, c := range h.Controllers() {
			if c.Component == "kluctl" && c.Ready {
				t.controllerReady = c.ReadySince
			}
		}
	}
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
	flux, err := kubelet.ParseControllers(kubelet.FluxControllersEnv, os.Getenv(kubelet.FluxControllersEnv))
	if err != nil {
		return err
	}
	kluctl, err := kubelet.ParseControllers(kubelet.KluctlControllersEnv, os.Getenv(kubelet.KluctlControllersEnv))
	if err != nil {
		return err
	}
	if len(flux) == 0 || len(kluctl) == 0 {
		return fmt.Errorf("-first-deploy runs the real controllers: %s and %s must list their binaries (make bench sets them)",
			kubelet.FluxControllersEnv, kubelet.KluctlControllersEnv)
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
	if err := b.writeExtensionKubeconfigs(); err != nil {
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
	cpuBefore, err := takeCPUSnapshot(b.ext.process.Pid())
	if err != nil {
		return err
	}
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
	cpuAfter, err := takeCPUSnapshot(b.ext.process.Pid())
	if err != nil {
		return err
	}
	b.addFirstDeploy(times)
	b.addFirstDeployCPU(cpuAfter.since(cpuBefore), cpuAfter.at.Sub(cpuBefore.at), n)
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
		t.observe(b.tracker, h)
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
	// The tracker's milestones may be seen after the deploy they precede.
	t.observe(b.tracker, h)
	return nil
}

// addFirstDeploy reports p50 and max of the total and of each phase. The phases are the steps
// between consecutive milestones, each taken no earlier than the one before. The steps overlap:
// the kubelet stand-in starts the controllers as soon as the resource manager created their
// Deployments, before it reports the ManagedResource applied, and the Extension's Succeeded comes
// with or after the bootstrap's; such a step counts as zero, the per-shoot rows show the
// milestones.
func (b *bench) addFirstDeploy(times []deployTimes) {
	phases := []struct {
		name  string
		steps []time.Duration
	}{
		{name: "extension: controllers' ManagedResource written"},
		{name: "resource manager: controllers applied (CRDs, Deployments)"},
		{name: "extension: bootstrap ManagedResource written"},
		{name: "resource manager: bootstrap applied (KluctlDeployment)"},
		{name: "kluctl controller ready (if it was not yet)"},
		{name: "kluctl controller: clone, render, deploy (→ ConfigMap in the shoot)"},
	}
	var total []time.Duration
	for _, t := range times {
		at := t.created
		for i, m := range []time.Time{t.controllersWritten, t.controllersApplied, t.bootstrapWritten, t.bootstrapApplied, t.controllerReady, t.deployed} {
			next := later(m, at)
			phases[i].steps = append(phases[i].steps, next.Sub(at))
			at = next
		}
		total = append(total, t.deployed.Sub(t.created))
	}
	slices.Sort(total)
	p50, maxTotal := percentile(total, 0.5), percentile(total, 1)
	r := b.report
	r.section("Time to first deploy of %d shoots in kluctl mode, Extensions created at once (p50 / max)", len(times))
	r.add("Extension created → repository's ConfigMap in the shoot: p50", dur(p50), "≤ "+dur(firstDeployGoalP50), verdict(p50 <= firstDeployGoalP50))
	r.add("Extension created → repository's ConfigMap in the shoot: max", dur(maxTotal), "≤ "+dur(firstDeployGoalMax), verdict(maxTotal <= firstDeployGoalMax))
	for _, p := range phases {
		slices.Sort(p.steps)
		r.add("  "+p.name, fmt.Sprintf("%s / %s", dur(percentile(p.steps, 0.5)), dur(percentile(p.steps, 1))), "", "")
	}
	// The milestones as seen, after the Extension's creation: they tell which steps overlap.
	since := func(t, created time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return dur(t.Sub(created))
	}
	for i, t := range times {
		r.add(fmt.Sprintf("  %s: controllers written / applied, bootstrap written / applied, Succeeded, controller ready, deployed", b.shoots[i].Name),
			strings.Join([]string{
				since(t.controllersWritten, t.created), since(t.controllersApplied, t.created), since(t.bootstrapWritten, t.created),
				since(t.bootstrapApplied, t.created), since(t.succeeded, t.created), since(t.controllerReady, t.created), since(t.deployed, t.created),
			}, " / "), "", "")
	}
	r.note("Each shoot has an API server, a gardener-resource-manager and a kubelet stand-in of its own, which runs the " +
		"delivered source-controller and kluctl controller as processes; all of them, the extension and the git server " +
		"share the machine. The phases are the steps between consecutive milestones of a shoot; p50 and max are taken " +
		"per phase, so they need not add up to the total's.")
}

// addFirstDeployCPU reports the CPU time each role used while the shoots deployed, and what the
// kluctl controllers' share alone means for the time to deploy them all on this machine.
func (b *bench) addFirstDeployCPU(use cpuUse, wall time.Duration, shoots int) {
	r := b.report
	r.section("CPU from the first Extension's creation to the last deploy (%s on %.0f cores)", dur(wall), use.cores)
	seconds := func(cores float64) time.Duration { return time.Duration(cores * float64(wall)) }
	for _, g := range use.sortedGroups() {
		r.add("  "+g, fmt.Sprintf("%s (%s per shoot)", dur(seconds(use.groups[g])), dur(seconds(use.groups[g])/time.Duration(shoots))), "", "")
	}
	r.add("  machine busy", fmt.Sprintf("%.0f%%", 100*use.machine), "", "")
	if use.cores > 0 {
		r.add("kluctl controllers' CPU alone, spread over all cores", dur(time.Duration(float64(seconds(use.groups[roleKluctl]))/use.cores)), "", "")
	}
	r.note("The kluctl controllers' line is the CPU the shoots' first deploys take on their own nodes in a real seed; " +
		"here they share the machine, so with all cores busy no shoot can deploy before most of it is spent.")
}

// later returns t, or not if t is zero or before not.
func later(t, not time.Time) time.Time {
	if t.Before(not) {
		return not
	}
	return t
}
