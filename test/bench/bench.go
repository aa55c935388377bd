// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/go-logr/logr"
	"golang.org/x/mod/semver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
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
	// extensionUser is the extension's own identity in the garden and the seed (a client
	// certificate in system:masters, so that its permissions are not what the bench measures):
	// the audit logs are filtered by it, so every write the process makes counts, whatever its
	// client's user agent.
	extensionUser = "gardener-extension-shoot-flux"
	repoName      = "fleet"
	publicURL     = "https://git.example.com/platform/fleet.git"
	// minOwnWrites is the least the actuator must write for a new shoot: the Secret and the
	// ManagedResource of both ManagedResources, the providerStatus, and the shoot's monitoring
	// objects (a ScrapeConfig per delivered controller, the bench's shoots have two, the
	// PrometheusRule and the dashboard ConfigMap).
	minOwnWrites = 9
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
	stopAuthorize context.CancelFunc
	hung          *hungAPIServer
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
		b.noisyNeighbour,
		b.defaultMoved,
		b.healthChecks,
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

// buildExtension creates the temporary directory and builds the extension binary into it, with the
// arguments it is started with; both benchmark modes start from it.
func (b *bench) buildExtension(ctx context.Context) error {
	var err error
	if b.tmpDir, err = os.MkdirTemp("", "shoot-flux-bench-"); err != nil {
		return fmt.Errorf("failed creating temporary directory: %w", err)
	}

	step("building the extension binary")
	b.extArgs = extensionArgs{
		binary:                  filepath.Join(b.tmpDir, "gardener-extension-shoot-flux"),
		seedKubeconfig:          filepath.Join(b.tmpDir, "extension-seed.kubeconfig"),
		gardenKubeconfig:        filepath.Join(b.tmpDir, "extension-garden.kubeconfig"),
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
	return sandbox.BuildExtension(ctx, ".", b.extArgs.binary)
}

func (b *bench) setup(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join("cmd", "gardener-extension-shoot-flux")); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	if err := b.buildExtension(ctx); err != nil {
		return err
	}

	var err error
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
	if err := b.writeExtensionKubeconfigs(); err != nil {
		return err
	}
	// The sandbox's host policy lets the extension scan the local git server. The shoots follow
	// the operator's default, the oldest embedded Flux minor until defaultMoved moves it.
	cfg := b.extensionConfig()
	cfg.DefaultFluxVersion = semver.MajorMinor(manifests.FluxVersions()[0])
	if err := sandbox.WriteControllerConfiguration(b.extArgs.configPath, &cfg); err != nil {
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
	window := time.Now().UTC().Add(12 * time.Hour)
	err := parallel(ctx, b.opts.shoots, b.opts.createParallelism, func(ctx context.Context, i int) error {
		h, err := b.sb.CreateShoot(ctx, sandbox.ShootSpec{
			Project:            b.projects[i%len(b.projects)],
			Name:               fmt.Sprintf("s%04d", i),
			DeferExtension:     true,
			SharedControlPlane: true,
			// Hours away: a change of the operator's default waits for it (defaultMoved).
			MaintenanceWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: window.Format("150405") + "+0000", End: window.Add(time.Hour).Format("150405") + "+0000"},
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

// heapTopN is how many functions the report names for the heap.
const heapTopN = 5

func (b *bench) close() error {
	var errs []error
	if b.ext != nil {
		errs = append(errs, b.ext.stop())
	}
	if b.stopTracker != nil {
		b.stopTracker()
	}
	if b.stopAuthorize != nil {
		b.stopAuthorize()
	}
	b.hung.close()
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

// writeExtensionKubeconfigs writes the sandbox's admin kubeconfigs, and the extension's own for
// the garden and the seed (extensionUser).
func (b *bench) writeExtensionKubeconfigs() error {
	if err := b.sb.WriteKubeconfigs(b.tmpDir); err != nil {
		return err
	}
	if err := b.sb.Seed.WriteUserKubeconfig(b.extArgs.seedKubeconfig, extensionUser, "system:masters"); err != nil {
		return err
	}
	return b.sb.Garden.WriteUserKubeconfig(b.extArgs.gardenKubeconfig, extensionUser, "system:masters")
}
