// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Process is a started child process whose end is observed in the background, so that callers
// can ask whether it is still running without blocking.
type Process struct {
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// StartProcess starts cmd.
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failed starting %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.waitErr = cmd.Wait()
	}()
	return p, nil
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited tells whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr returns how the process ended; nil while it runs or after a clean exit.
func (p *Process) ExitErr() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// Terminate asks the process to stop with SIGTERM and kills it if it has not ended after timeout.
// It returns when the process has ended.
func (p *Process) Terminate(timeout time.Duration) {
	p.TerminateUnless(timeout, nil)
}

// TerminateUnless is Terminate, but kills the process as soon as abort is closed.
func (p *Process) TerminateUnless(timeout time.Duration, abort <-chan struct{}) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return
	case <-timer.C:
	case <-abort:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// handedOut are the ports FreePort returned in this process.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePort returns a TCP port on the loopback interface that was free a moment ago.
//
// A port is returned once per process: the kernel may hand a port that was just closed out again,
// and two controllers started one after the other would then both be given it before the first
// binds it (seen as "bind: address already in use" and a crash-looping controller).
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("failed finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("failed releasing port %d: %w", port, err)
		}
		handedOutMu.Lock()
		fresh := !handedOut[port]
		handedOut[port] = true
		handedOutMu.Unlock()
		if fresh {
			return port, nil
		}
	}
	return 0, fmt.Errorf("failed finding a free port that was not handed out before")
}
