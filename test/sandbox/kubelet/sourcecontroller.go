// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

var (
	// SourceControllerStopTimeout bounds the graceful stop of a source-controller process.
	SourceControllerStopTimeout = 10 * time.Second
	// SourceControllerLogTail is how much of the end of its log SourceController.Logs returns.
	SourceControllerLogTail = 16 * 1024
)

// SourceController is a Flux source-controller process running against a shoot's API server, the
// part of the GitOps controllers a sandbox shoot can run: it fetches git repositories and needs no
// kubelet. It runs next to the Deployment delivered into the shoot, which only runs in a shoot
// with sandbox.ShootSpec.RunControllers.
type SourceController struct {
	// StorageAddress is where the controller serves the artifacts it fetched.
	StorageAddress string

	process *Process
	dir     string
	logPath string
	logFile *os.File

	stopOnce sync.Once
	stopErr  error
}

func StartSourceController(ctx context.Context, bin, dir string, shoot *cluster.Cluster) (*SourceController, error) {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := shoot.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	storage := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	storagePath := filepath.Join(dir, "storage")
	if err := os.Mkdir(storagePath, 0o700); err != nil {
		return nil, fmt.Errorf("failed creating source-controller storage: %w", err)
	}
	sc := &SourceController{StorageAddress: storage, dir: dir, logPath: filepath.Join(dir, "source-controller.log")}
	if sc.logFile, err = os.Create(sc.logPath); err != nil {
		return nil, fmt.Errorf("failed creating source-controller log: %w", err)
	}

	// The process must outlive the caller's context; Stop ends it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), bin,
		"--storage-path="+storagePath,
		"--storage-addr="+storage,
		"--storage-adv-addr="+storage,
		"--metrics-addr=0",
		"--health-addr=0",
		"--enable-leader-election=false",
		"--watch-all-namespaces=true",
		"--concurrent=2",
		"--log-level=debug",
		"--log-encoding=console",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE=flux-system")
	cmd.Stdout, cmd.Stderr = sc.logFile, sc.logFile
	if sc.process, err = StartProcess(cmd); err != nil {
		return nil, errors.Join(err, sc.logFile.Close())
	}
	return sc, nil
}

// Exited tells whether the process has ended.
func (sc *SourceController) Exited() bool { return sc.process.Exited() }

// ExitErr returns how the process ended; nil while it runs or after a clean exit.
func (sc *SourceController) ExitErr() error { return sc.process.ExitErr() }

// Logs returns the end of the controller's log.
func (sc *SourceController) Logs() string {
	return logTail(sc.logPath, SourceControllerLogTail)
}

// Stop terminates the process, killing it if it does not stop in time, and removes its files.
// Later calls return the result of the first.
func (sc *SourceController) Stop() error {
	sc.stopOnce.Do(func() {
		sc.process.Terminate(SourceControllerStopTimeout)
		sc.stopErr = errors.Join(sc.logFile.Close(), os.RemoveAll(sc.dir))
	})
	return sc.stopErr
}
