package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	"github.com/google/pprof/profile"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	// sandboxStartTimeout bounds the start of the garden and seed API servers.
	sandboxStartTimeout = 3 * time.Minute
	// requestTimeout bounds a single request of the benchmark itself.
	requestTimeout = 30 * time.Second
)

const (
	// extensionUserAgent is the prefix of the user agent client-go derives from the extension
	// binary's name; the audit logs are filtered by it.
	extensionUserAgent = "gardener-extension-shoot-flux/"
	repoName           = "fleet"
	publicURL          = "https://git.example.com/platform/fleet.git"
	// minOwnWrites is the least the actuator must write for a new shoot: the Secret and the
	// ManagedResource of both ManagedResources and the providerStatus.
	minOwnWrites = 5
	// minGenericWrites is what gardener's extension reconciler writes for an Extension created
	// with the operation annotation: finalizer, removal of the annotation, Processing, Succeeded.
	minGenericWrites = 4
)

var managedResourceNames = []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap}

type bench struct {
	opts options
	log  logr.Logger
	out  io.Writer

	tmpDir        string
	git           *gitserver.Server
	sb            *sandbox.Sandbox
	ext           *extensionProcess
	extArgs       extensionArgs
	tracker       *tracker
	stopTracker   context.CancelFunc
	seedAudit     *sandbox.AuditLog
	gardenAudit   *sandbox.AuditLog
	seedHost      string
	gardenHost    string
	projects      []string
	shoots        []*sandbox.ShootHandle
	namespaces    []string
	report        *report
	configChanges int
}

func (b *bench) run(ctx context.Context) error {
	b.report = newReport(b.opts)
	defer b.writeReport()
	if err := b.setup(ctx); err != nil {
		return b.report.fail(err)
	}
	for _, phase := range []func(context.Context) error{
		b.firstReconcile,
		b.forcedResync,
		b.restart,
		b.configChange,
		b.dataSizes,
	} {
		if err := phase(ctx); err != nil {
			return b.report.fail(err)
		}
	}
	return nil
}

func (b *bench) writeReport() {
	text := b.report.String()
	_, _ = fmt.Fprint(b.out, "\n"+text)
	if b.opts.out == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(b.opts.out), 0o755); err == nil {
		if err := os.WriteFile(b.opts.out, []byte(text), 0o644); err == nil {
			step("report written to %s", b.opts.out)
			return
		}
	}
	fmt.Fprintf(os.Stderr, "bench: failed writing %s\n", b.opts.out)
}

func (b *bench) setup(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join("cmd", "gardener-extension-shoot-flux")); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	var err error
	if b.tmpDir, err = os.MkdirTemp("", "shoot-flux-bench-"); err != nil {
		return fmt.Errorf("failed creating temporary directory: %w", err)
	}

	step("building the extension binary")
	b.extArgs = extensionArgs{
		binary:                  filepath.Join(b.tmpDir, "gardener-extension-shoot-flux"),
		seedKubeconfig:          filepath.Join(b.tmpDir, "seed.kubeconfig"),
		gardenKubeconfig:        filepath.Join(b.tmpDir, "garden.kubeconfig"),
		configPath:              filepath.Join(b.tmpDir, "config.yaml"),
		maxConcurrentReconciles: b.opts.workers,
		clientQPS:               b.opts.clientQPS,
		logPath:                 filepath.Join(b.opts.logDir, "extension.log"),
	}
	if b.opts.extensionEnv != "" {
		b.extArgs.env = strings.Split(b.opts.extensionEnv, ",")
	}
	if err := os.Remove(b.extArgs.logPath); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed removing old extension log: %w", err)
	}
	if err := sandbox.BuildExtension(ctx, ".", b.extArgs.binary); err != nil {
		return err
	}

	url := publicURL
	if b.opts.repository == "private" {
		repoRoot := filepath.Join(b.tmpDir, "git")
		if _, err := gitserver.NewKluctlProjectRepo(filepath.Join(repoRoot, repoName)); err != nil {
			return err
		}
		if b.git, err = gitserver.Start(gitserver.Options{RepoRoot: repoRoot}); err != nil {
			return err
		}
		url = b.git.URL(repoName)
	}

	step("starting the garden and seed API servers")
	startCtx, cancel := context.WithTimeout(ctx, sandboxStartTimeout)
	defer cancel()
	if b.sb, err = sandbox.Start(startCtx, sandbox.Options{WithoutExtension: true, AuditLogDir: b.tmpDir, MarkSharedApplied: b.opts.markApplied, Log: b.log}); err != nil {
		return err
	}
	if err := b.sb.WriteKubeconfigs(b.tmpDir); err != nil {
		return err
	}
	// The sandbox's host policy lets the extension scan the local git server.
	if err := b.sb.WriteExtensionConfig(b.extArgs.configPath); err != nil {
		return err
	}
	if b.seedHost, err = hostOf(b.sb.Seed.Config.Host); err != nil {
		return err
	}
	if b.gardenHost, err = hostOf(b.sb.Garden.Config.Host); err != nil {
		return err
	}
	b.seedAudit = &sandbox.AuditLog{Path: b.sb.Seed.AuditLogPath}
	b.gardenAudit = &sandbox.AuditLog{Path: b.sb.Garden.AuditLogPath}

	if err := b.createShoots(ctx, url); err != nil {
		return err
	}

	trackerCtx, stopTracker := context.WithCancel(context.WithoutCancel(ctx))
	b.stopTracker = stopTracker
	b.tracker = newTracker()
	if err := b.tracker.start(trackerCtx, b.sb.Seed.Config); err != nil {
		return err
	}

	// The extension starts after the Clusters exist: it drops an Extension event whose Cluster is
	// not in its cache yet, which gardenlet avoids by creating the Cluster first.
	step("starting the extension (--max-concurrent-reconciles=%d)", b.opts.workers)
	if b.ext, err = startExtension(ctx, b.extArgs); err != nil {
		return err
	}
	ready, err := b.ext.waitReady(ctx)
	if err != nil {
		return err
	}
	b.report.add("extension ready after start", ready.Round(time.Millisecond).String(), "", "")
	m, err := b.ext.scrape(ctx)
	if err != nil {
		return err
	}
	mem, err := b.ext.memory()
	if err != nil {
		return err
	}
	b.report.add("extension memory before any reconcile: RSS (anon + file) / Go heap in use",
		fmt.Sprintf("%s (%s + %s) / %s", bytesize(int(mem.RSS)), bytesize(int(mem.Anon)), bytesize(int(mem.File)),
			bytesize(int(m.value("go_memstats_heap_inuse_bytes", nil)))), "", "")
	return nil
}

func (b *bench) createShoots(ctx context.Context, url string) error {
	step("creating %d projects and %d light shoots", b.opts.projects, b.opts.shoots)
	start := time.Now()
	for i := range b.opts.projects {
		name := fmt.Sprintf("bench%02d", i)
		ns, err := b.sb.CreateProject(ctx, name)
		if err != nil {
			return err
		}
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: constants.ProjectConfigMapName},
			Data: map[string]string{
				constants.ConfigMapKeyFluxVersion:      "v2.9.5",
				constants.ConfigMapKeyRepositoryURL:    url,
				constants.ConfigMapKeyRepositoryBranch: "main",
				constants.ConfigMapKeyRepositoryType:   b.opts.repository,
			},
		}
		if err := b.sb.Garden.Client.Create(ctx, cm); err != nil {
			return fmt.Errorf("failed creating project ConfigMap of %s: %w", name, err)
		}
		b.projects = append(b.projects, name)
	}

	b.shoots = make([]*sandbox.ShootHandle, b.opts.shoots)
	err := parallel(ctx, b.opts.shoots, b.opts.createParallelism, func(ctx context.Context, i int) error {
		h, err := b.sb.CreateShoot(ctx, sandbox.ShootSpec{
			Project:            b.projects[i%len(b.projects)],
			Name:               fmt.Sprintf("s%04d", i),
			DeferExtension:     true,
			SharedControlPlane: true,
		})
		b.shoots[i] = h
		return err
	})
	if err != nil {
		return err
	}
	for _, h := range b.shoots {
		b.namespaces = append(b.namespaces, h.SeedNamespace)
	}
	b.report.add("shoots set up (namespace, Cluster; no Extension)", time.Since(start).Round(time.Millisecond).String(), "", "")
	return nil
}

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
	var result phaseResult
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		b.tracker.begin("")
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if err := parallel(ctx, len(b.shoots), b.opts.createParallelism, func(ctx context.Context, i int) error {
			ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: b.namespaces[i], Name: sandbox.ExtensionName}}
			patch := client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
				v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile, v1beta1constants.GardenerTimestamp, now))
			return b.sb.Seed.Client.Patch(ctx, ex, patch)
		}); err != nil {
			return err
		}
		var err error
		result, err = b.waitAll(ctx, b.namespaces)
		return err
	})
	if err != nil {
		return err
	}
	n := float64(len(b.shoots))
	own := stats.seedWrites.byOwner[ownerExtension] + stats.gardenWrites.byOwner[ownerExtension]
	generic := stats.seedWrites.byOwner[ownerGeneric]
	r := b.report
	r.section("Forced resync of all %d shoots (gardener.cloud/operation=reconcile)", len(b.shoots))
	r.add("wall time: annotate all → all Succeeded", dur(result.LastSucceeded), "", "")
	r.add("writes by the shoot-flux actuator (total)", fmt.Sprint(own), "0", verdict(own == 0))
	r.add("writes by gardener's extension reconciler per shoot", perShoot(float64(generic), n),
		"", "annotation removal, Processing, Succeeded: unavoidable with gardener's reconciler")
	b.addRequests(stats, n, "")
	b.addReconcileStats(stats)
	b.addHealthCheckNote(stats, n)
	return b.addMemory(ctx, stats, "")
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
		if err := b.ext.stop(); err != nil {
			return err
		}
		var err error
		if b.ext, err = startExtension(ctx, b.extArgs); err != nil {
			return err
		}
		if ready, err = b.ext.waitReady(ctx); err != nil {
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
	own := stats.seedWrites.byOwner[ownerExtension] + stats.gardenWrites.byOwner[ownerExtension]
	generic := stats.seedWrites.byOwner[ownerGeneric]
	r := b.report
	r.section("Restart of the extension with %d Succeeded Extensions", len(b.shoots))
	r.add("ready after start (caches synced)", dur(ready), "", "")
	r.add("Extensions reconciled after the restart", fmt.Sprint(result.Started), "0", verdict(result.Started == 0))
	if result.Started > 0 {
		r.add("  restart → all of them Succeeded", dur(result.LastSucceeded), "", "")
	}
	r.add("writes by the shoot-flux actuator (total)", fmt.Sprint(own), "0", verdict(own == 0))
	r.add("writes by gardener's extension reconciler per shoot", perShoot(float64(generic), float64(len(b.shoots))), "", "Processing, Succeeded")
	b.addRequests(stats, float64(len(b.shoots)), "")
	b.addReconcileStats(stats)
	return b.addMemory(ctx, stats, "")
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
	r.section("Project ConfigMap change (branch) → all %d shoots of the project", len(shoots))
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

// waitAll waits until every Extension of the namespaces finished an operation started in the
// phase and its ManagedResources are applied.
func (b *bench) waitAll(ctx context.Context, namespaces []string) (phaseResult, error) {
	n := len(namespaces)
	result, err := b.tracker.wait(ctx, phaseTimeout(ctx), namespaces, managedResourceNames, func(r phaseResult) bool {
		return r.Succeeded == n
	})
	if err != nil {
		return result, fmt.Errorf("only %d of %d Extensions succeeded (%d errors, %d of %d ManagedResources applied): %w",
			result.Succeeded, n, result.Errors, result.Applied, len(managedResourceNames)*n, err)
	}
	return result, nil
}

// phaseTimeout is what is left of the benchmark's time.
func phaseTimeout(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return time.Until(deadline)
	}
	return time.Hour
}

// phaseStats are the counters of one phase.
type phaseStats struct {
	requests      requests
	seedWrites    writeBreakdown
	gardenWrites  writeBreakdown
	seedReads     map[string]int
	gardenReads   map[string]int
	reconciles    map[string]float64
	reconcileMean time.Duration
	queueMean     time.Duration
	throttled     int
	after         metrics
	cpu           cpuUse
}

// measure runs a phase and returns the extension's requests during it: from its metrics (its own
// count) and from the audit logs (the API servers' count, with what each write was for).
func (b *bench) measure(ctx context.Context, fn func(context.Context) error) (*phaseStats, error) {
	proc := b.ext
	before, err := proc.scrape(ctx)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(b.seedAudit.Mark(), b.gardenAudit.Mark()); err != nil {
		return nil, err
	}
	logOffset := fileSize(b.extArgs.logPath)
	cpuBefore, err := takeCPUSnapshot(proc.process.Pid())
	if err != nil {
		return nil, err
	}

	if err := fn(ctx); err != nil {
		return nil, err
	}
	// CPU use is taken before the settle time, which would dilute it.
	cpuAfter, err := takeCPUSnapshot(b.ext.process.Pid())
	if err != nil {
		return nil, err
	}
	if err := sandbox.Sleep(ctx, b.opts.settle); err != nil {
		return nil, err
	}

	after, err := b.ext.scrape(ctx)
	if err != nil {
		return nil, err
	}
	if b.ext != proc {
		// A restarted process counts from zero.
		before = nil
	}
	seedEvents, err := b.seedAudit.Read(sandbox.ByUserAgent(extensionUserAgent))
	if err != nil {
		return nil, err
	}
	gardenEvents, err := b.gardenAudit.Read(sandbox.ByUserAgent(extensionUserAgent))
	if err != nil {
		return nil, err
	}
	s := &phaseStats{
		requests:     requestCounts(after, b.seedHost, b.gardenHost).minus(requestCounts(before, b.seedHost, b.gardenHost)),
		seedWrites:   breakdown(seedEvents),
		gardenWrites: breakdown(gardenEvents),
		seedReads:    readBreakdown(seedEvents),
		gardenReads:  readBreakdown(gardenEvents),
		reconciles:   map[string]float64{},
		after:        after,
		cpu:          cpuAfter.since(cpuBefore),
	}
	ours := func(l map[string]string) bool { return l["controller"] == "shoot-flux" }
	for _, result := range []string{"success", "error", "requeue", "requeue_after"} {
		match := func(l map[string]string) bool { return ours(l) && l["result"] == result }
		if v := after.value("controller_runtime_reconcile_total", match) - before.value("controller_runtime_reconcile_total", match); v > 0 {
			s.reconciles[result] = v
			s.reconciles["total"] += v
		}
	}
	s.reconcileMean = meanSeconds(before, after, "controller_runtime_reconcile_time_seconds", ours)
	queue := func(l map[string]string) bool { return l["name"] == "shoot-flux" }
	s.queueMean = meanSeconds(before, after, "workqueue_queue_duration_seconds", queue)
	s.throttled = countInFile(b.extArgs.logPath, logOffset, "client-side throttling")
	return s, nil
}

func meanSeconds(before, after metrics, name string, match func(map[string]string) bool) time.Duration {
	count := after.value(name+"_count", match) - before.value(name+"_count", match)
	if count <= 0 {
		return 0
	}
	sum := after.value(name+"_sum", match) - before.value(name+"_sum", match)
	return time.Duration(sum / count * float64(time.Second))
}

func (b *bench) addRequests(s *phaseStats, n float64, minWrites string) {
	r := b.report
	r.add("API requests per shoot (extension's /metrics): seed reads / writes",
		fmt.Sprintf("%s / %s", perShoot(s.requests.SeedReads, n), perShoot(s.requests.SeedWrites, n)), minWrites, "")
	r.add("API requests per shoot (extension's /metrics): garden reads / writes",
		fmt.Sprintf("%s / %s", perShoot(s.requests.GardenReads, n), perShoot(s.requests.GardenWrites, n)), "", "")
	for _, part := range []struct {
		cluster string
		writes  writeBreakdown
		reads   map[string]int
	}{{"seed", s.seedWrites, s.seedReads}, {"garden", s.gardenWrites, s.gardenReads}} {
		for _, what := range sortedKeys(part.writes.byWhat) {
			r.add(fmt.Sprintf("  %s write: %s", part.cluster, what), perShoot(float64(part.writes.byWhat[what]), n), "", "per shoot, audit log")
		}
		if part.writes.failed > 0 {
			r.add(fmt.Sprintf("  %s writes rejected (conflict, already exists)", part.cluster), fmt.Sprint(part.writes.failed), "", "total, audit log")
		}
		for _, what := range sortedKeys(part.reads) {
			r.add(fmt.Sprintf("  %s read: %s", part.cluster, what), perShoot(float64(part.reads[what]), n), "", "per shoot, audit log")
		}
	}
}

func (b *bench) addReconcileStats(s *phaseStats) {
	var parts []string
	for _, k := range []string{"success", "error", "requeue", "requeue_after"} {
		if v := s.reconciles[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
		}
	}
	r := b.report
	r.add("reconciles", strings.Join(parts, ", "), "", "")
	r.add("mean reconcile duration / mean wait in queue", fmt.Sprintf("%s / %s", dur(s.reconcileMean), dur(s.queueMean)), "", "")
	if s.throttled > 0 {
		r.add("client-side throttling messages in the extension log", fmt.Sprint(s.throttled), "0", verdict(false))
	}
	r.add(fmt.Sprintf("CPU busy (machine, %.0f cores)", s.cpu.cores), fmt.Sprintf("%.0f%%", 100*s.cpu.machine), "", "")
	var ours float64
	for _, g := range s.cpu.sortedGroups() {
		ours += s.cpu.groups[g]
		if s.cpu.groups[g] >= 0.005 {
			r.add("  cores used by "+g, fmt.Sprintf("%.2f", s.cpu.groups[g]), "", "")
		}
	}
	if other := s.cpu.machine*s.cpu.cores - ours; other >= 0.1 {
		r.add("  cores used by processes outside the benchmark", fmt.Sprintf("%.2f", other), "", "the machine was shared")
	}
}

func (b *bench) addApplyLatencies(result phaseResult) {
	for _, name := range managedResourceNames {
		l := result.ApplyLatencies[name]
		if len(l) == 0 {
			continue
		}
		b.report.add("  "+name+" written → applied: p50 / p90 / max",
			fmt.Sprintf("%s / %s / %s", dur(percentile(l, 0.5)), dur(percentile(l, 0.9)), dur(percentile(l, 1))), "", "")
	}
}

// addMemory reports the extension's memory. With a profile name, it also saves the extension's
// heap profile under that name in the log directory and names the functions holding most of it.
func (b *bench) addMemory(ctx context.Context, s *phaseStats, profileName string) error {
	mem, err := b.ext.memory()
	if err != nil {
		return err
	}
	heap := s.after.value("go_memstats_heap_inuse_bytes", nil)
	b.report.add(fmt.Sprintf("extension memory at %d shoots: RSS (anon + file) / Go heap in use", len(b.shoots)),
		fmt.Sprintf("%s (%s + %s) / %s", bytesize(int(mem.RSS)), bytesize(int(mem.Anon)), bytesize(int(mem.File)), bytesize(int(heap))),
		"RSS ≤ 150 MiB", verdict(mem.RSS <= 150<<20))
	if profileName == "" {
		return nil
	}
	path := filepath.Join(b.opts.logDir, profileName)
	prof, err := b.ext.heapProfile(ctx, path)
	if err != nil {
		return err
	}
	top, total := heapTop(prof, heapTopN)
	var parts []string
	for _, e := range top {
		parts = append(parts, fmt.Sprintf("%s %s", e.function, bytesize(int(e.bytes))))
	}
	b.report.note("Live heap as of the last GC %s, most of it allocated by (flat): %s. Profile: %s (go tool pprof).",
		bytesize(int(total)), strings.Join(parts, ", "), path)
	return nil
}

// heapTopN is how many functions the report names for the heap.
const heapTopN = 5

type heapEntry struct {
	function string
	bytes    int64
}

// heapTop sums a heap profile's in-use bytes by the function that allocated them and returns the
// n largest and the total.
func heapTop(prof *profile.Profile, n int) ([]heapEntry, int64) {
	index := -1
	for i, st := range prof.SampleType {
		if st.Type == "inuse_space" {
			index = i
		}
	}
	if index < 0 {
		return nil, 0
	}
	byFunction := map[string]int64{}
	var total int64
	for _, sample := range prof.Sample {
		v := sample.Value[index]
		total += v
		name := "(unknown)"
		if len(sample.Location) > 0 && len(sample.Location[0].Line) > 0 && sample.Location[0].Line[0].Function != nil {
			name = sample.Location[0].Line[0].Function.Name
		}
		byFunction[name] += v
	}
	entries := make([]heapEntry, 0, len(byFunction))
	for f, v := range byFunction {
		entries = append(entries, heapEntry{function: f, bytes: v})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].bytes != entries[j].bytes {
			return entries[i].bytes > entries[j].bytes
		}
		return entries[i].function < entries[j].function
	})
	if len(entries) > n {
		entries = entries[:n]
	}
	return entries, total
}

func (b *bench) close() error {
	var errs []error
	if b.ext != nil {
		errs = append(errs, b.ext.stop())
	}
	if b.stopTracker != nil {
		b.stopTracker()
	}
	if b.sb != nil {
		errs = append(errs, b.sb.Stop())
	}
	if b.git != nil {
		errs = append(errs, b.git.Close())
	}
	if b.tmpDir != "" {
		if b.opts.keep {
			step("kept %s", b.tmpDir)
		} else {
			errs = append(errs, os.RemoveAll(b.tmpDir))
		}
	}
	return errors.Join(errs...)
}

// parallel runs fn for 0..n-1 with at most workers at a time and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				reqCtx, cancelReq := context.WithTimeout(ctx, requestTimeout)
				err := fn(reqCtx, i)
				cancelReq()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// countInFile counts the lines after offset that contain s.
func countInFile(path string, offset int64, s string) int {
	data, err := os.ReadFile(path)
	if err != nil || offset > int64(len(data)) {
		return 0
	}
	return bytes.Count(data[offset:], []byte(s))
}
