// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/handover"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/source"
)

// Delete disables the extension for the shoot without taking anything from the user's workloads
// (see docs/usage/deletion.md#what-disabling-does): the bootstrap objects go first, while the
// controllers still run and remove their finalizers without pruning, then the controllers, whose
// CRDs and namespaces the resource manager keeps. With stackit's providerConfig nothing goes.
func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	cluster, err := getCluster(ctx, a.client, ex)
	if err != nil {
		return err
	}
	// The shoot owner gets no alerts about controllers that are going away.
	if err := a.monitoring(ex.Namespace, monitoring.Values{}).Destroy(ctx); err != nil {
		return fmt.Errorf("failed removing the shoot's monitoring: %w", err)
	}

	boot := a.bootstrap(ex.Namespace, bootstrap.Values{})
	ctrls := a.controllers(ex.Namespace, controllers.Values{})
	if fluxconfig.ProviderConfigConversion(ex.Spec.ProviderConfig, manifests.SupportedVersions()) != nil {
		// A shoot switched from stackit's extension, whose disabling removed nothing: the
		// repository's Kustomizations reference the flux-system objects by name and Flux may
		// manage itself from them. Everything stays in the shoot, as it did there.
		log.Info("Leaving the bootstrap objects and the controllers of stackit's providerConfig in the shoot")
		if err := leave(ctx, boot, isHibernated(cluster)); err != nil {
			return fmt.Errorf("failed releasing the bootstrap objects: %w", err)
		}
		if err := leave(ctx, ctrls, isHibernated(cluster)); err != nil {
			return fmt.Errorf("failed releasing the controllers: %w", err)
		}
		return a.forgetShootKeys(ctx, log, cluster)
	}
	if isHibernated(cluster) {
		// Nobody can wait for the controllers to remove their finalizers; the shoot's resource
		// manager deletes both ManagedResources at once when the shoot wakes up, so the bootstrap
		// objects stay, like the users' objects.
		if err := boot.DestroyKeepingObjects(ctx); err != nil {
			return fmt.Errorf("failed removing the bootstrap objects: %w", err)
		}
		if err := handover.Destroy(ctx, log, ctrls, false); err != nil {
			return fmt.Errorf("failed removing the controllers: %w", err)
		}
		return a.forgetShootKeys(ctx, log, cluster)
	}

	grace := a.config.Timeouts.BootstrapFinalizers.Duration
	left, err := boot.DestroyReleasingAfter(ctx, grace)
	if err != nil {
		return fmt.Errorf("failed removing the bootstrap objects: %w", err)
	}
	if left {
		log.Info("Left the bootstrap objects in the shoot: their controller did not remove its finalizers", "grace", grace)
	}
	if err := handover.Destroy(ctx, log, ctrls, true); err != nil {
		return fmt.Errorf("failed removing the controllers: %w", err)
	}
	return a.forgetShootKeys(ctx, log, cluster)
}

// leave deletes a ManagedResource and leaves its objects in the shoot; a hibernated shoot's resource
// manager removes it when the shoot wakes up.
func leave(ctx context.Context, mr *managedresource.ManagedResource, hibernated bool) error {
	if hibernated {
		return mr.DestroyKeepingObjects(ctx)
	}
	return mr.Migrate(ctx)
}

// forgetShootKeys removes shoot-scoped deploy keys once the Shoot itself is deleted; disabling the
// extension keeps them for a later enable.
func (a *actuator) forgetShootKeys(ctx context.Context, log logr.Logger, cluster *extensionscontroller.Cluster) error {
	if cluster.Shoot.DeletionTimestamp == nil || source.KeyScope(a.config) != deploykey.ScopeShoot {
		return nil
	}
	log.Info("Removing the shoot's deploy keys", "secret", client.ObjectKey{Namespace: cluster.Shoot.Namespace, Name: constants.DeployKeysSecretName})
	if err := a.keys.Forget(ctx, cluster.Shoot.Namespace, cluster.Shoot.Name); err != nil {
		return fmt.Errorf("failed removing the shoot's deploy keys: %w", err)
	}
	return nil
}
