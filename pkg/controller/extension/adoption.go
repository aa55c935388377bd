// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// adoptionRESTOptions bound the one read of the adoption check.
var adoptionRESTOptions = extensionsconfigv1alpha1.RESTOptions{Timeout: ptr.To(10 * time.Second)}

// newAdoptionClient returns the shoot client of the adoption check (package shootclient).
var newAdoptionClient = func(ctx context.Context, seed client.Client, namespace string) (client.Client, error) {
	return shootclient.New(ctx, seed, namespace, adoptionRESTOptions, adoption.DeploymentKind)
}

// leaveSelfManagedFlux keeps the extension from fighting a repository that manages Flux itself
// (package adoption). In management handover the controllers are left to the repository (the
// ManagedResource is written handed over) and the returned warning says so; in continuous the
// reconcile fails naming the Kustomization, and what runs stays.
func (a *actuator) leaveSelfManagedFlux(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, cfg *fluxapi.FluxConfig, values controllers.Values, hibernated bool) (string, error) {
	if hibernated {
		return "", nil
	}
	ctrls := a.controllers(ex.Namespace, values)
	handover, err := ctrls.HandedOver(ctx)
	if err != nil {
		return "", err
	}
	continuous := cfg.Flux.Management == fluxapi.ManagementContinuous
	if handover != nil && !continuous {
		return "", nil
	}
	if handover == nil {
		exists, err := ctrls.Exists(ctx)
		if err != nil || exists {
			return "", err
		}
	}

	shoot, err := newAdoptionClient(ctx, a.client, ex.Namespace)
	if err != nil {
		return "", fmt.Errorf("failed creating the shoot client for the adoption check: %w", err)
	}
	self, err := adoption.FindSelfManagedFlux(ctx, shoot, cfg.Flux.Namespace)
	if err != nil || self == nil {
		return "", err
	}
	who := self.Describe(cfg.Flux.Namespace)
	if continuous {
		return "", configerror.Wrap(errors.New("flux.management is continuous, but " + who +
			": the extension and the repository would overwrite each other's controllers; remove Flux from the repository, or set flux.management to handover to leave the controllers to it"))
	}
	h := managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: self.Version}
	if h.Version == "" {
		h.Version = cfg.Flux.Version
	}
	log.Info("Leaving the controllers to the repository that manages Flux", "kustomization", self.Kustomization, "version", self.Version)
	if err := ctrls.DeployHandedOver(ctx, h); err != nil {
		return "", fmt.Errorf("failed handing the controllers over to the repository: %w", err)
	}
	return who + ": the extension leaves the controllers to it (flux.management handover); " +
		"to have the extension manage them, remove Flux from the repository and set flux.management to continuous", nil
}
