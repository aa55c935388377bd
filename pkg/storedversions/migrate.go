// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// Limits bound a migration; the shoot's owner decides how many objects there are.
type Limits struct {
	// MaxObjects is the most objects of one kind a migration rewrites; a kind with more fails
	// the migration before its storedVersions is trimmed.
	MaxObjects int
	// PageSize is the number of objects listed per request (metadata only). A page whose
	// response exceeds the shoot client's response limit is listed again in smaller pages.
	PageSize int64
	// Timeout bounds the whole migration.
	Timeout time.Duration
}

// DefaultLimits are the limits of the extension. 5,000 objects of a kind take 50 s at the 100
// requests per second of its shoot client, well within the two minutes, which keep a reconcile
// worker from being held for longer than an apply of the ManagedResources may take. Pages of 100
// objects' metadata fit the shoot client's response limit unless the owner inflated them.
func DefaultLimits() Limits {
	return Limits{MaxObjects: 5000, PageSize: 100, Timeout: 2 * time.Minute}
}

// Result tells what a migration did.
type Result struct {
	// Kinds are the migrated kinds, in the order of the plan.
	Kinds []Kind
}

// Kind is the migration of one CRD's objects.
type Kind struct {
	// CRD is the CRD's name.
	CRD string
	// Kind is the objects' kind.
	Kind string
	// From are the stored versions that were dropped.
	From []string
	// To is the storage version the objects were rewritten at and storedVersions now holds.
	To string
	// Objects is the number of objects rewritten.
	Objects int
}

// Error is the failure of the migration of one CRD.
type Error struct {
	// CRD and Kind name what failed.
	CRD, Kind string
	// Objects is the number of objects rewritten before the failure.
	Objects int
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("failed migrating the stored versions of CRD %s (kind %s) after %d objects: %v", e.CRD, e.Kind, e.Objects, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrTooManyObjects is the cause of a migration of a kind with more than Limits.MaxObjects.
var ErrTooManyObjects = errors.New("too many objects")

// Migrate carries out plan in the shoot's API server: per CRD it makes the live CRD store at the
// planned version, rewrites every object unchanged (the API server re-encodes on write) and trims
// status.storedVersions. It stops at the first failure, naming CRD, kind and cause, and leaves
// storedVersions as it was. c must map the kinds (RESTMapper) and bound its responses.
func Migrate(ctx context.Context, c client.Client, plan []Migration, limits Limits) (Result, error) {
	if limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limits.Timeout)
		defer cancel()
	}
	var result Result
	for _, m := range plan {
		n, err := migrate(ctx, c, m, limits)
		if err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w: %w", ctx.Err(), err)
			}
			if errors.Is(err, context.DeadlineExceeded) && limits.Timeout > 0 {
				err = fmt.Errorf("the migration exceeded its limit of %s: %w", limits.Timeout, err)
			}
			return result, &Error{CRD: m.CRD, Kind: m.Kind, Objects: n, Err: err}
		}
		result.Kinds = append(result.Kinds, Kind{CRD: m.CRD, Kind: m.Kind, From: m.Stale, To: m.StorageVersion, Objects: n})
	}
	return result, nil
}

func migrate(ctx context.Context, c client.Client, m Migration, limits Limits) (int, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: m.CRD}, crd); err != nil {
		return 0, fmt.Errorf("failed reading the CRD: %w", err)
	}
	if storage := storageVersion(*crd); storage == nil || storage.Name != m.StorageVersion {
		if err := storeAt(ctx, c, m); err != nil {
			return 0, err
		}
	}
	n, err := rewrite(ctx, c, m, limits)
	if err != nil {
		return n, err
	}
	return n, trim(ctx, c, m)
}

// storeAt makes the live CRD store at m.StorageVersion, with the desired CRD's definition of it
// if the live CRD does not have it, and keeps serving the live versions, which the running
// controllers read and write.
func storeAt(ctx context.Context, c client.Client, m Migration) error {
	err := retryOnConflict(func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: m.CRD}, crd); err != nil {
			return fmt.Errorf("failed reading the CRD: %w", err)
		}
		if conv := crd.Spec.Conversion; conv != nil && conv.Strategy != apiextensionsv1.NoneConverter {
			// A conversion webhook may not know the new storage version; the objects stay put.
			return fmt.Errorf("the CRD converts with strategy %s, and its storage version %s is not %s", conv.Strategy, m.LiveStorageVersion, m.StorageVersion)
		}
		found := false
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			v.Storage = v.Name == m.StorageVersion
			if v.Storage {
				v.Served, found = true, true
			}
		}
		if !found {
			v := *m.Version.DeepCopy()
			v.Served, v.Storage = true, true
			crd.Spec.Versions = append(crd.Spec.Versions, v)
		}
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("failed making the CRD store at %s: %w", m.StorageVersion, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The API server serves a CRD's change once its own watch of the CRD delivers it, and until
	// then stores writes at the old version: a rewrite in that moment would stay at the version
	// about to be dropped. A version new to the CRD can be listed from then on; for a version it
	// had there is no such signal, nor for the other API servers of the shoot, hence the settle.
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(m.GroupVersionKind())
		err := c.List(ctx, list, client.Limit(1))
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(StorageSwitchSettle):
		return nil
	}
}

// StorageSwitchSettle is how long a migration waits after it changed a CRD's storage version
// before it rewrites objects: far longer than an API server takes to see its own change of a
// CRD, which has no signal.
var StorageSwitchSettle = 2 * time.Second

// rewrite writes every object of the kind unchanged: the API server stores it at the current
// storage version. Like `flux migrate` (flux2's cmd/flux/migrate.go), the write also moves the
// object's managedFields to that version, because server-side apply fails on entries of a
// version the CRD no longer has.
func rewrite(ctx context.Context, c client.Client, m Migration, limits Limits) (int, error) {
	apiVersion := m.GroupVersionKind().GroupVersion().String()
	pageSize := limits.PageSize
	var (
		n         int
		continued string
	)
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(m.GroupVersionKind())
		opts := []client.ListOption{client.Continue(continued)}
		if pageSize > 0 {
			opts = append(opts, client.Limit(pageSize))
		}
		err := c.List(ctx, list, opts...)
		var tooLarge *shootclient.ResponseTooLargeError
		if errors.As(err, &tooLarge) && pageSize > 1 {
			// The owner decides how large an object's metadata is: smaller pages fit.
			pageSize /= 2
			continue
		}
		if err != nil {
			return n, fmt.Errorf("failed listing the objects: %w", err)
		}
		for i := range list.Items {
			if limits.MaxObjects > 0 && n >= limits.MaxObjects {
				return n, fmt.Errorf("%w: more than the limit of %d objects", ErrTooManyObjects, limits.MaxObjects)
			}
			obj := &list.Items[i]
			obj.SetGroupVersionKind(m.GroupVersionKind())
			if err := rewriteObject(ctx, c, obj, apiVersion); err != nil {
				return n, fmt.Errorf("failed rewriting %s: %w", client.ObjectKeyFromObject(obj), err)
			}
			n++
		}
		continued = list.Continue
		if continued == "" {
			return n, nil
		}
	}
}

func rewriteObject(ctx context.Context, c client.Client, obj *metav1.PartialObjectMetadata, apiVersion string) error {
	patch := []byte("{}")
	entries := slices.Clone(obj.ManagedFields)
	changed := false
	for i := range entries {
		if entries[i].APIVersion != apiVersion {
			entries[i].APIVersion, changed = apiVersion, true
		}
	}
	if changed {
		var err error
		if patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": entries}}); err != nil {
			return err
		}
	}
	// A merge patch has no resourceVersion precondition; a conflict is the API server's own
	// retry giving up under concurrent writes, so it is retried a few times.
	err := retryOnConflict(func() error {
		return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// trim sets the CRD's status.storedVersions to the storage version, now the only version
// objects are stored at, unless the CRD changed its storage version meanwhile.
func trim(ctx context.Context, c client.Client, m Migration) error {
	return retryOnConflict(func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: m.CRD}, crd); err != nil {
			return fmt.Errorf("failed reading the CRD: %w", err)
		}
		if s := storageVersion(*crd); s == nil || s.Name != m.StorageVersion {
			return fmt.Errorf("the CRD's storage version changed during the migration; it is no longer %s", m.StorageVersion)
		}
		if slices.Equal(crd.Status.StoredVersions, []string{m.StorageVersion}) {
			return nil
		}
		patch := client.MergeFromWithOptions(crd.DeepCopy(), client.MergeFromWithOptimisticLock{})
		crd.Status.StoredVersions = []string{m.StorageVersion}
		if err := c.Status().Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("failed setting status.storedVersions to [%s]: %w", m.StorageVersion, err)
		}
		return nil
	})
}

// retryOnConflict is retry.RetryOnConflict, which returns nil when fn fails with a context's
// error (it takes that for its own interruption): the failure is returned instead.
func retryOnConflict(fn func() error) error {
	var last error
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { last = fn(); return last }); err != nil {
		return err
	}
	return last
}
