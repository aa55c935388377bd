// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"golang.org/x/mod/semver"
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
// (package adoption), before the controllers ManagedResource first applies. In flux.management
// handover the controllers are left to the repository (the ManagedResource is written handed
// over), and so is a Flux of a newer minor than the selection or, when no embedded release fits
// the shoot's Kubernetes (unfit), any Flux it runs; in continuous the reconcile fails and what runs
// stays. It returns the warning for the status when the controllers are left as they are.
func (a *actuator) leaveSelfManagedFlux(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, cfg *fluxapi.FluxConfig, values controllers.Values, hibernated bool, unfit error) (string, error) {
	ctrls := a.controllers(ex.Namespace, values)
	if hibernated {
		if unfit == nil {
			return "", nil
		}
		// Nothing can be read in the shoot: a handover made before stays, nothing else is written.
		handover, err := ctrls.HandedOver(ctx)
		if err != nil {
			return "", err
		}
		if handover == nil {
			return "", unfit
		}
		return "", nil
	}
	handover, err := ctrls.HandedOver(ctx)
	if err != nil {
		return "", err
	}
	continuous := cfg.Flux.Management == fluxapi.ManagementContinuous
	if handover != nil && !continuous {
		if unfit != nil {
			return unfitWarning(unfit, cfg.Flux.Namespace, handover.Version), nil
		}
		return "", nil
	}
	if handover == nil {
		exists, err := ctrls.Exists(ctx)
		if err != nil {
			return "", err
		}
		if exists {
			return "", unfit
		}
	}

	shoot, err := newAdoptionClient(ctx, a.client, ex.Namespace)
	if err != nil {
		return "", fmt.Errorf("failed creating the shoot client for the adoption check: %w", err)
	}
	running, err := adoption.FindRunningFlux(ctx, shoot, cfg.Flux.Namespace)
	if err != nil {
		return "", err
	}
	if running == nil {
		return "", unfit
	}
	self := running.SelfManaged
	if self == nil && unfit != nil {
		h := managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: running.Version}
		if h.Version == "" {
			h.Version = cfg.Flux.Version
		}
		log.Info("Leaving the shoot's Flux as it is: no embedded release supports its Kubernetes version", "version", running.Version)
		if err := ctrls.DeployHandedOver(ctx, h); err != nil {
			return "", fmt.Errorf("failed leaving the shoot's Flux as it is: %w", err)
		}
		return unfitWarning(unfit, cfg.Flux.Namespace, running.Version), nil
	}
	if self == nil {
		if continuous || handover != nil || !newerMinor(running.Version, cfg.Flux.Version) {
			return "", nil
		}
		log.Info("Leaving the shoot's newer Flux as it is", "version", running.Version, "selected", cfg.Flux.Version)
		if err := ctrls.DeployHandedOver(ctx, managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: running.Version}); err != nil {
			return "", fmt.Errorf("failed leaving the shoot's Flux %s as it is: %w", running.Version, err)
		}
		return fmt.Sprintf("the shoot runs Flux %s (Deployment %s/source-controller), a newer minor than the selected %s: the extension installs no older Flux "+
			"over it and leaves the controllers as they are (flux.management handover); select flux.version %s or later once this extension embeds it",
			running.Version, cfg.Flux.Namespace, cfg.Flux.Version, semver.MajorMinor(running.Version)), nil
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

// unfitWarning tells that the shoot keeps its Flux because no embedded release supports its
// Kubernetes version; version is what the shoot runs, empty if unknown.
func unfitWarning(unfit error, namespace, version string) string {
	running := ""
	if version != "" {
		running = ", Flux " + version
	}
	return fmt.Sprintf("%s; the extension installs none and leaves the Flux the shoot runs (Deployment %s/source-controller%s) as it is (flux.management handover)",
		strings.TrimPrefix(unfit.Error(), "flux.version: "), namespace, running)
}

// newerMinor tells whether the release running is of a newer minor than selected; an unlabelled
// or unreadable one is not.
func newerMinor(running, selected string) bool {
	return semver.IsValid(running) && semver.IsValid(selected) && semver.Compare(semver.MajorMinor(running), semver.MajorMinor(selected)) > 0
}
