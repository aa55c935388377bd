// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// adoptionRESTOptions bound the one read of the adoption check.
var adoptionRESTOptions = extensionsconfigv1alpha1.RESTOptions{Timeout: ptr.To(10 * time.Second)}

// newAdoptionClient returns the shoot client of the adoption check (package shootclient).
var newAdoptionClient = func(ctx context.Context, seed client.Client, namespace string) (client.Client, error) {
	return shootclient.New(ctx, seed, namespace, adoptionRESTOptions, adoption.DeploymentKind)
}

// leaveRunningFlux keeps a Flux the extension did not install (package adoption); it returns the
// warning for the status when the controllers are left as they are.
func (a *actuator) leaveRunningFlux(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, cfg *fluxapi.FluxConfig, values controllers.Values, hibernated bool, unfit error) (string, error) {
	return adoption.Leave(ctx, log, adoption.Request{
		Controllers: a.controllers(ex.Namespace, values),
		Shoot: func(ctx context.Context) (client.Reader, error) {
			return newAdoptionClient(ctx, a.client, ex.Namespace)
		},
		Namespace:  cfg.Flux.Namespace,
		Selected:   cfg.Flux.Version,
		Continuous: cfg.Flux.Management == fluxapi.ManagementContinuous,
		Hibernated: hibernated,
		Unfit:      unfit,
	})
}
