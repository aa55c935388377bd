// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

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
	"github.com/gardener/gardener/pkg/component/extensions/extension"
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

// ShootObject returns the Shoot recorded in the Cluster, as the extension sees it.
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

// reconcile changes the Shoot (mutate; nil for none) and runs the extension steps of gardenlet's
// reconcile flow: the Shoot's status and Cluster (startShootOperation), then the Extensions
// (deployExtensions). WaitSucceeded waits for the extension's answer.
func (h *ShootHandle) reconcile(ctx context.Context, mutate func(*gardencorev1beta1.Shoot)) error {
	shoot, err := h.startShootOperation(ctx, gardencorev1beta1.LastOperationTypeReconcile, mutate)
	if err != nil {
		return err
	}
	return h.deployExtensions(ctx, shoot)
}

// UpdateProviderConfig changes the shoot-flux providerConfig in the Shoot, as its owner does, and
// starts the shoot reconciliation that follows.
func (h *ShootHandle) UpdateProviderConfig(ctx context.Context, data []byte) error {
	raw, err := providerConfig(data)
	if err != nil {
		return err
	}
	return h.reconcile(ctx, func(shoot *gardencorev1beta1.Shoot) {
		for i := range shoot.Spec.Extensions {
			if shoot.Spec.Extensions[i].Type == constants.ExtensionType {
				shoot.Spec.Extensions[i].ProviderConfig = raw
			}
		}
	})
}

// SetHibernated hibernates or wakes up the shoot through the Shoot's spec. Hibernation reconciles
// the Extension with the hibernated Shoot and then stops the shoot's resource manager, as the
// control plane is scaled down; wake-up starts it first. The shared resource manager of a light
// shoot keeps running.
func (h *ShootHandle) SetHibernated(ctx context.Context, hibernated bool) error {
	if !hibernated {
		if err := h.startResourceManager(ctx); err != nil {
			return err
		}
	}
	if err := h.reconcile(ctx, func(shoot *gardencorev1beta1.Shoot) {
		shoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(hibernated)}
	}); err != nil {
		return err
	}
	if hibernated {
		return h.stopResourceManager()
	}
	return nil
}

// UpdateShootSpec changes the Shoot's spec, e.g. its Kubernetes version, through gardener-apiserver
// and starts the shoot reconciliation that follows. WaitSucceeded waits for its result.
func (h *ShootHandle) UpdateShootSpec(ctx context.Context, mutate func(*gardencorev1beta1.ShootSpec)) error {
	return h.reconcile(ctx, func(shoot *gardencorev1beta1.Shoot) { mutate(&shoot.Spec) })
}

// TriggerReconcile starts a shoot reconciliation as gardenlet does.
func (h *ShootHandle) TriggerReconcile(ctx context.Context) error {
	return h.reconcile(ctx, nil)
}

// RetryExtension asks the extension to reconcile again as gardenlet does when it retries the
// extension step of a shoot operation under way (extensions.AnnotateObjectWithOperation), without
// the flow's other steps: no Shoot status, no Cluster sync, no copies of referenced resources. It
// works while the garden is down, and leaves a seed-side change of a scenario (e.g. a deleted
// copy) as it is. WaitSucceeded and WaitError wait for the answer.
func (h *ShootHandle) RetryExtension(ctx context.Context) error {
	return h.annotateExtension(ctx, v1beta1constants.GardenerOperationReconcile)
}

// Migrate starts the migration of the shoot's control plane away from this seed with gardenlet's
// Extension component and waits until the Extension reports a successful Migrate operation.
func (h *ShootHandle) Migrate(ctx context.Context, timeout time.Duration) error {
	shoot, err := h.startShootOperation(ctx, gardencorev1beta1.LastOperationTypeMigrate, nil)
	if err != nil {
		return err
	}
	if err := h.requestExtensions(ctx, shoot, "migrating", func(ext extension.Interface) []func(context.Context) error {
		return []func(context.Context) error{ext.MigrateBeforeKubeAPIServer, ext.MigrateAfterKubeAPIServer}
	}); err != nil {
		return err
	}
	_, err = h.wait(ctx, timeout, gardencorev1beta1.LastOperationTypeMigrate)
	return err
}

// Restore starts the restoration of the shoot's control plane on this seed with gardenlet's
// Extension component; WaitRestored waits for its result. The migration stays on the one seed of
// the sandbox, so the Extension keeps its state and the ShootState gardenlet would restore it
// from is empty.
func (h *ShootHandle) Restore(ctx context.Context) error {
	shoot, err := h.startShootOperation(ctx, gardencorev1beta1.LastOperationTypeRestore, nil)
	if err != nil {
		return err
	}
	state := &gardencorev1beta1.ShootState{}
	return h.requestExtensions(ctx, shoot, "restoring", func(ext extension.Interface) []func(context.Context) error {
		var steps []func(context.Context) error
		for _, restore := range []func(context.Context, *gardencorev1beta1.ShootState) error{ext.RestoreBeforeKubeAPIServer, ext.RestoreAfterKubeAPIServer, ext.RestoreAfterWorker} {
			steps = append(steps, func(ctx context.Context) error { return restore(ctx, state) })
		}
		return steps
	})
}

// WaitRestored waits for a successful Restore operation after Restore.
func (h *ShootHandle) WaitRestored(ctx context.Context, timeout time.Duration) (*extensionsv1alpha1.Extension, error) {
	return h.wait(ctx, timeout, gardencorev1beta1.LastOperationTypeRestore)
}

// Delete disables the extension for the shoot: its owner removes it from the Shoot's extensions,
// and gardenlet's reconcile deletes the Extension that is no longer wanted (the Extension
// component's DeleteStaleResources) and waits until it is gone (at most timeout).
func (h *ShootHandle) Delete(ctx context.Context, timeout time.Duration) error {
	shoot, err := h.startShootOperation(ctx, gardencorev1beta1.LastOperationTypeReconcile, func(shoot *gardencorev1beta1.Shoot) {
		shoot.Spec.Extensions = slices.DeleteFunc(shoot.Spec.Extensions, func(e gardencorev1beta1.Extension) bool {
			return e.Type == constants.ExtensionType
		})
	})
	if err != nil {
		return err
	}
	ext, err := h.extensionComponent(ctx, shoot)
	if err != nil {
		return err
	}
	if err := ext.DeleteStaleResources(ctx); err != nil {
		return fmt.Errorf("failed deleting the Extension of %s: %w", h.SeedNamespace, err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ext.WaitCleanupStaleResources(waitCtx); err != nil {
		return fmt.Errorf("extension of %s was not deleted within %s: %w", h.SeedNamespace, timeout, err)
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
