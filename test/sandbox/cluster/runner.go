// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var (
	// CacheSyncTimeout bounds the initial cache sync of a controller manager.
	CacheSyncTimeout = time.Minute
	// GracefulShutdownTimeout bounds how long a stopping manager waits for running reconciles.
	GracefulShutdownTimeout = 30 * time.Second
)

// Runner runs a controller manager in the background until it is stopped.
type Runner struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// NewRunner returns a runner whose context outlives the caller's context (often a single test
// step): only Stop ends it. Controllers that keep a context for their lifetime get
// Runner.Context.
func NewRunner(ctx context.Context, name string) *Runner {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &Runner{name: name, ctx: runCtx, cancel: cancel, done: make(chan struct{})}
}

// Context is the runner's context, which ends with Stop or Cancel.
func (r *Runner) Context() context.Context { return r.ctx }

// Cancel ends the runner's context, for a runner whose manager was never started.
func (r *Runner) Cancel() { r.cancel() }

// StartManager starts mgr and waits until its caches are synced, so that callers can rely on the
// controllers seeing every object created afterwards.
func StartManager(ctx context.Context, log logr.Logger, name string, mgr manager.Manager) (*Runner, error) {
	r := NewRunner(ctx, name)
	if err := r.Start(ctx, log, mgr); err != nil {
		return nil, err
	}
	return r, nil
}

// Start starts mgr with the runner's context and waits for the cache sync.
func (r *Runner) Start(ctx context.Context, log logr.Logger, mgr manager.Manager) error {
	name := r.name
	go func() {
		defer close(r.done)
		if err := mgr.Start(r.ctx); err != nil {
			log.Error(err, "Manager stopped with error", "manager", name)
			r.mu.Lock()
			r.err = err
			r.mu.Unlock()
		}
	}()

	syncCtx, cancelSync := context.WithTimeout(ctx, CacheSyncTimeout)
	defer cancelSync()
	synced := make(chan bool, 1)
	go func() { synced <- mgr.GetCache().WaitForCacheSync(syncCtx) }()
	select {
	case ok := <-synced:
		if ok {
			return nil
		}
	case <-r.done:
	}
	stopErr := r.Stop()
	return errors.Join(fmt.Errorf("manager %s did not start within %s", name, CacheSyncTimeout), stopErr)
}

// Exited tells whether the manager stopped, and with which error (see kubelet.WaitReady).
func (r *Runner) Exited() (bool, error) {
	select {
	case <-r.done:
	default:
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return true, r.err
}

// Stop cancels the manager and waits until all its runnables returned. It is a no-op on nil.
func (r *Runner) Stop() error {
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return fmt.Errorf("manager %s: %w", r.name, r.err)
	}
	return nil
}
