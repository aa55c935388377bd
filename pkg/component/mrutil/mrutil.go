// Package mrutil holds the waiting logic shared by the extension's ManagedResource components.
package mrutil

import (
	"context"
	"fmt"
	"slices"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timeouts bound the waits of a ManagedResource component; zero values fall back to the
// component's package defaults.
type Timeouts struct {
	Applied time.Duration
	Deleted time.Duration
}

// Or returns t with zero values replaced by the given defaults.
func (t Timeouts) Or(applied, deleted time.Duration) Timeouts {
	if t.Applied == 0 {
		t.Applied = applied
	}
	if t.Deleted == 0 {
		t.Deleted = deleted
	}
	return t
}

// PollInterval is how often a ManagedResource is re-read while waiting. Reads hit the manager's
// cache, so a short interval costs no API requests and shortens every reconcile.
var PollInterval = 250 * time.Millisecond

// WaitUntilApplied waits until gardener-resource-manager has applied the current generation of the
// ManagedResource. It deliberately does not wait for the objects to become healthy: health is
// reported asynchronously and must not block a reconcile for minutes.
//
// secretName, if set, is the Secret the caller just wrote into the ManagedResource: a cached reader
// may still return the previous, applied generation right after the write, so only a
// ManagedResource that references the new Secret counts.
func WaitUntilApplied(ctx context.Context, reader client.Reader, namespace, name, secretName string, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			lastErr = err
			return false, client.IgnoreNotFound(err)
		}
		if secretName != "" && !slices.ContainsFunc(mr.Spec.SecretRefs, func(ref corev1.LocalObjectReference) bool { return ref.Name == secretName }) {
			lastErr = fmt.Errorf("the ManagedResource does not reference Secret %s yet", secretName)
			return false, nil
		}
		if err := health.CheckManagedResourceApplied(mr); err != nil {
			lastErr = err
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			return fmt.Errorf("managed resource %s/%s was not applied within %s: %w", namespace, name, timeout, lastErr)
		}
		return fmt.Errorf("managed resource %s/%s was not applied within %s: %w", namespace, name, timeout, err)
	}
	return nil
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

func deletionMessage(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied && c.Message != "" {
			return " (" + c.Message + ")"
		}
	}
	return ""
}
