// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// runner runs a controller manager in the background until it is stopped.
type runner struct {
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error
}

// newRunner returns a runner whose context outlives the caller's context (often a single test
// step): only stop ends it. Controllers that keep a context for their lifetime get runner.ctx.
func newRunner(ctx context.Context, name string) *runner {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &runner{name: name, ctx: runCtx, cancel: cancel, done: make(chan struct{})}
}

// startManager starts mgr and waits until its caches are synced, so that callers can rely on the
// controllers seeing every object created afterwards.
func startManager(ctx context.Context, log logr.Logger, name string, mgr manager.Manager) (*runner, error) {
	r := newRunner(ctx, name)
	if err := r.start(ctx, log, mgr); err != nil {
		return nil, err
	}
	return r, nil
}

// start starts mgr with the runner's context and waits for the cache sync.
func (r *runner) start(ctx context.Context, log logr.Logger, mgr manager.Manager) error {
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
	stopErr := r.stop()
	return errors.Join(fmt.Errorf("manager %s did not start within %s", name, CacheSyncTimeout), stopErr)
}

// exited tells whether the manager stopped, and with which error; see WaitReady.
func (r *runner) exited() (bool, error) {
	select {
	case <-r.done:
	default:
		return false, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return true, r.err
}

// stop cancels the manager and waits until all its runnables returned.
func (r *runner) stop() error {
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
