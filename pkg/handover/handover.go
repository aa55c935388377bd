// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package handover applies flux.management to the controllers ManagedResource. In mode handover
// it is deployed and applied once, then handed over: the resource manager ignores it from then on,
// so that the user's repository can manage the controllers. Mode continuous takes a handed-over
// ManagedResource back, and the resource manager reverts the user's changes.
package handover

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

// Request is the controllers ManagedResource of one shoot and how it is to be managed.
type Request struct {
	Controllers *managedresource.ManagedResource
	Values      controllers.Values
	Management  fluxapi.ManagementMode
	// State is the Extension's status.state, which carries a handover across a control plane
	// migration.
	State      *runtime.RawExtension
	Hibernated bool
	// Deploy deploys the ManagedResource and waits for the resource manager to apply it.
	Deploy func(context.Context, *managedresource.ManagedResource) error
}

// Result is what the shoot runs as far as the extension knows.
type Result struct {
	// Handover is nil while the extension manages the controllers.
	Handover *managedresource.Handover
	// Warning tells the shoot owner that the handed-over release is not the selected one; Images
	// are then those of the handed-over release, nil if they are unknown.
	Warning string
	Images  map[string]string
}

// Reconcile deploys the controllers ManagedResource according to req.Management.
func Reconcile(ctx context.Context, log logr.Logger, req Request) (Result, error) {
	ctrls := req.Controllers
	handover, err := ctrls.HandedOver(ctx)
	if err != nil {
		return Result{}, err
	}

	if req.Management == fluxapi.ManagementHandover {
		if handover == nil {
			if handover, err = restore(ctx, log, ctrls, req.State); err != nil {
				return Result{}, err
			}
		}
		if handover != nil {
			return report(log, handover, req.Values), nil
		}
	}

	if handover != nil {
		log.Info("Taking the controllers over again", "handedOverVersion", handover.Version)
		if err := ctrls.TakeOver(ctx); err != nil {
			return Result{}, fmt.Errorf("failed taking the controllers over: %w", err)
		}
	}
	if err := req.Deploy(ctx, ctrls); err != nil {
		return Result{}, fmt.Errorf("failed deploying the controllers: %w", err)
	}
	// A hibernated shoot's resource manager has not applied them yet: the handover waits for a
	// reconcile after the wake-up.
	if req.Management != fluxapi.ManagementHandover || req.Hibernated {
		return Result{}, nil
	}
	h := managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: req.Values.Flux.Version}
	log.Info("Handing the controllers over", "version", h.Version)
	if err := ctrls.HandOver(ctx, h); err != nil {
		return Result{}, fmt.Errorf("failed handing the controllers over: %w", err)
	}
	return Result{Handover: &h}, nil
}

// restore hands the controllers over without applying them when they were handed over on the seed
// the shoot's control plane came from: the ManagedResource stays behind on a migration, the
// status.state moves with the shoot. Applying them once more would revert the user's changes.
func restore(ctx context.Context, log logr.Logger, ctrls *managedresource.ManagedResource, state *runtime.RawExtension) (*managedresource.Handover, error) {
	h := OfState(state)
	if h == nil {
		return nil, nil
	}
	exists, err := ctrls.Exists(ctx)
	if err != nil || exists {
		return nil, err
	}
	log.Info("Restoring the handover of the controllers", "handedOverVersion", h.Version)
	if err := ctrls.DeployHandedOver(ctx, *h); err != nil {
		return nil, fmt.Errorf("failed restoring the handed-over controllers: %w", err)
	}
	return h, nil
}

// report tells what was handed over, which is what the shoot runs; the downgrade check compares
// with it before a takeover rolls the configuration out.
func report(log logr.Logger, h *managedresource.Handover, values controllers.Values) Result {
	r := Result{Handover: h}
	selected := values.Flux.Version
	if h.Version == selected {
		return r
	}
	r.Warning = fmt.Sprintf(
		"flux.version selects %s, but the controllers were handed over with %s (flux.management handover): the extension does not change them; set flux.management to continuous to roll it out",
		selected, h.Version)
	installed := values.Flux
	installed.Version = h.Version
	if images, err := manifests.Images(installed, values.Kluctl); err == nil {
		r.Images = images
	} else {
		log.Info("Reporting the images of the selected release instead of the handed-over one", "reason", err.Error())
	}
	return r
}

// state is the Extension's status.state: gardener keeps it in the ShootState and writes it into
// the Extension on the seed a control plane migrates to.
type state struct {
	HandedOverAt      metav1.Time `json:"handedOverAt"`
	HandedOverVersion string      `json:"handedOverVersion"`
}

// State returns the status.state of a handover; nil while the extension manages the controllers.
func State(h *managedresource.Handover) (*runtime.RawExtension, error) {
	if h == nil {
		return nil, nil
	}
	raw, err := json.Marshal(state{HandedOverAt: h.At, HandedOverVersion: h.Version})
	if err != nil {
		return nil, fmt.Errorf("failed encoding the state: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// OfState returns the handover a status.state records, nil if none.
func OfState(raw *runtime.RawExtension) *managedresource.Handover {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	s := state{}
	if err := json.Unmarshal(raw.Raw, &s); err != nil || s.HandedOverAt.IsZero() {
		return nil
	}
	return &managedresource.Handover{At: s.HandedOverAt, Version: s.HandedOverVersion}
}

// Destroy deletes the controllers ManagedResource. Handed-over controllers belong to the user,
// whose repository may manage them: they stay in the shoot.
func Destroy(ctx context.Context, log logr.Logger, ctrls *managedresource.ManagedResource, wait bool) error {
	handover, err := ctrls.HandedOver(ctx)
	if err != nil {
		return err
	}
	destroy := ctrls.Destroy
	if handover != nil {
		log.Info("Leaving the handed-over controllers in the shoot", "handedOverVersion", handover.Version)
		destroy = ctrls.DestroyKeepingObjects
	}
	if err := destroy(ctx); err != nil {
		return err
	}
	if !wait {
		return nil
	}
	return ctrls.WaitCleanup(ctx)
}
