// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command record-metrics records the real metrics of the delivered controllers and the extension,
// healthy and failing, scraped as the shoot's Prometheus scrapes them, as test data for the alert
// rules' tests: `make record-metrics` (go run ./test/sandbox/record-metrics -out test/promrules/samples).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

func main() {
	out := flag.String("out", "test/promrules/samples", "directory the samples are written to")
	timeout := flag.Duration("timeout", 12*time.Minute, "bound of the whole recording")
	deployed := flag.Bool("deployed", true, "run the extension as deployed (sandbox Options.Deployed): its /metrics is the binary's alone, with the heartbeat of the leader, as the seed's Prometheus scrapes it; false runs it in this process, whose registry it shares with the sandbox's controllers")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *out, *deployed); err != nil {
		fmt.Fprintln(os.Stderr, "record-metrics:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, deployed bool) (err error) {
	if err := cluster.RequireAssets(); err != nil {
		return err
	}
	flux, kluctl, err := kubelet.ControllersFromEnv()
	if err != nil {
		return err
	}
	if len(flux) == 0 || len(kluctl) == 0 {
		return fmt.Errorf("%s and %s must name the controller binaries", kubelet.FluxControllersEnv, kubelet.KluctlControllersEnv)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("failed creating %s: %w", out, err)
	}

	work, err := os.MkdirTemp("", "shoot-flux-record-metrics-")
	if err != nil {
		return fmt.Errorf("failed creating a work directory: %w", err)
	}
	logPath := filepath.Join(work, "sandbox.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("failed creating the log: %w", err)
	}
	defer func() {
		_ = logFile.Close()
		if err != nil {
			err = fmt.Errorf("%w (sandbox log: %s)", err, logPath)
			return
		}
		err = os.RemoveAll(work)
	}()
	log := logzap.New(logzap.WriteTo(logFile), logzap.UseDevMode(true))
	logf.SetLogger(log)
	progress := func(msg string) { fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format(time.TimeOnly), msg) }

	repos := filepath.Join(work, "repos")
	for _, repo := range []string{fluxRepo, kluctlRepo} {
		if _, err := gitserver.NewKluctlProjectRepo(filepath.Join(repos, repo)); err != nil {
			return err
		}
	}
	git, err := gitserver.Start(gitserver.Options{RepoRoot: repos})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, git.Close()) }()

	progress("starting the sandbox (log: " + logPath + ")")
	sb, err := sandbox.Start(ctx, sandbox.Options{FluxControllers: flux, KluctlControllers: kluctl, HealthCheck: true, Deployed: deployed, Log: log})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sb.Stop()) }()

	r := &recorder{sb: sb, git: git, repos: repos, out: out, log: log, progress: progress, labels: map[string]map[string]bool{}, reconciles: map[string]float64{}}
	if err := r.record(ctx); err != nil {
		return err
	}
	return r.writeLabels()
}

// recorder drives the shoots and writes the samples.
type recorder struct {
	sb       *sandbox.Sandbox
	git      *gitserver.Server
	repos    string
	out      string
	log      logr.Logger
	progress func(string)
	// labels are the label names of every family written, over all files.
	labels map[string]map[string]bool
	// reconciles are the reconciles of the bootstrap object in the last sample of each Flux
	// controller (see settled).
	reconciles map[string]float64
}
