// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timeouts bound the waits of a ManagedResource component. They come from the controller
// configuration, whose defaults are the only ones.
type Timeouts struct {
	// Applied bounds the wait for gardener-resource-manager to apply what was written.
	Applied time.Duration
	// Deleted bounds the wait for the ManagedResource to be gone.
	Deleted time.Duration
}

// PollInterval is how often a ManagedResource is re-read while waiting. Reads hit the manager's
// cache, so a short interval costs no API requests and shortens every reconcile.
var PollInterval = 250 * time.Millisecond

// ApplyFailedGrace is how long an apply failure gardener-resource-manager reports is waited out
// before the wait ends with its message, so that one tenant's broken input does not hold a worker
// until the timeout; shorter failures (a CRD not yet established) the resource manager retries
// itself. A failure of content written before counts from when it was reported, since writing it
// again triggers no new attempt.
var ApplyFailedGrace = 5 * time.Second

// ApplyFailedError is gardener-resource-manager's report that it cannot apply the ManagedResource.
type ApplyFailedError struct {
	Namespace, Name string
	// Message is the resource manager's message.
	Message string
}

func (e *ApplyFailedError) Error() string {
	return fmt.Sprintf("gardener-resource-manager cannot apply managed resource %s/%s: %s", e.Namespace, e.Name, e.Message)
}

// Write is what a Deploy wrote into a ManagedResource, for WaitUntilApplied.
type Write struct {
	// SecretName is the Secret the ManagedResource references after the write. A cached reader
	// may still return the previous generation right after the write, so only a ManagedResource
	// that references it counts. Empty accepts any.
	SecretName string
	// At is when the write happened. Zero means unknown: apply failures do not end the wait.
	At time.Time
	// UnchangedGeneration is the generation of the ManagedResource when it referenced SecretName
	// already before the write, which then changed nothing; 0 otherwise.
	UnchangedGeneration int64
	// Generation and ResourceVersion are those of the ManagedResource as the write that changed it
	// left it, empty without one. A report of the resource manager in another version of that
	// generation came after the write.
	Generation      int64
	ResourceVersion string
	// TakenOver is set when the write ended a handover. While ignored, the resource manager keeps
	// the generation it observed last and reports ResourcesApplied with reason
	// ManagedResourceIgnored, which looks applied although nothing was applied since.
	TakenOver bool
}

// WaitUntilApplied waits until gardener-resource-manager has applied the current generation of the
// ManagedResource, not until its objects are healthy: health is reported asynchronously and must
// not block a reconcile. An apply failure of what was written that lasts ApplyFailedGrace ends the
// wait with an *ApplyFailedError.
func WaitUntilApplied(ctx context.Context, reader client.Reader, namespace, name string, written Write, timeout time.Duration) error {
	var (
		lastErr error
		// The failure seen last and since when it counts: a failure whose message changes (a
		// conflict on one object, then on another, while several writers share the shoot) is
		// the resource manager still retrying, so the grace starts again.
		failedMessage string
		failedSince   time.Time
	)
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			lastErr = err
			return false, client.IgnoreNotFound(err)
		}
		if written.SecretName != "" && !slices.ContainsFunc(mr.Spec.SecretRefs, func(ref corev1.LocalObjectReference) bool { return ref.Name == written.SecretName }) {
			lastErr = fmt.Errorf("the ManagedResource does not reference Secret %s yet", written.SecretName)
			return false, nil
		}
		if message, since, failed := applyFailure(mr, written); failed && !written.At.IsZero() && !isConflict(message) {
			switch {
			case failedMessage == "" && !since.IsZero():
				failedMessage, failedSince = message, since
			case message != failedMessage:
				failedMessage, failedSince = message, time.Now()
			}
			if time.Since(failedSince) >= ApplyFailedGrace {
				return false, &ApplyFailedError{Namespace: namespace, Name: name, Message: message}
			}
		}
		if err := health.CheckManagedResourceApplied(mr); err != nil {
			lastErr = err
			return false, nil //nolint:nilerr // not applied yet: the poll goes on, lastErr tells why
		}
		if written.TakenOver && appliedReason(mr) == resourcesv1alpha1.ConditionManagedResourceIgnored {
			lastErr = errors.New("gardener-resource-manager has not applied the ManagedResource since it was ignored")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		var failed *ApplyFailedError
		if errors.As(err, &failed) {
			return failed
		}
		if lastErr != nil && wait.Interrupted(err) {
			// Both are wrapped, so that the error is recognisable as a timeout (metrics class).
			return fmt.Errorf("managed resource %s/%s was not applied within %s (%w): %w", namespace, name, timeout, err, lastErr)
		}
		return fmt.Errorf("managed resource %s/%s was not applied within %s: %w", namespace, name, timeout, err)
	}
	return nil
}

// conflictMessage starts the message of a Conflict from the API server (apimachinery's
// errors.NewConflict): the object changed between the resource manager's read and its write.
const conflictMessage = "Operation cannot be fulfilled on "

// isConflict tells an apply failure that is another writer's race, which the resource manager
// retries with its own backoff until it wins, from a failure of the content: the wait goes on to
// its timeout. Its message may stay the same for many rounds (two writers of one object), and the
// retry of an unchanged ManagedResource starts no new attempt, so ending the wait early would only
// report the race again until the resource manager's backoff ends it.
func isConflict(message string) bool {
	return strings.Contains(message, conflictMessage)
}

// applyFailure returns the resource manager's message if it reported an apply failure of what was
// written, and since when the failure counts (zero: from now). Neither the observed generation nor
// the condition's timestamps tell a failure of the written content from one of the content before;
// the version does (see docs/development/design-notes.md, "Apply failures").
func applyFailure(mr *resourcesv1alpha1.ManagedResource, written Write) (string, time.Time, bool) {
	for _, c := range mr.Status.Conditions {
		if c.Type != resourcesv1alpha1.ResourcesApplied || c.Status != gardencorev1beta1.ConditionFalse || c.Reason != resourcesv1alpha1.ConditionApplyFailed {
			continue
		}
		if mr.Status.ObservedGeneration == mr.Generation || (written.UnchangedGeneration != 0 && mr.Generation == written.UnchangedGeneration) {
			// Conditions have a resolution of seconds: the message was first reported before this.
			if reported := c.LastUpdateTime.Add(time.Second); reported.Before(written.At) {
				return c.Message, reported, true
			}
			return c.Message, written.At, true
		}
		if written.ResourceVersion != "" && mr.Generation == written.Generation && mr.ResourceVersion != written.ResourceVersion {
			return c.Message, time.Time{}, true
		}
	}
	return "", time.Time{}, false
}

// WaitUntilDeleted waits until the ManagedResource is gone, i.e. gardener-resource-manager has
// deleted its objects from the shoot (or released them when keepObjects is set).
func WaitUntilDeleted(ctx context.Context, reader client.Reader, namespace, name string, timeout time.Duration) error {
	var lastMessage string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
		lastMessage = deletionMessage(mr)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("managed resource %s/%s was not deleted within %s%s: %w", namespace, name, timeout, lastMessage, err)
	}
	return nil
}

func appliedReason(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied {
			return c.Reason
		}
	}
	return ""
}

func deletionMessage(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied && c.Message != "" {
			return " (" + c.Message + ")"
		}
	}
	return ""
}
