// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command bench measures the shoot-flux extension at scale against real API servers: it runs the
// extension binary as a separate process against a sandbox (test/sandbox) with many light shoots
// and reports wall times, API requests per reconcile, writes of a forced resync, memory, the
// propagation of a project ConfigMap change and the size of the ManagedResource data.
//
//	KUBEBUILDER_ASSETS=$(hack/build-envtest.sh) go run ./test/bench -shoots 500 -projects 10
//
// The shoots share one API server and one gardener-resource-manager (ShootSpec.SharedControlPlane),
// so the resource manager and that API server are part of what is measured; the report shows
// when the ManagedResources were written and when they were applied to tell them apart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

type options struct {
	shoots            int
	projects          int
	workers           int
	timeout           time.Duration
	out               string
	logDir            string
	createParallelism int
	settle            time.Duration
	restartSettle     time.Duration
	repository        string
	verbose           bool
	keep              bool
	rmWorkers         int
	markApplied       bool
	extensionEnv      string
	clientQPS         float64
	firstDeploy       int
	healthWindow      time.Duration
	hungShoots        int
	healthSyncPeriod  time.Duration
}

func main() {
	var o options
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.IntVar(&o.shoots, "shoots", 500, "number of shoots")
	fs.IntVar(&o.projects, "projects", 10, "number of projects the shoots are spread over")
	fs.IntVar(&o.workers, "max-concurrent-reconciles", 50, "the extension's --max-concurrent-reconciles")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "bound of the whole benchmark")
	fs.StringVar(&o.out, "out", "dev/bench-results.txt", "file the report is written to (besides stdout)")
	fs.StringVar(&o.logDir, "log-dir", "dev/bench", "directory for the extension's and the sandbox's logs")
	fs.IntVar(&o.createParallelism, "create-parallelism", 20, "concurrent requests when creating shoots and Extensions")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "wait after a phase before its requests are counted, for late writes")
	fs.DurationVar(&o.restartSettle, "restart-settle", 10*time.Second, "how long the restarted extension is watched for reconciles after it is ready")
	fs.StringVar(&o.repository, "repository", "private", "private: SSH repository with deploy keys (git server on loopback); public: HTTPS URL, no garden Secrets")
	fs.BoolVar(&o.verbose, "v", false, "log the sandbox's controllers at info level (default: errors only)")
	fs.IntVar(&o.rmWorkers, "rm-workers", sandbox.SharedResourceManagerConcurrentSyncs, "workers of the shared gardener-resource-manager")
	fs.BoolVar(&o.markApplied, "mark-applied", false, "replace the shared gardener-resource-manager by a stand-in that marks ManagedResources applied at once, to measure the extension alone")
	fs.StringVar(&o.extensionEnv, "extension-env", "", "comma-separated KEY=VALUE environment of the extension process, e.g. GOMEMLIMIT=100MiB")
	fs.Float64Var(&o.clientQPS, "client-qps", float64(fluxcmd.DefaultClientQPS), "the extension's --client-qps (its --client-burst is 1.3 times as much)")
	fs.IntVar(&o.firstDeploy, "first-deploy", 0, "instead of the scale benchmark, measure the time to first deploy of this many shoots in kluctl mode with the real controllers (e.g. 10); needs FLUX_CONTROLLERS and KLUCTL_CONTROLLERS")
	fs.DurationVar(&o.healthWindow, "health-window", 0, "how long the health checks are followed after their first round; at least 2.5 sync periods")
	fs.DurationVar(&o.healthSyncPeriod, "health-sync-period", 0, "the extension's healthCheckConfig.syncPeriod (0: its default, 1m); shorter for quick runs")
	fs.IntVar(&o.hungShoots, "hung-shoots", 3, "shoots whose API server answers only after a minute (hung) in the second health check measurement (0: none, no second measurement)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory with the API servers' audit logs and kubeconfigs")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	sandbox.SharedResourceManagerConcurrentSyncs = o.rmWorkers
	if err := o.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func validEnv(env string) bool {
	for _, kv := range strings.Split(env, ",") {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return false
		}
	}
	return true
}

func (o options) validate() error {
	switch {
	case o.firstDeploy < 0:
		return errors.New("-first-deploy must not be negative")
	case o.shoots < 1:
		return errors.New("-shoots must be at least 1")
	case o.projects < 1 || o.projects > o.shoots:
		return errors.New("-projects must be between 1 and -shoots")
	case o.workers < 1:
		return errors.New("-max-concurrent-reconciles must be at least 1")
	case o.hungShoots < 0 || o.hungShoots >= o.shoots:
		return errors.New("-hung-shoots must be between 0 and -shoots - 1")
	case o.createParallelism < 1:
		return errors.New("-create-parallelism must be at least 1")
	case o.rmWorkers < 1:
		return errors.New("-rm-workers must be at least 1")
	case o.repository != "private" && o.repository != "public":
		return errors.New("-repository must be private or public")
	case o.clientQPS <= 0:
		return errors.New("-client-qps must be positive")
	case o.extensionEnv != "" && !validEnv(o.extensionEnv):
		return errors.New("-extension-env must be KEY=VALUE pairs separated by commas")
	}
	return cluster.RequireAssets()
}

func run(ctx context.Context, o options) (err error) {
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return fmt.Errorf("failed creating log directory: %w", err)
	}
	logFile, err := os.Create(filepath.Join(o.logDir, "sandbox.log"))
	if err != nil {
		return fmt.Errorf("failed creating sandbox log: %w", err)
	}
	defer func() { err = errors.Join(err, logFile.Close()) }()
	log := logzap.New(logzap.WriteTo(logFile))
	if !o.verbose {
		// The resource manager logs every object it applies; at hundreds of shoots that costs
		// CPU the benchmark should not spend.
		log = logr.New(errorsOnly{log.GetSink()})
	}
	logf.SetLogger(log)

	b := &bench{opts: o, log: log, out: os.Stdout}
	defer func() { err = errors.Join(err, b.close()) }()
	if o.firstDeploy > 0 {
		return b.runFirstDeploy(ctx)
	}
	return b.run(ctx)
}

// step prints progress; the report is printed at the end.
func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// environment describes the machine in the report.
func environment(o options) string {
	if o.firstDeploy > 0 {
		return fmt.Sprintf("%d shoots in kluctl mode (private repository) with the real source- and kluctl-controller, --max-concurrent-reconciles=%d, %s/%s, %d CPUs, %s",
			o.firstDeploy, o.workers, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	}
	env := ""
	if o.extensionEnv != "" {
		env = ", extension environment " + o.extensionEnv
	}
	return fmt.Sprintf("%d shoots in %d projects (%s repositories), --max-concurrent-reconciles=%d, --client-qps=%g%s, %d shared resource manager workers, %s/%s, %d CPUs, %s",
		o.shoots, o.projects, o.repository, o.workers, o.clientQPS, env, o.rmWorkers, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
}

// errorsOnly is a log sink that drops info messages.
type errorsOnly struct {
	logr.LogSink
}

func (errorsOnly) Enabled(int) bool { return false }

func (e errorsOnly) WithValues(kv ...any) logr.LogSink {
	return errorsOnly{e.LogSink.WithValues(kv...)}
}

func (e errorsOnly) WithName(name string) logr.LogSink {
	return errorsOnly{e.LogSink.WithName(name)}
}
