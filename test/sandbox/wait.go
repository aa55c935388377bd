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

// An Extension's lastOperation only says how the latest operation ended, not which trigger it
// answered. The waits therefore follow a watch from a checkpoint (a resourceVersion of the
// Extension taken before the trigger) and accept a result only after they saw the operation start
// (state Processing) behind it. The helpers that trigger operations set the checkpoint themselves.

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
}

func (h *ShootHandle) getSince() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since
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
	err := h.watchExtension(ctx, timeout, func(ex *extensionsv1alpha1.Extension) (bool, error) {
		op := ex.Status.LastOperation
		if ex.Status.LastError != nil {
			lastErr = ex.Status.LastError
		}
		if op == nil || (opType != "" && op.Type != opType) {
			return false, nil
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
	return result, nil
}

// WaitError waits until an operation started after the checkpoint ended in an error and returns
// the error the extension reported.
func (h *ShootHandle) WaitError(ctx context.Context, timeout time.Duration) (*gardencorev1beta1.LastError, error) {
	var (
		started bool
		result  *gardencorev1beta1.LastError
	)
	err := h.watchExtension(ctx, timeout, func(ex *extensionsv1alpha1.Extension) (bool, error) {
		op := ex.Status.LastOperation
		if op == nil {
			return false, nil
		}
		switch op.State {
		case gardencorev1beta1.LastOperationStateProcessing:
			started = true
		case gardencorev1beta1.LastOperationStateError, gardencorev1beta1.LastOperationStateFailed:
			if started && ex.Status.LastError != nil {
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
// fails, the Extension is deleted or the timeout expires.
func (h *ShootHandle) watchExtension(ctx context.Context, timeout time.Duration, fn func(*extensionsv1alpha1.Extension) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	rv := h.getSince()
	for {
		w, err := h.sandbox.Seed.Client.Watch(ctx, &extensionsv1alpha1.ExtensionList{}, &client.ListOptions{
			Namespace:     h.SeedNamespace,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", ExtensionName),
			Raw:           &metav1.ListOptions{ResourceVersion: rv},
		})
		if err != nil {
			return fmt.Errorf("failed watching extension: %w", err)
		}
		done, err := consume(w, fn, &rv)
		w.Stop()
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The API server ends watches after a while; resume where this one stopped.
	}
}

func consume(w watch.Interface, fn func(*extensionsv1alpha1.Extension) (bool, error), rv *string) (bool, error) {
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return false, fmt.Errorf("watch failed: %w", apierrors.FromObject(ev.Object))
		case watch.Bookmark:
			continue
		}
		ex, ok := ev.Object.(*extensionsv1alpha1.Extension)
		if !ok {
			return false, fmt.Errorf("unexpected object %T in extension watch", ev.Object)
		}
		*rv = ex.ResourceVersion
		if ev.Type == watch.Deleted {
			return false, errors.New("the extension was deleted")
		}
		if done, err := fn(ex); done || err != nil {
			return done, err
		}
	}
	return false, nil
}

func describe(lastErr *gardencorev1beta1.LastError) string {
	if lastErr == nil {
		return ""
	}
	return ": last error: " + lastErr.Description
}
