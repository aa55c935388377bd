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
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

var (
	// stopTimeout bounds the graceful stop of the extension before it is killed.
	stopTimeout = 30 * time.Second
	// httpTimeout bounds one request to the extension's metrics or profiling endpoint.
	httpTimeout = 10 * time.Second
)

// extensionProcess is the extension binary running against the sandbox.
type extensionProcess struct {
	process     *kubelet.Process
	metricsAddr string
	healthAddr  string
	pprofAddr   string
	logFile     *os.File
	started     time.Time
}

// extensionArgs are the settings the extension runs with.
type extensionArgs struct {
	binary                  string
	seedKubeconfig          string
	gardenKubeconfig        string
	configPath              string
	maxConcurrentReconciles int
	clientQPS               float64
	logPath                 string
	// env is added to the benchmark's environment, e.g. GOMEMLIMIT=100MiB.
	env []string
}

// startExtension starts the binary; the caller waits for readiness with waitReady.
func startExtension(ctx context.Context, a extensionArgs) (*extensionProcess, error) {
	metricsPort, err := kubelet.FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := kubelet.FreePort()
	if err != nil {
		return nil, err
	}
	pprofPort, err := kubelet.FreePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed opening extension log: %w", err)
	}
	p := &extensionProcess{
		metricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		healthAddr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort)),
		pprofAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(pprofPort)),
		logFile:     logFile,
	}
	// The process must outlive the caller's context; stop ends it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), a.binary,
		"--kubeconfig="+a.seedKubeconfig,
		"--garden-kubeconfig="+a.gardenKubeconfig,
		"--config="+a.configPath,
		"--leader-election=false",
		"--heartbeat-namespace=garden",
		"--max-concurrent-reconciles="+strconv.Itoa(a.maxConcurrentReconciles),
		"--client-qps="+strconv.FormatFloat(a.clientQPS, 'g', -1, 64),
		"--client-burst="+strconv.Itoa(int(math.Ceil(1.3*a.clientQPS))),
		// gardenlet drives the Extensions with the operation annotation; see createExtensions.
		"--ignore-operation-annotation=false",
		"--metrics-bind-address="+p.metricsAddr,
		"--health-bind-address="+p.healthAddr,
		"--pprof-bind-address="+p.pprofAddr,
	)
	cmd.Env = append(os.Environ(), a.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A separate process group keeps an interrupt of the benchmark from reaching the extension
	// before the benchmark has stopped it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.process, err = kubelet.StartProcess(cmd); err != nil {
		return nil, errors.Join(fmt.Errorf("failed starting the extension: %w", err), logFile.Close())
	}
	p.started = time.Now()
	return p, nil
}

// waitReady waits until the extension's readiness checks (its caches are synced) pass and returns
// how long the start took.
func (p *extensionProcess) waitReady(ctx context.Context) (time.Duration, error) {
	exited := func() (bool, error) { return p.process.Exited(), p.process.ExitErr() }
	if err := kubelet.WaitReady(ctx, p.healthAddr, exited); err != nil {
		return 0, fmt.Errorf("the extension (log: %s): %w", p.logFile.Name(), err)
	}
	return time.Since(p.started), nil
}

// scrape reads the extension's Prometheus metrics.
func (p *extensionProcess) scrape(ctx context.Context) (metrics, error) {
	data, err := fetch(ctx, "http://"+p.metricsAddr+"/metrics", "metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(data))
}

// heapProfile fetches the extension's heap profile and writes it to path.
func (p *extensionProcess) heapProfile(ctx context.Context, path string) (*profile.Profile, error) {
	data, err := fetch(ctx, "http://"+p.pprofAddr+"/debug/pprof/heap", "heap profile")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("failed writing the heap profile: %w", err)
	}
	prof, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("failed parsing the heap profile: %w", err)
	}
	return prof, nil
}

// fetch reads one of the extension's HTTP endpoints; what names it in errors.
func fetch(ctx context.Context, url, what string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: httpTimeout}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed fetching the extension's %s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the extension's %s: status %s", what, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("failed reading the extension's %s: %w", what, err)
	}
	return data, nil
}

// memory reads the resident memory of the process.
func (p *extensionProcess) memory() (kubelet.Memory, error) {
	return kubelet.ProcessMemory(p.process.Pid())
}

// stop terminates the extension gracefully and kills it if it does not stop in time.
func (p *extensionProcess) stop() error {
	if p == nil {
		return nil
	}
	p.process.Terminate(stopTimeout)
	return p.logFile.Close()
}
