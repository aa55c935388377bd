// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
)

// Controllers is what Leave needs of the controllers' ManagedResource.
type Controllers interface {
	HandedOver(ctx context.Context) (*managedresource.Handover, error)
	Exists(ctx context.Context) (bool, error)
	DeployHandedOver(ctx context.Context, h managedresource.Handover) error
}

// Request is a shoot's case for Leave.
type Request struct {
	Controllers Controllers
	// Shoot returns a client of the shoot; it is called only when the shoot must be read.
	Shoot func(context.Context) (client.Reader, error)
	// Namespace is Flux's namespace in the shoot, Selected the Flux release the reconcile selected.
	Namespace, Selected string
	// Continuous is set for flux.management continuous.
	Continuous bool
	Hibernated bool
	// Unfit tells that no embedded release supports the shoot's Kubernetes version.
	Unfit error
}

// Leave keeps the extension, before its first apply, from fighting a Flux it did not install (one
// its repository manages, a newer minor, or any when no embedded release fits: Unfit). Handover
// leaves it as it is with a warning; continuous fails the reconcile and what runs stays.
func Leave(ctx context.Context, log logr.Logger, req Request) (string, error) {
	handover, err := req.Controllers.HandedOver(ctx)
	if err != nil {
		return "", err
	}
	if req.Hibernated {
		// Nothing can be read in the shoot: a handover made before stays, nothing else is written.
		if handover == nil {
			return "", req.Unfit
		}
		return "", nil
	}
	if handover != nil && !req.Continuous {
		// Handed over before: what runs stays; Unfit is a warning here, not a failure.
		return unfitWarning(req.Unfit, req.Namespace, handover.Version), nil
	}
	if handover == nil {
		exists, err := req.Controllers.Exists(ctx)
		if err != nil {
			return "", err
		}
		if exists {
			return "", req.Unfit
		}
	}

	shoot, err := req.Shoot(ctx)
	if err != nil {
		return "", fmt.Errorf("failed creating the shoot client for the adoption check: %w", err)
	}
	running, err := FindRunningFlux(ctx, shoot, req.Namespace)
	if err != nil {
		return "", err
	}
	if running == nil {
		return "", req.Unfit
	}
	leave := func(version, message string) error {
		if version == "" {
			version = req.Selected
		}
		if err := req.Controllers.DeployHandedOver(ctx, managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: version}); err != nil {
			return fmt.Errorf("failed %s: %w", message, err)
		}
		return nil
	}
	self := running.SelfManaged
	switch {
	case self == nil && req.Unfit != nil:
		log.Info("Leaving the shoot's Flux as it is: no embedded release supports its Kubernetes version", "version", running.Version)
		if err := leave(running.Version, "leaving the shoot's Flux as it is"); err != nil {
			return "", err
		}
		return unfitWarning(req.Unfit, req.Namespace, running.Version), nil
	case self == nil:
		if req.Continuous || handover != nil || !newerMinor(running.Version, req.Selected) {
			return "", nil
		}
		log.Info("Leaving the shoot's newer Flux as it is", "version", running.Version, "selected", req.Selected)
		if err := leave(running.Version, "leaving the shoot's Flux "+running.Version+" as it is"); err != nil {
			return "", err
		}
		return fmt.Sprintf("the shoot runs Flux %s (Deployment %s/source-controller), a newer minor than the selected %s: the extension installs no older Flux "+
			"over it and leaves the controllers as they are (flux.management handover); select flux.version %s or later once this extension embeds it",
			running.Version, req.Namespace, req.Selected, semver.MajorMinor(running.Version)), nil
	}
	who := self.Describe(req.Namespace)
	if req.Continuous {
		return "", configerror.Wrap(errors.New("flux.management is continuous, but " + who +
			": the extension and the repository would overwrite each other's controllers; remove Flux from the repository, or set flux.management to handover to leave the controllers to it"))
	}
	log.Info("Leaving the controllers to the repository that manages Flux", "kustomization", self.Kustomization, "version", self.Version)
	if err := leave(self.Version, "handing the controllers over to the repository"); err != nil {
		return "", err
	}
	return who + ": the extension leaves the controllers to it (flux.management handover); " +
		"to have the extension manage them, remove Flux from the repository and set flux.management to continuous", nil
}

// unfitWarning tells that the shoot keeps its Flux because no embedded release supports its
// Kubernetes version; version is what the shoot runs, empty if unknown. Without unfit it is empty.
func unfitWarning(unfit error, namespace, version string) string {
	if unfit == nil {
		return ""
	}
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
