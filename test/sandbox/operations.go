package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

func (h *ShootHandle) extensionKey() client.ObjectKey {
	return client.ObjectKey{Namespace: h.SeedNamespace, Name: ExtensionName}
}

// Extension reads the Extension resource.
func (h *ShootHandle) Extension(ctx context.Context) (*extensionsv1alpha1.Extension, error) {
	ex := &extensionsv1alpha1.Extension{}
	if err := h.sandbox.Seed.Client.Get(ctx, h.extensionKey(), ex); err != nil {
		return nil, fmt.Errorf("failed reading extension of %s: %w", h.SeedNamespace, err)
	}
	return ex, nil
}

// Cluster reads the Cluster resource.
func (h *ShootHandle) Cluster(ctx context.Context) (*extensionsv1alpha1.Cluster, error) {
	c := &extensionsv1alpha1.Cluster{}
	if err := h.sandbox.Seed.Client.Get(ctx, client.ObjectKey{Name: h.SeedNamespace}, c); err != nil {
		return nil, fmt.Errorf("failed reading cluster %s: %w", h.SeedNamespace, err)
	}
	return c, nil
}

// ShootObject returns the Shoot recorded in the Cluster.
func (h *ShootHandle) ShootObject(ctx context.Context) (*gardencorev1beta1.Shoot, error) {
	c, err := h.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	shoot := &gardencorev1beta1.Shoot{}
	if err := json.Unmarshal(c.Spec.Shoot.Raw, shoot); err != nil {
		return nil, fmt.Errorf("failed decoding shoot of cluster %s: %w", h.SeedNamespace, err)
	}
	return shoot, nil
}

// updateShoot changes the Shoot in the Cluster as gardenlet does at the start of every shoot
// operation.
func (h *ShootHandle) updateShoot(ctx context.Context, mutate func(*gardencorev1beta1.Shoot)) error {
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := h.Cluster(ctx)
		if err != nil {
			return err
		}
		shoot := &gardencorev1beta1.Shoot{}
		if err := json.Unmarshal(c.Spec.Shoot.Raw, shoot); err != nil {
			return fmt.Errorf("failed decoding shoot of cluster %s: %w", h.SeedNamespace, err)
		}
		mutate(shoot)
		if c.Spec.Shoot.Raw, err = json.Marshal(shoot); err != nil {
			return fmt.Errorf("failed encoding shoot: %w", err)
		}
		if err := h.sandbox.Seed.Client.Update(ctx, c); err != nil {
			return err
		}
		rv = c.ResourceVersion
		return nil
	})
	if err != nil {
		return fmt.Errorf("failed updating cluster %s: %w", h.SeedNamespace, err)
	}
	return h.waitUntilExtensionSeesCluster(ctx, rv)
}

// startOperation records a shoot operation in the Cluster and annotates the Extension with the
// matching operation, which is how gardenlet asks extensions to act. Checkpoint semantics: the
// next Wait considers only what happens from here on.
func (h *ShootHandle) startOperation(ctx context.Context, opType gardencorev1beta1.LastOperationType, annotation string, mutate func(*gardencorev1beta1.Shoot)) error {
	if err := h.Checkpoint(ctx); err != nil {
		return err
	}
	if err := h.updateShoot(ctx, func(shoot *gardencorev1beta1.Shoot) {
		if mutate != nil {
			mutate(shoot)
		}
		shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{
			Type:           opType,
			State:          gardencorev1beta1.LastOperationStateProcessing,
			LastUpdateTime: metav1.NewTime(time.Now().Truncate(time.Second)),
			Description:    fmt.Sprintf("%s of the shoot in progress", opType),
		}
	}); err != nil {
		return err
	}
	if annotation == "" {
		return nil
	}
	return h.annotateExtension(ctx, annotation)
}

func (h *ShootHandle) annotateExtension(ctx context.Context, operation string) error {
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ex.DeepCopy())
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, operation)
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerTimestamp, time.Now().UTC().Format(time.RFC3339Nano))
	if err := h.sandbox.Seed.Client.Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("failed annotating extension of %s with operation %s: %w", h.SeedNamespace, operation, err)
	}
	// Only what happens after the request counts: a reconcile that was already running (e.g. one
	// that still read the Cluster before this operation changed it) may finish between the
	// checkpoint and the annotation, and its result is not the answer to this request. One that
	// finishes later leaves the annotation in place, which the waits do not accept.
	h.setSince(ex.ResourceVersion)
	return nil
}

// UpdateProviderConfig changes the providerConfig in the Shoot and in the Extension.
func (h *ShootHandle) UpdateProviderConfig(ctx context.Context, data []byte) error {
	raw, err := providerConfig(data)
	if err != nil {
		return err
	}
	if err := h.Checkpoint(ctx); err != nil {
		return err
	}
	if err := h.updateShoot(ctx, func(shoot *gardencorev1beta1.Shoot) {
		shoot.Generation++
		for i := range shoot.Spec.Extensions {
			if shoot.Spec.Extensions[i].Type == constants.ExtensionType {
				shoot.Spec.Extensions[i].ProviderConfig = raw
			}
		}
	}); err != nil {
		return err
	}
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Spec.ProviderConfig = raw
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	if err := h.sandbox.Seed.Client.Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("failed updating providerConfig of %s: %w", h.SeedNamespace, err)
	}
	return nil
}

// SetHibernated hibernates or wakes up the shoot. Hibernation records the state in the Cluster and
// then stops the shoot's resource manager, as the control plane is scaled down; wake-up starts it
// first. The shared resource manager of a light shoot keeps running.
func (h *ShootHandle) SetHibernated(ctx context.Context, hibernated bool) error {
	if !hibernated {
		if err := h.startResourceManager(ctx); err != nil {
			return err
		}
	}
	if err := h.startOperation(ctx, gardencorev1beta1.LastOperationTypeReconcile, v1beta1constants.GardenerOperationReconcile, func(shoot *gardencorev1beta1.Shoot) {
		shoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(hibernated)}
		shoot.Status.IsHibernated = hibernated
		shoot.Generation++
	}); err != nil {
		return err
	}
	if hibernated {
		return h.stopResourceManager()
	}
	return nil
}

// UpdateShootSpec changes the Shoot's spec, e.g. its Kubernetes version, and starts the shoot
// reconciliation that follows as gardenlet does: the Cluster gets the new Shoot, then the Extension
// the reconcile operation. WaitSucceeded waits for its result.
func (h *ShootHandle) UpdateShootSpec(ctx context.Context, mutate func(*gardencorev1beta1.ShootSpec)) error {
	return h.startOperation(ctx, gardencorev1beta1.LastOperationTypeReconcile, v1beta1constants.GardenerOperationReconcile, func(shoot *gardencorev1beta1.Shoot) {
		mutate(&shoot.Spec)
		shoot.Generation++
	})
}

// TriggerReconcile starts a shoot reconciliation as gardenlet does.
func (h *ShootHandle) TriggerReconcile(ctx context.Context) error {
	return h.startOperation(ctx, gardencorev1beta1.LastOperationTypeReconcile, v1beta1constants.GardenerOperationReconcile, nil)
}

// Migrate starts the migration of the shoot's control plane away from this seed and waits until
// the Extension reports a successful Migrate operation.
func (h *ShootHandle) Migrate(ctx context.Context, timeout time.Duration) error {
	if err := h.startOperation(ctx, gardencorev1beta1.LastOperationTypeMigrate, v1beta1constants.GardenerOperationMigrate, nil); err != nil {
		return err
	}
	_, err := h.wait(ctx, timeout, gardencorev1beta1.LastOperationTypeMigrate)
	return err
}

// Restore starts the restoration of the shoot's control plane on this seed; WaitRestored waits
// for its result.
func (h *ShootHandle) Restore(ctx context.Context) error {
	return h.startOperation(ctx, gardencorev1beta1.LastOperationTypeRestore, v1beta1constants.GardenerOperationRestore, nil)
}

// WaitRestored waits for a successful Restore operation after Restore.
func (h *ShootHandle) WaitRestored(ctx context.Context, timeout time.Duration) (*extensionsv1alpha1.Extension, error) {
	return h.wait(ctx, timeout, gardencorev1beta1.LastOperationTypeRestore)
}

// Delete disables the extension for the shoot: the extension is removed from the Shoot and the
// Extension resource is deleted; Delete waits until it is gone.
func (h *ShootHandle) Delete(ctx context.Context, timeout time.Duration) error {
	if err := h.updateShoot(ctx, func(shoot *gardencorev1beta1.Shoot) {
		shoot.Generation++
		shoot.Spec.Extensions = slices.DeleteFunc(shoot.Spec.Extensions, func(e gardencorev1beta1.Extension) bool {
			return e.Type == constants.ExtensionType
		})
	}); err != nil {
		return err
	}
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	if err := h.sandbox.Seed.Client.Delete(ctx, ex); err != nil {
		return fmt.Errorf("failed deleting extension of %s: %w", h.SeedNamespace, err)
	}
	var last *extensionsv1alpha1.Extension
	err = wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		current := &extensionsv1alpha1.Extension{}
		if err := h.sandbox.Seed.Client.Get(ctx, h.extensionKey(), current); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
		last = current
		return false, nil
	})
	if err != nil {
		var lastErr *gardencorev1beta1.LastError
		if last != nil {
			lastErr = last.Status.LastError
		}
		return fmt.Errorf("extension of %s was not deleted within %s%s: %w", h.SeedNamespace, timeout, describe(lastErr), err)
	}
	return nil
}

func olderResourceVersion(rv, than string) bool {
	a, errA := parseResourceVersion(rv)
	b, errB := parseResourceVersion(than)
	if errA != nil || errB != nil {
		return rv != than
	}
	return a < b
}

func parseResourceVersion(rv string) (uint64, error) {
	var v uint64
	_, err := fmt.Sscan(rv, &v)
	return v, err
}
