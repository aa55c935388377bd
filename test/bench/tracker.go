// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
)

var (
	// trackerSyncTimeout bounds the start of the tracker's informers.
	trackerSyncTimeout = time.Minute
	// trackerPollInterval is how often a wait checks the tracked state.
	trackerPollInterval = 100 * time.Millisecond
)

// tracker follows all Extensions and ManagedResources of the seed through informers and records,
// per phase of the benchmark, when each Extension finished an operation started in the phase and
// when each ManagedResource was written and applied.
type tracker struct {
	mu         sync.Mutex
	phaseStart time.Time
	// wantRef, if set, is the providerStatus.ref the phase waits for.
	wantRef    string
	extensions map[string]*extensionState
	mrs        map[string]*mrState
	// lastError is the description of the last error an Extension reported in the phase.
	lastError string
}

type extensionState struct {
	processing bool
	lastState  gardencorev1beta1.LastOperationState
	succeeded  time.Time
	errors     int
	refReached time.Time
}

type mrState struct {
	secretRefs []string
	written    time.Time
	applied    time.Time
}

func newTracker() *tracker {
	return &tracker{extensions: map[string]*extensionState{}, mrs: map[string]*mrState{}}
}

// start runs the informers until ctx ends.
func (t *tracker) start(ctx context.Context, seed *rest.Config) error {
	c, err := cache.New(seed, cache.Options{Scheme: kubernetes.SeedScheme})
	if err != nil {
		return fmt.Errorf("failed creating tracker cache: %w", err)
	}
	exInformer, err := c.GetInformer(ctx, &extensionsv1alpha1.Extension{})
	if err != nil {
		return fmt.Errorf("failed getting extension informer: %w", err)
	}
	if _, err := exInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observeExtension(obj) },
		UpdateFunc: func(_, obj any) { t.observeExtension(obj) },
	}); err != nil {
		return fmt.Errorf("failed watching extensions: %w", err)
	}
	mrInformer, err := c.GetInformer(ctx, &resourcesv1alpha1.ManagedResource{})
	if err != nil {
		return fmt.Errorf("failed getting managed resource informer: %w", err)
	}
	if _, err := mrInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observeManagedResource(obj) },
		UpdateFunc: func(_, obj any) { t.observeManagedResource(obj) },
	}); err != nil {
		return fmt.Errorf("failed watching managed resources: %w", err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, trackerSyncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the tracker's informers did not sync within %s", trackerSyncTimeout)
	}
	return nil
}

// begin starts a phase: only what happens from now on counts. wantRef, if set, is the
// providerStatus.ref the Extensions are expected to reach.
func (t *tracker) begin(wantRef string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.phaseStart = time.Now()
	t.wantRef = wantRef
	t.lastError = ""
	for _, s := range t.extensions {
		s.processing, s.succeeded, s.errors, s.refReached = false, time.Time{}, 0, time.Time{}
	}
	for _, s := range t.mrs {
		s.written, s.applied = time.Time{}, time.Time{}
	}
	return t.phaseStart
}

func (t *tracker) observeExtension(obj any) {
	ex, ok := obj.(*extensionsv1alpha1.Extension)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.extensions[ex.Namespace]
	if s == nil {
		s = &extensionState{}
		t.extensions[ex.Namespace] = s
	}
	if op := ex.Status.LastOperation; op != nil {
		switch op.State {
		case gardencorev1beta1.LastOperationStateProcessing:
			s.processing = true
		case gardencorev1beta1.LastOperationStateError, gardencorev1beta1.LastOperationStateFailed:
			if s.lastState != op.State {
				s.errors++
				if ex.Status.LastError != nil {
					t.lastError = ex.Namespace + ": " + ex.Status.LastError.Description
				}
			}
		case gardencorev1beta1.LastOperationStateSucceeded:
			// An operation counts if it started in this phase and nothing is pending any more.
			if s.processing && s.succeeded.IsZero() && ex.Status.ObservedGeneration == ex.Generation &&
				ex.Annotations[v1beta1constants.GardenerOperation] == "" {
				s.succeeded = now
			}
		}
		s.lastState = op.State
	}
	if t.wantRef != "" && s.refReached.IsZero() && providerStatusRef(ex) == t.wantRef {
		s.refReached = now
	}
}

func providerStatusRef(ex *extensionsv1alpha1.Extension) string {
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil || status == nil {
		return ""
	}
	return status.Ref
}

func (t *tracker) observeManagedResource(obj any) {
	mr, ok := obj.(*resourcesv1alpha1.ManagedResource)
	if !ok {
		return
	}
	refs := make([]string, 0, len(mr.Spec.SecretRefs))
	for _, r := range mr.Spec.SecretRefs {
		refs = append(refs, r.Name)
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	key := mr.Namespace + "/" + mr.Name
	s := t.mrs[key]
	if s == nil {
		// Created in this phase.
		s = &mrState{secretRefs: refs, written: now}
		t.mrs[key] = s
	} else if !slices.Equal(s.secretRefs, refs) {
		s.secretRefs, s.written, s.applied = refs, now, time.Time{}
	}
	if !s.written.IsZero() && s.applied.IsZero() && health.CheckManagedResourceApplied(mr) == nil {
		s.applied = now
	}
}

// phaseResult summarises a phase for a set of seed namespaces.
type phaseResult struct {
	// Started counts the Extensions whose operation started in the phase; Succeeded, Reached,
	// Written and Applied count the shoots (or ManagedResources) done.
	Started, Succeeded, Reached, Written, Applied int
	// Errors counts Error states of the Extensions; LastError describes the last one.
	Errors    int
	LastError string
	// LastSucceeded, LastReached, LastWritten and LastApplied are the times after the phase
	// start at which the last one was done.
	LastSucceeded, LastReached, LastWritten, LastApplied time.Duration
	// Latencies are the times after the phase start at which each Extension succeeded, sorted.
	Latencies []time.Duration
	// ApplyLatencies are, per ManagedResource name, the times from writing a ManagedResource to
	// the resource manager reporting it applied, sorted.
	ApplyLatencies map[string][]time.Duration
}

func (t *tracker) result(namespaces []string, mrNames []string) phaseResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := phaseResult{ApplyLatencies: map[string][]time.Duration{}, LastError: t.lastError}
	for _, ns := range namespaces {
		s := t.extensions[ns]
		if s == nil {
			continue
		}
		r.Errors += s.errors
		if s.processing {
			r.Started++
		}
		if !s.succeeded.IsZero() {
			r.Succeeded++
			d := s.succeeded.Sub(t.phaseStart)
			r.Latencies = append(r.Latencies, d)
			r.LastSucceeded = max(r.LastSucceeded, d)
		}
		if !s.refReached.IsZero() {
			r.Reached++
			r.LastReached = max(r.LastReached, s.refReached.Sub(t.phaseStart))
		}
		for _, name := range mrNames {
			m := t.mrs[ns+"/"+name]
			if m == nil || m.written.IsZero() {
				continue
			}
			r.Written++
			r.LastWritten = max(r.LastWritten, m.written.Sub(t.phaseStart))
			if !m.applied.IsZero() {
				r.Applied++
				r.LastApplied = max(r.LastApplied, m.applied.Sub(t.phaseStart))
				r.ApplyLatencies[name] = append(r.ApplyLatencies[name], m.applied.Sub(m.written))
			}
		}
	}
	slices.Sort(r.Latencies)
	for _, l := range r.ApplyLatencies {
		slices.Sort(l)
	}
	return r
}

// wait polls the phase result until done says so, ctx ends or the timeout expires.
func (t *tracker) wait(ctx context.Context, timeout time.Duration, namespaces, mrNames []string, done func(phaseResult) bool) (phaseResult, error) {
	var r phaseResult
	err := wait.PollUntilContextTimeout(ctx, trackerPollInterval, timeout, true, func(context.Context) (bool, error) {
		r = t.result(namespaces, mrNames)
		return done(r), nil
	})
	return r, err
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// succeeded returns when the namespace's Extension succeeded in the phase; zero while not.
func (t *tracker) succeeded(namespace string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.extensions[namespace]; s != nil {
		return s.succeeded
	}
	return time.Time{}
}

// managedResourceTimes returns when the namespace's ManagedResource of that name was last written
// with new content and when the resource manager reported that content applied; zero while not.
func (t *tracker) managedResourceTimes(namespace, name string) (written, applied time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m := t.mrs[namespace+"/"+name]; m != nil {
		return m.written, m.applied
	}
	return time.Time{}, time.Time{}
}
