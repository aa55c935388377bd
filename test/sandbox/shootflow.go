// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/component/extensions/extension"
	"github.com/gardener/gardener/pkg/component/shared"
	gardenerextensions "github.com/gardener/gardener/pkg/extensions"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// The sandbox plays the extension steps of gardenlet's shoot flow with gardenlet's code: the
// Shoot's status as gardenlet writes it, the Cluster via SyncClusterResourceToSeed and the Extension
// via the Extension component, built as gardenlet's botanist builds it (shared.NewExtension).

// GardenShoot reads the shoot's Shoot from gardener-apiserver.
func (h *ShootHandle) GardenShoot(ctx context.Context) (*gardencorev1beta1.Shoot, error) {
	shoot := &gardencorev1beta1.Shoot{}
	if err := h.sandbox.Garden.Client.Get(ctx, client.ObjectKey{Namespace: h.ProjectNamespace, Name: h.Name}, shoot); err != nil {
		return nil, fmt.Errorf("failed reading shoot %s/%s: %w", h.ProjectNamespace, h.Name, err)
	}
	return shoot, nil
}

// startShootOperation changes the Shoot in gardener-apiserver as its owner would (mutate; nil for
// none), then starts a shoot operation of opType as gardenlet does: the Shoot's status records the
// operation and the shoot's placement on the seed, and the Cluster gets the current Shoot,
// CloudProfile and Seed. It waits until the in-process extension's cache has the Cluster and
// returns the Shoot.
func (h *ShootHandle) startShootOperation(ctx context.Context, opType gardencorev1beta1.LastOperationType, mutate func(*gardencorev1beta1.Shoot)) (*gardencorev1beta1.Shoot, error) {
	garden := h.sandbox.Garden.Client
	var shoot *gardencorev1beta1.Shoot
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if shoot, err = h.GardenShoot(ctx); err != nil {
			return err
		}
		if mutate == nil {
			return nil
		}
		before := shoot.Spec.DeepCopy()
		mutate(shoot)
		if equality.Semantic.DeepEqual(before, &shoot.Spec) {
			return nil
		}
		return garden.Update(ctx, shoot)
	})
	if err != nil {
		return nil, fmt.Errorf("failed updating shoot %s/%s: %w", h.ProjectNamespace, h.Name, err)
	}

	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := h.GardenShoot(ctx)
		if err != nil {
			return err
		}
		shoot = current
		shoot.Status.UID = shoot.UID
		shoot.Status.TechnicalID = h.SeedNamespace
		shoot.Status.SeedName = shoot.Spec.SeedName
		shoot.Status.ObservedGeneration = shoot.Generation
		// gardenlet records the hibernation it brings about; the sandbox's control plane follows the
		// spec at once (SetHibernated), so the status does too.
		shoot.Status.IsHibernated = v1beta1helper.HibernationIsEnabled(shoot)
		shoot.Status.LastOperation = &gardencorev1beta1.LastOperation{
			Type:           opType,
			State:          gardencorev1beta1.LastOperationStateProcessing,
			LastUpdateTime: metav1.NewTime(time.Now().Truncate(time.Second)),
			Description:    fmt.Sprintf("%s of the shoot in progress", opType),
		}
		return garden.Status().Update(ctx, shoot)
	})
	if err != nil {
		return nil, fmt.Errorf("failed updating the status of shoot %s/%s: %w", h.ProjectNamespace, h.Name, err)
	}

	// gardenlet copies the referenced resources into the seed namespace on every reconcile.
	if err := h.deployReferencedResources(ctx, shoot); err != nil {
		return nil, err
	}
	if err := h.syncCluster(ctx, shoot); err != nil {
		return nil, err
	}
	return shoot, nil
}

// deployReferencedResources copies the Shoot's spec.resources into the seed namespace as
// ref-<name>, prepared by gardener's PrepareReferencedResourcesForSeedCopy. It applies them itself,
// as the seed's resource manager would apply gardenlet's ManagedResource, which no sandbox runs.
func (h *ShootHandle) deployReferencedResources(ctx context.Context, shoot *gardencorev1beta1.Shoot) error {
	objs, err := gardenerutils.PrepareReferencedResourcesForSeedCopy(ctx, h.sandbox.Garden.Client, shoot.Spec.Resources, h.ProjectNamespace, h.SeedNamespace)
	if err != nil {
		return fmt.Errorf("failed preparing the referenced resources of shoot %s for the seed: %w", h.Name, err)
	}
	seed := h.sandbox.Seed.Client
	for _, obj := range objs {
		err := seed.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			err = seed.Update(ctx, obj)
			// The copy asks for gardener-resource-manager's treatment of an update the API server
			// refuses (resources.gardener.cloud/delete-on-invalid-update), e.g. of an immutable Secret
			// the owner re-created with other data: delete and create it again.
			if apierrors.IsInvalid(err) && obj.GetAnnotations()[resourcesv1alpha1.DeleteOnInvalidUpdate] == "true" {
				if err = client.IgnoreNotFound(seed.Delete(ctx, obj)); err == nil {
					obj.SetResourceVersion("")
					err = seed.Create(ctx, obj)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("failed copying referenced %s %s into %s: %w", obj.GetKind(), obj.GetName(), h.SeedNamespace, err)
		}
	}
	return nil
}

// syncCluster writes the Cluster of the shoot with gardenlet's code.
func (h *ShootHandle) syncCluster(ctx context.Context, shoot *gardencorev1beta1.Shoot) error {
	garden := h.sandbox.Garden.Client
	cloudProfile := &gardencorev1beta1.CloudProfile{}
	if err := garden.Get(ctx, client.ObjectKey{Name: shoot.Spec.CloudProfile.Name}, cloudProfile); err != nil {
		return fmt.Errorf("failed reading CloudProfile of shoot %s: %w", h.Name, err)
	}
	seed := &gardencorev1beta1.Seed{}
	if err := garden.Get(ctx, client.ObjectKey{Name: ptr.Deref(shoot.Spec.SeedName, "")}, seed); err != nil {
		return fmt.Errorf("failed reading Seed of shoot %s: %w", h.Name, err)
	}
	if err := gardenerextensions.SyncClusterResourceToSeed(ctx, h.sandbox.Seed.Client, h.SeedNamespace, shoot, cloudProfile, seed); err != nil {
		return fmt.Errorf("failed syncing cluster %s: %w", h.SeedNamespace, err)
	}
	cluster, err := h.Cluster(ctx)
	if err != nil {
		return err
	}
	return h.waitUntilExtensionSeesCluster(ctx, cluster.ResourceVersion)
}

// extensionComponent builds gardenlet's Extension component for the shoot as its botanist does.
func (h *ShootHandle) extensionComponent(ctx context.Context, shoot *gardencorev1beta1.Shoot) (extension.Interface, error) {
	ext, err := shared.NewExtension(ctx, h.log.WithName("gardenlet"), h.sandbox.Garden.Client, h.sandbox.Seed.Client,
		h.SeedNamespace, extensionsv1alpha1.ExtensionClassShoot, shoot.Spec.Extensions, v1beta1helper.IsWorkerless(shoot))
	if err != nil {
		return nil, fmt.Errorf("failed building the Extension component of shoot %s: %w", h.Name, err)
	}
	return ext, nil
}

// deployExtensions deploys the shoot's Extensions at the steps of gardenlet's reconcile flow
// (before and after kube-apiserver, after the workers), each Extension at the step its
// registration's lifecycle names.
func (h *ShootHandle) deployExtensions(ctx context.Context, shoot *gardencorev1beta1.Shoot) error {
	if h.sandbox.opts.Deployed {
		if err := h.waitUntilExtensionInstalled(ctx, shoot); err != nil {
			return err
		}
	}
	return h.requestExtensions(ctx, shoot, "deploying", func(ext extension.Interface) []func(context.Context) error {
		return []func(context.Context) error{ext.DeployBeforeKubeAPIServer, ext.DeployAfterKubeAPIServer, ext.DeployAfterWorker}
	})
}

// requestExtensions runs steps of gardenlet's Extension component for the shoot (what names them
// in errors) and sets the wait checkpoint at the request they wrote: only what the extension does
// from there on answers it.
func (h *ShootHandle) requestExtensions(ctx context.Context, shoot *gardencorev1beta1.Shoot, what string, steps func(extension.Interface) []func(context.Context) error) error {
	ext, err := h.extensionComponent(ctx, shoot)
	if err != nil {
		return err
	}
	mark, err := h.markBeforeRequest(ctx)
	if err != nil {
		return err
	}
	for _, step := range steps(ext) {
		if err := step(ctx); err != nil {
			return fmt.Errorf("failed %s the Extensions of shoot %s: %w", what, h.Name, err)
		}
	}
	return h.checkpointAtRequest(ctx, mark)
}

// requestMark is where the Extension stood before gardenlet's code wrote a request to it: the
// resourceVersion of a list of the Extension and its gardener.cloud/timestamp annotation.
type requestMark struct {
	listVersion string
	timestamp   string
}

// markBeforeRequest records where the Extension stands before a request is written.
func (h *ShootHandle) markBeforeRequest(ctx context.Context) (requestMark, error) {
	list := &extensionsv1alpha1.ExtensionList{}
	if err := h.sandbox.Seed.Client.List(ctx, list, client.InNamespace(h.SeedNamespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", ExtensionName)}); err != nil {
		return requestMark{}, fmt.Errorf("failed reading extension of %s: %w", h.SeedNamespace, err)
	}
	m := requestMark{listVersion: list.ResourceVersion}
	if len(list.Items) > 0 {
		m.timestamp = list.Items[0].Annotations[v1beta1constants.GardenerTimestamp]
	}
	return m, nil
}

// checkpointAtRequest sets the wait checkpoint at the version of the Extension that carries the
// request gardenlet's code wrote after m: the first one with a new gardener.cloud/timestamp. Only
// what the extension does from there on answers the request; a reconcile that was already running
// may finish just before, and its result is not the answer. The Extension's current version is no
// substitute: the extension may have answered the request already when it is read.
func (h *ShootHandle) checkpointAtRequest(ctx context.Context, m requestMark) error {
	h.setSince(m.listVersion)
	var found string
	err := h.watchExtension(ctx, cluster.CacheSyncTimeout, func(ex *extensionsv1alpha1.Extension, reread bool, _ time.Time) (bool, error) {
		if ex.Annotations[v1beta1constants.GardenerTimestamp] == m.timestamp {
			return false, nil
		}
		if reread {
			// The watch lost the versions in between; the request's own version is gone.
			h.log.Info("Taking the Extension's current version as the request's: the watch lost track")
		}
		found = ex.ResourceVersion
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the request to the Extension of %s was not found: %w", h.SeedNamespace, err)
	}
	h.setSince(found)
	return nil
}

// WaitExtensionReady waits for the shoot's Extensions as gardenlet's reconcile flow does
// (extensions.WaitUntilExtensionObjectReady with the registration's timeout, at most timeout): it
// returns nil when they are ready, or gardenlet's error, which names the Extension's lastError.
func (h *ShootHandle) WaitExtensionReady(ctx context.Context, timeout time.Duration) error {
	shoot, err := h.GardenShoot(ctx)
	if err != nil {
		return err
	}
	ext, err := h.extensionComponent(ctx, shoot)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return ext.Wait(ctx)
}

// annotateExtension asks the extension for an operation again as gardenlet's flow does when it
// retries a task (extensions.AnnotateObjectWithOperation).
func (h *ShootHandle) annotateExtension(ctx context.Context, operation string) error {
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	if err := gardenerextensions.AnnotateObjectWithOperation(ctx, h.sandbox.Seed.Client, ex, operation); err != nil {
		return fmt.Errorf("failed annotating extension of %s with operation %s: %w", h.SeedNamespace, operation, err)
	}
	h.setSince(ex.ResourceVersion)
	return nil
}

// finishShootOperation records in the Shoot's status that the shoot operation in progress
// succeeded, as gardenlet does when its flow ends: the sandbox's flow ends when the Extension
// answered. gardener-apiserver refuses spec changes while a Restore has not succeeded.
func (h *ShootHandle) finishShootOperation(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		shoot, err := h.GardenShoot(ctx)
		if err != nil {
			return err
		}
		op := shoot.Status.LastOperation
		if op == nil || op.State != gardencorev1beta1.LastOperationStateProcessing {
			return nil
		}
		op.State = gardencorev1beta1.LastOperationStateSucceeded
		op.Progress = 100
		op.LastUpdateTime = metav1.NewTime(time.Now().Truncate(time.Second))
		op.Description = fmt.Sprintf("%s of the shoot succeeded", op.Type)
		return h.sandbox.Garden.Client.Status().Update(ctx, shoot)
	})
	if err != nil {
		return fmt.Errorf("failed recording the end of the operation of shoot %s/%s: %w", h.ProjectNamespace, h.Name, err)
	}
	return nil
}

// RequiredExtensionsTimeout bounds the wait of a shoot's reconcile for the installations of the
// extensions it needs (gardenlet waits a minute).
var RequiredExtensionsTimeout = time.Minute

// waitUntilExtensionInstalled waits, as gardenlet's reconcile flow does before it deploys
// extension resources (botanist.WaitUntilRequiredExtensionsReady), until the seed's
// ControllerInstallation of shoot-flux reports the installation successful
// (gardenerutils.RequiredExtensionsReady). Only shoot-flux's Extension counts: the sandbox plays
// the provider, network and operating system extensions itself.
func (h *ShootHandle) waitUntilExtensionInstalled(ctx context.Context, shoot *gardencorev1beta1.Shoot) error {
	seed := h.sandbox.gardenObjects.Seed
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, RequiredExtensionsTimeout, true, func(ctx context.Context) (bool, error) {
		required := sets.New(gardenerutils.ExtensionsID(extensionsv1alpha1.ExtensionResource, constants.ExtensionType))
		lastErr = gardenerutils.RequiredExtensionsReady(ctx, h.sandbox.Garden.Client, seed, shoot, required)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("shoot %s: %w: %w", h.Name, lastErr, err)
	}
	return nil
}
