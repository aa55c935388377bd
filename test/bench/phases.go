// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"golang.org/x/mod/semver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// firstReconcile creates all Extensions at once as gardenlet does and waits until all succeeded.
func (b *bench) firstReconcile(ctx context.Context) error {
	step("creating %d Extensions and waiting until all succeeded", len(b.shoots))
	var (
		created time.Duration
		result  phaseResult
	)
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		start := b.tracker.begin("")
		if err := parallel(ctx, len(b.shoots), b.opts.createParallelism, func(ctx context.Context, i int) error {
			return b.shoots[i].CreateExtension(ctx)
		}); err != nil {
			return err
		}
		created = time.Since(start)
		var err error
		result, err = b.waitAll(ctx, b.namespaces)
		return err
	})
	if err != nil {
		return err
	}
	n := float64(len(b.shoots))
	r := b.report
	r.section("First reconcile of %d new shoots", len(b.shoots))
	r.add("wall time: create all Extensions → all Succeeded", dur(result.LastSucceeded), "≤ 60s", verdict(result.LastSucceeded <= time.Minute))
	r.add("  Extensions created within", dur(created), "", "")
	r.add("  all ManagedResources written after", dur(result.LastWritten), "", "")
	r.add("  all ManagedResources applied after", dur(result.LastApplied), "", "")
	r.add("  per shoot until Succeeded: p50 / p90 / max", fmt.Sprintf("%s / %s / %s",
		dur(percentile(result.Latencies, 0.5)), dur(percentile(result.Latencies, 0.9)), dur(percentile(result.Latencies, 1))), "", "")
	b.addApplyLatencies(result)
	r.add("  Extension errors on the way", fmt.Sprint(result.Errors), "0", verdict(result.Errors == 0))
	if result.LastError != "" {
		r.note("Last error: %s", result.LastError)
	}
	b.addRequests(stats, n, fmt.Sprintf("%d own + %d generic", minOwnWrites, minGenericWrites))
	b.addReconcileStats(stats)
	if failed := stats.reconciles["error"]; failed > 0 {
		r.note("%.0f reconciles failed and were retried at once: gardener's extension reconciler adds its finalizer with "+
			"optimistic locking right after it removed the operation annotation, reading the Extension from a cache that "+
			"does not have that write yet, so the first attempt for a new Extension usually conflicts (%d seed writes rejected).",
			failed, stats.seedWrites.failed)
	}
	b.addHealthCheckNote(stats, n)
	b.addLimit(stats, result)
	return b.addMemory(ctx, stats, "extension-heap-first-reconcile.pprof")
}

// addLimit says what bounded the first reconcile, from where the CPU went, how long the
// ManagedResources waited for the resource manager and how close the extension came to its
// client-side rate limit.
func (b *bench) addLimit(s *phaseStats, result phaseResult) {
	const saturated = 0.75
	rm := s.cpu.groups[roleBenchmark] + s.cpu.groups["kube-apiserver shared-shoot"]
	ext := s.cpu.groups[roleExtension] + s.cpu.groups["kube-apiserver seed"]
	applied := percentile(result.ApplyLatencies[constants.ManagedResourceControllers], 0.5)
	extensionRequests := 0
	for what, n := range s.seedWrites.byWhat {
		if strings.Contains(what, " extensions") {
			extensionRequests += n
		}
	}
	rate := 0.0
	if result.LastSucceeded > 0 {
		rate = float64(extensionRequests) / result.LastSucceeded.Seconds()
	}
	var limit string
	switch {
	case !b.opts.markApplied && s.cpu.machine >= saturated && rm > ext:
		limit = fmt.Sprintf("the shared resource manager and its API server: %.2f cores against %.2f for the extension and the seed API server, "+
			"a controllers ManagedResource waits %s (p50) to be applied; -mark-applied measures the extension alone", rm, ext, dur(applied))
	case rate >= 0.8*b.opts.clientQPS:
		limit = fmt.Sprintf("the extension's client-side rate limit of %.0f requests/s per resource type: it wrote Extensions "+
			"(its status and gardener's lastOperation, finalizer, annotation and health check updates) %.0f times a second", b.opts.clientQPS, rate)
	case s.cpu.machine >= saturated:
		limit = fmt.Sprintf("CPU: the machine is %.0f%% busy, %.2f cores for the extension and the seed API server", 100*s.cpu.machine, ext)
	default:
		limit = fmt.Sprintf("not CPU (%.0f%% busy): the extension's workers (mean reconcile %s, mean wait in queue %s)",
			100*s.cpu.machine, dur(s.reconcileMean), dur(s.queueMean))
	}
	b.report.note("What limits this phase: %s.", limit)
}

// forcedResync annotates every Extension with the reconcile operation, as gardenlet does on every
// shoot reconciliation, and counts what the extension writes.
func (b *bench) forcedResync(ctx context.Context) error {
	step("forcing a resync of all %d Extensions with the operation annotation", len(b.shoots))
	stats, result, err := b.resyncAll(ctx)
	if err != nil {
		return err
	}
	n := float64(len(b.shoots))
	generic := stats.seedWrites.byOwner[ownerGeneric]
	r := b.report
	r.section("Forced resync of all %d shoots (gardener.cloud/operation=reconcile)", len(b.shoots))
	r.add("wall time: annotate all → all Succeeded", dur(result.LastSucceeded), "", "")
	b.addOwnWrites(stats, "0")
	r.add("writes by gardener's extension reconciler per shoot", perShoot(float64(generic), n),
		"", "annotation removal, Processing, Succeeded: unavoidable with gardener's reconciler")
	b.addRequests(stats, n, "")
	b.addReconcileStats(stats)
	b.addHealthCheckNote(stats, n)
	return b.addMemory(ctx, stats, "")
}

// resyncAll annotates every Extension with the reconcile operation and waits until all
// succeeded, measuring the extension's requests.
func (b *bench) resyncAll(ctx context.Context) (*phaseStats, phaseResult, error) {
	var result phaseResult
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		b.tracker.begin("")
		if err := b.annotateAll(ctx); err != nil {
			return err
		}
		var err error
		result, err = b.waitAll(ctx, b.namespaces)
		return err
	})
	return stats, result, err
}

// annotateAll annotates every Extension with the reconcile operation, as gardenlet does on every
// shoot reconciliation.
func (b *bench) annotateAll(ctx context.Context) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	return parallel(ctx, len(b.shoots), b.opts.createParallelism, func(ctx context.Context, i int) error {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: b.namespaces[i], Name: sandbox.ExtensionName}}
		patch := client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
			v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile, v1beta1constants.GardenerTimestamp, now))
		return b.sb.Seed.Client.Patch(ctx, ex, patch)
	})
}

// addHealthCheckNote explains the health check's status writes, which are neither the actuator's
// nor the generic reconciler's.
func (b *bench) addHealthCheckNote(s *phaseStats, n float64) {
	if writes := s.seedWrites.byOwner[ownerHealthCheck]; writes > 0 {
		b.report.note("gardener's health check library replaces the status of every Extension on each check (every "+
			"minute, and when an Extension changes), whether or not a condition changed: %s status updates per shoot "+
			"in this phase, besides the reconciles.", perShoot(float64(writes), n))
	}
}

// restart restarts the extension process. No ConfigMap changed while it was down, so it should
// reconcile no shoot: the initial list of its project ConfigMap watch only enqueues Extensions
// whose providerStatus records other ConfigMap data.
func (b *bench) restart(ctx context.Context) error {
	step("restarting the extension")
	var (
		ready  time.Duration
		result phaseResult
	)
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		b.tracker.begin("")
		var err error
		if ready, err = b.restartExtension(ctx); err != nil {
			return err
		}
		if err := sandbox.Sleep(ctx, b.opts.restartSettle); err != nil {
			return err
		}
		// Whatever started must also end before the requests are counted, and nothing may wait in
		// the queue any more.
		result, err = b.tracker.wait(ctx, phaseTimeout(ctx), b.namespaces, managedResourceNames, func(r phaseResult) bool {
			return r.Succeeded == r.Started && b.extensionIdle(ctx)
		})
		if err != nil {
			return fmt.Errorf("only %d of the %d Extensions reconciled after the restart succeeded: %w", result.Succeeded, result.Started, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	generic := stats.seedWrites.byOwner[ownerGeneric]
	r := b.report
	r.section("Restart of the extension with %d Succeeded Extensions", len(b.shoots))
	r.add("ready after start (caches synced)", dur(ready), "", "")
	r.add("Extensions reconciled after the restart", fmt.Sprint(result.Started), "0", verdict(result.Started == 0))
	if result.Started > 0 {
		r.add("  restart → all of them Succeeded", dur(result.LastSucceeded), "", "")
	}
	b.addOwnWrites(stats, "0")
	r.add("writes by gardener's extension reconciler per shoot", perShoot(float64(generic), float64(len(b.shoots))), "", "Processing, Succeeded")
	b.addRequests(stats, float64(len(b.shoots)), "")
	b.addReconcileStats(stats)
	return b.addMemory(ctx, stats, "")
}

// restartExtension stops the extension process and starts it again with the same arguments (its
// configuration file read anew), and returns how long it took to become ready.
func (b *bench) restartExtension(ctx context.Context) (time.Duration, error) {
	if err := b.ext.stop(); err != nil {
		return 0, err
	}
	var err error
	if b.ext, err = startExtension(ctx, b.extArgs); err != nil {
		return 0, err
	}
	return b.ext.waitReady(ctx)
}

// extensionIdle tells whether the extension's controller has neither queued nor running
// reconciles.
func (b *bench) extensionIdle(ctx context.Context) bool {
	m, err := b.ext.scrape(ctx)
	if err != nil {
		return false
	}
	queue := m.value("workqueue_depth", func(l map[string]string) bool { return l["name"] == "shoot-flux" })
	active := m.value("controller_runtime_active_workers", func(l map[string]string) bool { return l["controller"] == "shoot-flux" })
	return queue == 0 && active == 0
}

// configChange changes the branch in the ConfigMap of the first project and waits until every
// shoot of the project has it.
func (b *bench) configChange(ctx context.Context) error {
	return b.changeBranch(ctx, "")
}

// changeBranch is configChange; beside names what runs meanwhile, for the report's section.
func (b *bench) changeBranch(ctx context.Context, beside string) error {
	project := b.projects[0]
	var (
		namespaces []string
		shoots     []*sandbox.ShootHandle
	)
	for _, h := range b.shoots {
		if h.Project == project {
			namespaces = append(namespaces, h.SeedNamespace)
			shoots = append(shoots, h)
		}
	}
	b.configChanges++
	branch := fmt.Sprintf("bench-%d", b.configChanges)
	step("changing the branch of project %s to %s (%d shoots)", project, branch, len(shoots))
	var result phaseResult
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		b.tracker.begin("branch:" + branch)
		cm := &corev1.ConfigMap{}
		if err := b.sb.Garden.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.ProjectNamespace(project), Name: constants.ProjectConfigMapName}, cm); err != nil {
			return fmt.Errorf("failed reading project ConfigMap: %w", err)
		}
		cm.Data[constants.ConfigMapKeyRepositoryBranch] = branch
		if err := b.sb.Garden.Client.Update(ctx, cm); err != nil {
			return fmt.Errorf("failed updating project ConfigMap: %w", err)
		}
		var err error
		result, err = b.tracker.wait(ctx, phaseTimeout(ctx), namespaces, []string{constants.ManagedResourceBootstrap}, func(r phaseResult) bool {
			return r.Reached == len(namespaces) && r.Succeeded == len(namespaces) && r.Applied == len(namespaces)
		})
		if err != nil {
			return fmt.Errorf("not all %d shoots of project %s took branch %s: %d have it in providerStatus, %d succeeded, %d bootstrap ManagedResources written, %d applied: %w",
				len(namespaces), project, branch, result.Reached, result.Succeeded, result.Written, result.Applied, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	stale, err := b.staleBootstraps(ctx, shoots, branch)
	if err != nil {
		return err
	}
	r := b.report
	r.section("Project ConfigMap change (branch) → all %d shoots of the project%s", len(shoots), beside)
	r.add("bootstrap ManagedResources rewritten after", dur(result.LastWritten), "", "")
	r.add("bootstrap ManagedResources applied after", dur(result.LastApplied), "", "")
	b.addApplyLatencies(result)
	r.add("providerStatus.ref of all shoots changed after", dur(result.LastReached), "≤ 5s", verdict(result.LastReached <= 5*time.Second))
	r.add("bootstrap ManagedResources without the new branch", fmt.Sprint(stale), "0", verdict(stale == 0))
	b.addRequests(stats, float64(len(shoots)), "")
	b.addReconcileStats(stats)
	return nil
}

// staleBootstraps counts the shoots whose bootstrap ManagedResource data does not carry branch.
func (b *bench) staleBootstraps(ctx context.Context, shoots []*sandbox.ShootHandle, branch string) (int, error) {
	stale := 0
	for _, h := range shoots {
		objects, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
		if err != nil {
			return 0, err
		}
		found := false
		for _, o := range objects {
			data, err := o.MarshalJSON()
			if err != nil {
				return 0, fmt.Errorf("failed encoding bootstrap object: %w", err)
			}
			if bytes.Contains(data, fmt.Appendf(nil, `"branch":%q`, branch)) {
				found = true
			}
		}
		if !found {
			stale++
		}
	}
	return stale, nil
}

// defaultMoved restarts the extension with the newest embedded Flux minor as the operator's
// default, which the shoots follow, and forces a resync of every shoot, as the periodic resync does
// within 30 minutes. Every shoot's maintenance time window is hours away (createShoots), so none may
// get the new release: nothing of the controllers' ManagedResources and their Secrets is written,
// and every shoot records the pending release in its providerStatus.
func (b *bench) defaultMoved(ctx context.Context) error {
	embedded := manifests.FluxVersions()
	older, newer := embedded[0], embedded[len(embedded)-1]
	if semver.MajorMinor(older) == semver.MajorMinor(newer) {
		return fmt.Errorf("the extension embeds one Flux minor (%s): no default to move", semver.MajorMinor(newer))
	}
	step("restarting the extension with defaultFluxVersion %s and forcing a resync of all %d Extensions", semver.MajorMinor(newer), len(b.shoots))
	cfg := b.extensionConfig()
	cfg.DefaultFluxVersion = semver.MajorMinor(newer)
	if err := sandbox.WriteControllerConfiguration(b.extArgs.configPath, &cfg); err != nil {
		return err
	}
	var result phaseResult
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		b.tracker.begin("")
		if _, err := b.restartExtension(ctx); err != nil {
			return err
		}
		if err := b.annotateAll(ctx); err != nil {
			return err
		}
		var err error
		result, err = b.waitAll(ctx, b.namespaces)
		return err
	})
	if err != nil {
		return err
	}

	controllerWrites := stats.seedWrites.byManagedResource[constants.ManagedResourceControllers]
	bootstrapWrites := stats.seedWrites.byManagedResource[constants.ManagedResourceBootstrap]
	var statusWrites int
	for what, count := range stats.seedWrites.byWhat {
		if strings.Contains(what, "(providerStatus)") {
			statusWrites += count
		}
	}
	list := &extensionsv1alpha1.ExtensionList{}
	if err := b.sb.Seed.Client.List(ctx, list); err != nil {
		return fmt.Errorf("failed listing the Extensions: %w", err)
	}
	var pending, moved int
	for i := range list.Items {
		status, err := helper.DecodeStatus(list.Items[i].Status.ProviderStatus)
		if err != nil || status == nil {
			continue
		}
		switch {
		case status.FluxVersion == older && status.Pending != nil && status.Pending.FluxVersion == newer:
			pending++
		case status.FluxVersion == newer:
			moved++
		}
	}
	n := len(b.shoots)
	r := b.report
	r.section("Operator default moved from %s to %s, %d shoots outside their maintenance window", semver.MajorMinor(older), semver.MajorMinor(newer), n)
	r.add("wall time: restart, annotate all → all Succeeded", dur(result.LastSucceeded), "", "")
	r.add(constants.ManagedResourceControllers+" and its Secrets: writes (total)", fmt.Sprint(controllerWrites), "0", verdict(controllerWrites == 0))
	r.add("shoots still on "+older+" with "+newer+" pending", fmt.Sprint(pending), fmt.Sprint(n), verdict(pending == n))
	r.add("shoots moved to "+newer, fmt.Sprint(moved), "0", verdict(moved == 0))
	r.add("providerStatus writes per shoot", perShoot(float64(statusWrites), float64(n)), "", "recording the pending release; later resyncs write none")
	r.add(constants.ManagedResourceBootstrap+" and its Secrets: writes per shoot", perShoot(float64(bootstrapWrites), float64(n)), "",
		"shoot-flux-status in the shoot shows the pending release")
	b.addRequests(stats, float64(n), "")
	b.addReconcileStats(stats)
	if err := b.addMemory(ctx, stats, ""); err != nil {
		return err
	}

	step("forcing another resync of all %d Extensions with the release still pending", n)
	again, _, err := b.resyncAll(ctx)
	if err != nil {
		return err
	}
	own := again.seedWrites.byOwner[ownerExtension] + again.gardenWrites.byOwner[ownerExtension]
	r.add("another forced resync: writes by the shoot-flux actuator (total)", fmt.Sprint(own), "0", verdict(own == 0))
	return nil
}

// dataSizes reports the size of the ManagedResource data of one shoot.
func (b *bench) dataSizes(ctx context.Context) error {
	r := b.report
	r.section("ManagedResource data of one shoot (Secret keys *.br)")
	h := b.shoots[len(b.shoots)-1]
	for _, name := range managedResourceNames {
		compressed, raw, err := dataSize(ctx, b.sb.Seed.Client, h.SeedNamespace, name)
		if err != nil {
			return err
		}
		r.add(name, fmt.Sprintf("%s brotli (%s uncompressed)", bytesize(compressed), bytesize(raw)), "", "")
	}
	return nil
}

func dataSize(ctx context.Context, c client.Client, namespace, name string) (compressed, raw int, err error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
		return 0, 0, fmt.Errorf("failed reading managed resource %s: %w", name, err)
	}
	for _, ref := range mr.Spec.SecretRefs {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
			return 0, 0, fmt.Errorf("failed reading Secret %s of managed resource %s: %w", ref.Name, name, err)
		}
		for key, data := range secret.Data {
			if !strings.HasSuffix(key, resourcesv1alpha1.BrotliCompressionSuffix) {
				raw += len(data)
				continue
			}
			compressed += len(data)
			n, err := io.Copy(io.Discard, brotli.NewReader(bytes.NewReader(data)))
			if err != nil {
				return 0, 0, fmt.Errorf("failed decompressing %s of managed resource %s: %w", key, name, err)
			}
			raw += int(n)
		}
	}
	return compressed, raw, nil
}
