package extension

import (
	"context"
	"encoding/json"
	"fmt"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

// reconcileControllers deploys the controllers ManagedResource according to flux.management. In
// mode handover it is deployed and applied once, then handed over: the resource manager ignores it
// from then on, so that the user's repository can manage the controllers. Mode continuous takes a
// handed-over ManagedResource back, and the resource manager reverts the user's changes.
func (a *actuator) reconcileControllers(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, cfg *fluxapi.FluxConfig, values controllers.Values, hibernated bool, status *fluxv1alpha1.FluxStatus) error {
	status.Management = string(cfg.Flux.Management)
	ctrls := a.controllers(ex.Namespace, values)
	handover, err := ctrls.HandedOver(ctx)
	if err != nil {
		return err
	}

	if cfg.Flux.Management == fluxapi.ManagementHandover {
		if handover == nil {
			if handover, err = a.restoreHandover(ctx, log, ctrls, ex); err != nil {
				return err
			}
		}
		if handover != nil {
			reportHandover(log, handover, values, status)
			return nil
		}
	}

	if handover != nil {
		log.Info("Taking the controllers over again", "handedOverVersion", handover.Version)
		if err := ctrls.TakeOver(ctx); err != nil {
			return fmt.Errorf("failed taking the controllers over: %w", err)
		}
	}
	if err := deployAndWait(ctx, ctrls, hibernated); err != nil {
		return fmt.Errorf("failed deploying the controllers: %w", err)
	}
	// A hibernated shoot's resource manager has not applied them yet: the handover waits for a
	// reconcile after the wake-up.
	if cfg.Flux.Management != fluxapi.ManagementHandover || hibernated {
		return nil
	}
	h := managedresource.Handover{At: metav1.Now().Rfc3339Copy(), Version: cfg.Flux.Version}
	log.Info("Handing the controllers over", "version", h.Version)
	if err := ctrls.HandOver(ctx, h); err != nil {
		return fmt.Errorf("failed handing the controllers over: %w", err)
	}
	status.HandedOverAt = &h.At
	status.HandedOverVersion = h.Version
	return nil
}

// restoreHandover hands the controllers over without applying them when they were handed over on
// the seed the shoot's control plane came from: the ManagedResource with its annotations stays
// behind on a migration, the Extension's status.state moves with the shoot. Applying them once more
// would revert what the user's repository made of them.
func (a *actuator) restoreHandover(ctx context.Context, log logr.Logger, ctrls *managedresource.ManagedResource, ex *extensionsv1alpha1.Extension) (*managedresource.Handover, error) {
	h := handoverOfState(ex.Status.State)
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

// reportHandover tells in the status what was handed over, which is what the shoot runs as far as
// the extension knows; the downgrade check compares with it before a takeover rolls the
// configuration out.
func reportHandover(log logr.Logger, h *managedresource.Handover, values controllers.Values, status *fluxv1alpha1.FluxStatus) {
	status.HandedOverAt = &h.At
	status.HandedOverVersion = h.Version
	if h.Version == status.FluxVersion {
		return
	}
	status.Warnings = append(status.Warnings, fmt.Sprintf(
		"flux.version selects %s, but the controllers were handed over with %s (flux.management handover): the extension does not change them; set flux.management to continuous to roll it out",
		status.FluxVersion, h.Version))
	status.FluxVersion = h.Version
	installed := values.Flux
	installed.Version = h.Version
	if images, err := manifests.Images(installed, values.Kluctl); err == nil {
		status.Images = images
	} else {
		log.Info("Reporting the images of the selected release instead of the handed-over one", "reason", err.Error())
	}
}

// handoverState is the Extension's status.state: gardener keeps it in the ShootState and writes it
// into the Extension on the seed a control plane migrates to.
type handoverState struct {
	HandedOverAt      metav1.Time `json:"handedOverAt"`
	HandedOverVersion string      `json:"handedOverVersion"`
}

// stateOf returns the status.state for a status; nil while the extension manages the controllers.
func stateOf(status *fluxv1alpha1.FluxStatus) (*runtime.RawExtension, error) {
	if status.HandedOverAt == nil {
		return nil, nil
	}
	raw, err := json.Marshal(handoverState{HandedOverAt: *status.HandedOverAt, HandedOverVersion: status.HandedOverVersion})
	if err != nil {
		return nil, fmt.Errorf("failed encoding the state: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

func handoverOfState(state *runtime.RawExtension) *managedresource.Handover {
	if state == nil || len(state.Raw) == 0 {
		return nil
	}
	s := handoverState{}
	if err := json.Unmarshal(state.Raw, &s); err != nil || s.HandedOverAt.IsZero() {
		return nil
	}
	return &managedresource.Handover{At: s.HandedOverAt, Version: s.HandedOverVersion}
}

// destroyControllers deletes the controllers ManagedResource. Handed-over controllers belong to the
// user, whose repository may manage them: they stay in the shoot.
func (a *actuator) destroyControllers(ctx context.Context, log logr.Logger, namespace string, wait bool) error {
	ctrls := a.controllers(namespace, controllers.Values{})
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
