// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
)

func (a *actuator) timeouts() managedresource.Timeouts {
	return managedresource.Timeouts{Applied: a.config.Timeouts.ManagedResourceApplied.Duration, Deleted: a.config.Timeouts.Deletion.Duration}
}

// bootstrap and controllers return the components of the shoot's two ManagedResources; the
// manager's cached client serves their waits.
func (a *actuator) bootstrap(namespace string, values bootstrap.Values) *managedresource.ManagedResource {
	return bootstrap.New(a.client, a.client, namespace, values, a.timeouts())
}

func (a *actuator) controllers(namespace string, values controllers.Values) *managedresource.ManagedResource {
	return controllers.New(a.client, a.client, namespace, values, a.timeouts())
}

// destroyBootstrapIfExists removes a bootstrap that the configuration no longer asks for. The
// cached existence check keeps resyncs of shoots without bootstrap free of API requests.
func (a *actuator) destroyBootstrapIfExists(ctx context.Context, namespace string, hibernated bool) error {
	boot := a.bootstrap(namespace, bootstrap.Values{})
	exists, err := boot.Exists(ctx)
	if err != nil || !exists {
		return err
	}
	return boot.DestroyAndWait(ctx, hibernated)
}

// controllerValues are the values of the controllers ManagedResource.
func (a *actuator) controllerValues(cfg *fluxapi.FluxConfig, insecureHostKeys bool) (controllers.Values, error) {
	pullSecret, err := a.imagePullSecret()
	if err != nil {
		return controllers.Values{}, err
	}
	return controllers.ValuesFor(cfg, a.config.Registry, pullSecret, insecureHostKeys), nil
}

// imagePullSecret reads the operator's registry credentials, if configured.
func (a *actuator) imagePullSecret() ([]byte, error) {
	if a.config.ImagePullSecretFile == "" {
		return nil, nil
	}
	data, err := loader.LoadImagePullSecret(a.config.ImagePullSecretFile)
	if err != nil {
		return nil, fmt.Errorf("failed reading the operator's image pull secret: %w", err)
	}
	return data, nil
}

// isHibernated tells whether the shoot is hibernated or on its way there. Its resource manager does
// not run then, so waiting for a ManagedResource would block until the shoot wakes up; the
// resource manager applies the current state once it runs again.
func isHibernated(cluster *extensionscontroller.Cluster) bool {
	return extensionscontroller.IsHibernationEnabled(cluster) || cluster.Shoot.Status.IsHibernated
}
