// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/pkg/component"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
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
	return destroy(ctx, boot, hibernated)
}

// controllerValues are the values of the controllers ManagedResource.
func (a *actuator) controllerValues(cfg *fluxapi.FluxConfig, insecureHostKeys bool) (controllers.Values, error) {
	pullSecret, err := a.imagePullSecret()
	if err != nil {
		return controllers.Values{}, err
	}
	values := controllers.Values{Flux: manifests.FluxOptions{
		Version:    cfg.Flux.Version,
		Components: cfg.Flux.Components,
		Namespace:  cfg.Flux.Namespace,
		Registry:   a.config.Registry,
		Tuning:     tuning(cfg, fluxapi.KnownComponents, pullSecret),
	}}
	if cfg.Kluctl.Enabled {
		values.Kluctl = &manifests.KluctlOptions{
			Version:                      cfg.Kluctl.Version,
			Namespace:                    cfg.Kluctl.Namespace,
			Registry:                     a.config.Registry,
			DisableStrictHostKeyChecking: insecureHostKeys,
			Tuning:                       tuning(cfg, []string{fluxapi.ComponentKluctlController}, pullSecret),
		}
	}
	return values, nil
}

// tuning picks the settings of the given components, so that a render is only cached again when
// its own settings change.
func tuning(cfg *fluxapi.FluxConfig, components []string, pullSecret []byte) manifests.Tuning {
	t := manifests.Tuning{ImagePullSecret: pullSecret}
	for _, c := range components {
		if s, ok := cfg.Controllers[c]; ok {
			if t.Controllers == nil {
				t.Controllers = map[string]fluxapi.ControllerSettings{}
			}
			t.Controllers[c] = s
		}
	}
	return t
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

// deployAndWait deploys, waits for the resource manager to apply the new content and then deletes
// the Secrets the new content superseded, also when the apply failed: failing applies would
// otherwise leave one Secret per change in the seed. A hibernated shoot's resource manager reads
// none, so they go at once.
func deployAndWait(ctx context.Context, mr *managedresource.ManagedResource, hibernated bool) error {
	if err := mr.Deploy(ctx); err != nil {
		return err
	}
	var waitErr error
	if !hibernated {
		waitErr = mr.Wait(ctx)
	}
	if err := mr.DeleteSuperseded(ctx); err != nil {
		return errors.Join(waitErr, err)
	}
	return waitErr
}

func destroy(ctx context.Context, c component.DeployWaiter, hibernated bool) error {
	if err := c.Destroy(ctx); err != nil {
		return err
	}
	if hibernated {
		return nil
	}
	return c.WaitCleanup(ctx)
}
