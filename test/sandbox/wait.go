// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lastOperation does not say which trigger it answered, so the waits watch from a checkpoint taken
// before the trigger and accept a result only after the operation started behind it; after an API
// server restart forgot the checkpoint, a lastUpdateTime after it counts as started.

// Checkpoint makes the next wait consider only what happens to the Extension from now on. Call it
// before changing something the extension reacts to that is not changed through the handle, e.g.
// the project ConfigMap or a deploy key Secret.
func (h *ShootHandle) Checkpoint(ctx context.Context) error {
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	h.setSince(ex.ResourceVersion)
	return nil
}

func (h *ShootHandle) setSince(rv string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = rv
	// lastUpdateTime has a resolution of seconds.
	h.sinceTime = time.Now().Truncate(time.Second)
}

func (h *ShootHandle) getSince() (string, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since, h.sinceTime
}

// startedSince tells whether an operation seen only after a re-read started after the checkpoint.
// An operation in the second of the checkpoint is not taken: waiting for the next one is better
// than accepting the result of an earlier one.
func startedSince(op *gardencorev1beta1.LastOperation, since time.Time) bool {
	return op != nil && op.LastUpdateTime.After(since)
}

// WaitSucceeded waits until an operation started after the checkpoint succeeded for the current
// generation and no operation annotation is pending. Errors of intermediate attempts are retried
// by the extension; if none succeeds in time, the last error is returned.
func (h *ShootHandle) WaitSucceeded(ctx context.Context, timeout time.Duration) (*extensionsv1alpha1.Extension, error) {
	return h.wait(ctx, timeout, "")
}

func (h *ShootHandle) wait(ctx context.Context, timeout time.Duration, opType gardencorev1beta1.LastOperationType) (*extensionsv1alpha1.Extension, error) {
	var (
		started bool
		result  *extensionsv1alpha1.Extension
		lastErr *gardencorev1beta1.LastError
	)
	err := h.watchExtension(ctx, timeout, func(ex *extensionsv1alpha1.Extension, reread bool, since time.Time) (bool, error) {
		op := ex.Status.LastOperation
		if ex.Status.LastError != nil {
			lastErr = ex.Status.LastError
		}
		if opType == gardencorev1beta1.LastOperationTypeRestore && restoreRequestDropped(ex) {
			// A second migrate run of gardener's extension library (from a stale cache) removes
			// the restore annotation set meanwhile; gardenlet's flow annotates again, so does this.
			h.log.Info("Asking for the restore again: a late migrate run removed the request")
			if err := h.annotateExtension(ctx, v1beta1constants.GardenerOperationRestore); err != nil {
				return false, err
			}
			return false, nil
		}
		if op == nil || (opType != "" && op.Type != opType) {
			return false, nil
		}
		if reread && startedSince(op, since) {
			started = true
		}
		switch op.State {
		case gardencorev1beta1.LastOperationStateProcessing:
			started = true
		case gardencorev1beta1.LastOperationStateFailed:
			if started {
				return false, fmt.Errorf("%s operation of %s failed%s", op.Type, h.SeedNamespace, describe(lastErr))
			}
		case gardencorev1beta1.LastOperationStateSucceeded:
			if started && ex.Status.ObservedGeneration == ex.Generation && ex.Annotations[v1beta1constants.GardenerOperation] == "" {
				result = ex
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		what := "an operation"
		if opType != "" {
			what = string(opType)
		}
		return nil, fmt.Errorf("extension of %s did not complete %s within %s%s: %w", h.SeedNamespace, what, timeout, describe(lastErr), err)
	}
	if err := h.finishShootOperation(ctx); err != nil {
		return nil, err
	}
	return result, nil
}

// restoreRequestDropped tells whether an Extension that was migrated lost the restore request
// before a restore started.
func restoreRequestDropped(ex *extensionsv1alpha1.Extension) bool {
	op := ex.Status.LastOperation
	return op != nil && op.Type == gardencorev1beta1.LastOperationTypeMigrate && op.State == gardencorev1beta1.LastOperationStateSucceeded &&
		ex.Annotations[v1beta1constants.GardenerOperation] == ""
}

// WaitError waits until an operation started after the checkpoint ended in an error and returns
// the error the extension reported.
func (h *ShootHandle) WaitError(ctx context.Context, timeout time.Duration) (*gardencorev1beta1.LastError, error) {
	var (
		started bool
		result  *gardencorev1beta1.LastError
	)
	err := h.watchExtension(ctx, timeout, func(ex *extensionsv1alpha1.Extension, reread bool, since time.Time) (bool, error) {
		op := ex.Status.LastOperation
		if op == nil {
			return false, nil
		}
		if reread && startedSince(op, since) {
			started = true
		}
		switch op.State {
		case gardencorev1beta1.LastOperationStateProcessing:
			started = true
		case gardencorev1beta1.LastOperationStateError, gardencorev1beta1.LastOperationStateFailed:
			// A retry of an earlier failed reconcile can start after the checkpoint and still read
			// the Extension from before the change; its error is for an older generation.
			if started && ex.Status.LastError != nil && ex.Status.ObservedGeneration == ex.Generation {
				result = ex.Status.LastError
				return true, nil
			}
		case gardencorev1beta1.LastOperationStateSucceeded:
			if started && ex.Status.ObservedGeneration == ex.Generation {
				return false, fmt.Errorf("the operation succeeded")
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("extension of %s reported no error within %s: %w", h.SeedNamespace, timeout, err)
	}
	return result, nil
}

// watchExtension calls fn for every state of the Extension after the checkpoint until fn is done,
// fails, the Extension is deleted or the timeout expires; reread says states may have been missed.
// Only the timeout bounds it: on a busy seed a watch may end at once many times in a row.
func (h *ShootHandle) watchExtension(ctx context.Context, timeout time.Duration, fn func(ex *extensionsv1alpha1.Extension, reread bool, since time.Time) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	rv, since := h.getSince()
	for {
		watchStart := time.Now()
		// Each watch lasts at most WatchRenewal: one on a connection that went bad while the seed
		// API server restarted would otherwise wait for the whole timeout.
		wctx, wcancel := context.WithTimeout(ctx, WatchRenewal)
		w, err := h.sandbox.Seed.Client.Watch(wctx, &extensionsv1alpha1.ExtensionList{}, &client.ListOptions{
			Namespace:     h.SeedNamespace,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", ExtensionName),
			// Bookmarks keep rv current while the Extension itself does not change.
			Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true},
		})
		if err != nil {
			wcancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// An API server that is not reachable yet, e.g. right after a restart.
			if sleepErr := Sleep(ctx, PollInterval); sleepErr != nil {
				return fmt.Errorf("failed watching extension: %w", err)
			}
			continue
		}
		done, err := consume(w, func(ex *extensionsv1alpha1.Extension) (bool, error) { return fn(ex, false, since) }, &rv)
		w.Stop()
		wcancel()
		if errors.Is(err, errWatchLost) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ex *extensionsv1alpha1.Extension
			// Resuming from the list's resourceVersion, not the Extension's: the latter may be
			// older than anything the watch cache still has.
			ex, rv, err = h.extensionAndListVersion(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
			done, err = fn(ex, true, since)
		}
		if done || err != nil {
			return err
		}
		if time.Since(watchStart) < PollInterval {
			if err := Sleep(ctx, PollInterval); err != nil {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// WatchExtension calls fn for every state of the Extension from the checkpoint on until fn is
// done or fails, or d has passed; the end of d is not an error. reread tells fn that states in
// between may be missing.
func (h *ShootHandle) WatchExtension(ctx context.Context, d time.Duration, fn func(ex *extensionsv1alpha1.Extension, reread bool) (bool, error)) error {
	err := h.watchExtension(ctx, d, func(ex *extensionsv1alpha1.Extension, reread bool, _ time.Time) (bool, error) {
		return fn(ex, reread)
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil
	}
	return err
}

// extensionAndListVersion reads the Extension with a list, whose resourceVersion is the current
// one of the whole collection.
func (h *ShootHandle) extensionAndListVersion(ctx context.Context) (*extensionsv1alpha1.Extension, string, error) {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := h.sandbox.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", ExtensionName)}); err != nil {
		return nil, "", fmt.Errorf("failed reading extension of %s: %w", h.SeedNamespace, err)
	}
	if len(list.Items) == 0 {
		return nil, "", errors.New("the extension was deleted")
	}
	return &list.Items[0], list.ResourceVersion, nil
}

// errWatchLost means the watch can no longer deliver every change from its resourceVersion on,
// e.g. because the resourceVersion is too old (410 Gone) or the API server restarted.
var errWatchLost = errors.New("watch lost track of the extension")

func consume(w watch.Interface, fn func(*extensionsv1alpha1.Extension) (bool, error), rv *string) (bool, error) {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return false, fmt.Errorf("%w: %w", errWatchLost, apierrors.FromObject(ev.Object))
		}
		ex, ok := ev.Object.(*extensionsv1alpha1.Extension)
		if !ok {
			return false, fmt.Errorf("unexpected object %T in extension watch", ev.Object)
		}
		*rv = ex.ResourceVersion
		switch ev.Type {
		case watch.Bookmark:
			continue
		case watch.Deleted:
			return false, errors.New("the extension was deleted")
		}
		if done, err := fn(ex); done || err != nil {
			return done, err
		}
	}
	return false, nil
}

// Sleep waits for d or until ctx ends, whichever comes first, and returns ctx's error in the
// second case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func describe(lastErr *gardencorev1beta1.LastError) string {
	if lastErr == nil {
		return ""
	}
	return ": last error: " + lastErr.Description
}
