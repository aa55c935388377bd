// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package extension contains the controller of shoot-flux Extension resources.
package extension

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/fairqueue"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/projectconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

const (
	// ControllerName is the name of the shoot-flux Extension controller.
	ControllerName = "shoot-flux"
	// FinalizerSuffix is the suffix of the finalizer on Extension resources.
	FinalizerSuffix = "shoot-flux"
)

// AddOptions are options to apply when adding the shoot-flux controller to the manager.
type AddOptions struct {
	// ControllerOptions contains options for the controller.
	ControllerOptions controller.Options
	// IgnoreOperationAnnotation specifies whether to ignore the operation annotation or not.
	IgnoreOperationAnnotation bool
	// ExtensionClasses are the extension classes the controller is responsible for.
	ExtensionClasses []extensionsv1alpha1.ExtensionClass
	// Config is the (defaulted) component configuration.
	Config config.ControllerConfiguration
	// Lifecycle is the operator's lifecycle of the embedded releases (package cmd builds it once
	// for the controller, the metrics and the admission); nil builds it from Config.
	Lifecycle *releases.Lifecycle
	// GardenCluster gives access to the garden; it must be added to the manager by the caller.
	GardenCluster *gardencluster.Cluster
	// Resync is how often an unchanged Extension is reconciled again.
	Resync time.Duration
}

// DefaultAddOptions are the default options for the controller, filled from the command line.
var DefaultAddOptions = AddOptions{Resync: 30 * time.Minute}

// AddToManager adds the controller with the DefaultAddOptions.
func AddToManager(ctx context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(ctx, mgr, DefaultAddOptions)
}

// AddToManagerWithOptions adds the controller with the given options to the manager.
func AddToManagerWithOptions(ctx context.Context, mgr manager.Manager, opts AddOptions) error {
	if opts.GardenCluster == nil {
		return fmt.Errorf("the shoot-flux controller needs access to the garden cluster")
	}
	watches, err := projectconfig.AddToManager(ctx, mgr, opts.GardenCluster, mgr.GetLogger().WithName(ControllerName))
	if err != nil {
		return err
	}
	controllerOptions := opts.ControllerOptions
	// No share configured (tests with a configuration built by hand) needs no fair queue.
	if percent := int(opts.Config.Limits.ProjectWorkersPercent); controllerOptions.NewQueue == nil && percent > 0 {
		controllerOptions.NewQueue = fairqueue.New(max(1, controllerOptions.MaxConcurrentReconciles), percent, int(opts.Config.Limits.ReservedWorkersPercent))
	}
	return extension.Add(mgr, extension.AddArgs{
		Actuator:                  metrics.InstrumentActuator(NewActuator(mgr.GetClient(), mgr.GetAPIReader(), opts.GardenCluster.Client(), mgr.GetEventRecorder(ControllerName), opts.Config, opts.Lifecycle)),
		ControllerOptions:         controllerOptions,
		Name:                      ControllerName,
		FinalizerSuffix:           FinalizerSuffix,
		Resync:                    opts.Resync,
		Predicates:                predicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:                      constants.ExtensionType,
		IgnoreOperationAnnotation: opts.IgnoreOperationAnnotation,
		ExtensionClasses:          opts.ExtensionClasses,
		// The project ConfigMaps of the garden reach the Extensions of their shoots.
		WatchBuilder: watches,
	})
}

// predicates select the Extension events to reconcile. Without the operation annotation (local
// development), gardener's defaults fall short: they only admit generation changes, and their
// shoot-not-failed precondition rejects the generic events of the library's Cluster watch, so
// hibernation, migrate/restore/reconcile annotations and Cluster changes would go unnoticed. The
// reconciler skips failed shoots itself, so the precondition is not needed there.
func predicates(ctx context.Context, mgr manager.Manager, ignoreOperationAnnotation bool) []predicate.Predicate {
	if !ignoreOperationAnnotation {
		return extension.DefaultPredicates(ctx, mgr, false)
	}
	return []predicate.Predicate{predicate.Or(predicate.GenerationChangedPredicate{}, hasOperationAnnotation)}
}

var hasOperationAnnotation = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ok := o.GetAnnotations()[v1beta1constants.GardenerOperation]
	return ok
})
