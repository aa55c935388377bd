// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package healthcheck reports the bootstrap's state as the Extension condition BootstrapReady:
// gardenlet's care controller already covers the controllers ManagedResource, but not the health of
// Flux and kluctl objects (docs/development/architecture.md#health).
package healthcheck

import (
	"context"
	"fmt"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// ControllerName is the name used for the controller switch.
const ControllerName = "shoot-flux-healthcheck"

// BootstrapProgressingThreshold is how long a bootstrap object may report no readiness before
// the condition turns False.
var BootstrapProgressingThreshold = 10 * time.Minute

// DefaultMaxConcurrentReconciles is how many Extensions are checked at once: one worker checks 500
// healthy shoots within the minute (docs/performance.md), but a shoot whose API server does not
// answer holds its worker until ShootRequestTimeout, and ten keep the others on time.
const DefaultMaxConcurrentReconciles = 10

// DefaultAddOptions are the options used by AddToManager.
var DefaultAddOptions = healthcheck.DefaultAddArgs{
	HealthCheckConfig: extensionsconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: time.Minute}},
	// Every check runs with instances of its own (NewActuator), so workers do not share a shoot
	// client.
	Controller: controller.Options{MaxConcurrentReconciles: DefaultMaxConcurrentReconciles},
}

// AddToManager adds the health check controller with the DefaultAddOptions.
func AddToManager(_ context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(mgr, DefaultAddOptions)
}

// AddToManagerWithOptions adds the health check controller with the given options. It registers
// like the library's DefaultRegistration, with an actuator that creates the checks anew for every
// run instead of sharing one instance between the workers.
func AddToManagerWithOptions(mgr manager.Manager, opts healthcheck.DefaultAddArgs) error {
	reporter := NewRevisionReporter(mgr.GetClient(), mgr.GetLogger().WithName("revision-reporter"), RevisionReportDelay)
	if err := mgr.Add(reporter); err != nil {
		return fmt.Errorf("failed adding the revision reporter: %w", err)
	}
	args := healthcheck.AddArgs{
		ControllerOptions:       opts.Controller,
		Predicates:              healthcheck.DefaultPredicates(),
		Type:                    constants.ExtensionType,
		ExtensionClasses:        opts.ExtensionClasses,
		SyncPeriod:              opts.HealthCheckConfig.SyncPeriod,
		GetExtensionObjListFunc: func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} },
	}
	args.ControllerOptions.RecoverPanic = ptr.To(true)
	if err := args.RegisterExtension(newExtension, []string{ConditionTypeBootstrapReady},
		extensionsv1alpha1.SchemeGroupVersion.WithKind(extensionsv1alpha1.ExtensionResource), nil); err != nil {
		return fmt.Errorf("failed registering the health check of %s: %w", constants.ExtensionType, err)
	}
	return healthcheck.Register(mgr, args, NewActuator(mgr, BootstrapChecks(reporter), ShootRESTOptions(opts.HealthCheckConfig.ShootRESTOptions), opts.ExtensionClasses))
}

// ShootRequestTimeout bounds every request of the health check to a shoot's API server unless
// healthCheckConfig.shootRESTOptions.timeout sets another bound. Without it a shoot API server
// that accepts a request and does not answer holds the check, and its worker, until the check's
// own deadline (the sync period), and ten such shoots every worker.
var ShootRequestTimeout = 10 * time.Second

// ShootRESTOptions returns the configured options of the health check's shoot clients with
// ShootRequestTimeout if they set no timeout.
func ShootRESTOptions(configured *extensionsconfigv1alpha1.RESTOptions) extensionsconfigv1alpha1.RESTOptions {
	var o extensionsconfigv1alpha1.RESTOptions
	if configured != nil {
		o = *configured.DeepCopy()
	}
	if o.Timeout == nil {
		o.Timeout = ptr.To(ShootRequestTimeout)
	}
	return o
}

// BootstrapChecks returns the checks of shoot-flux Extensions: the bootstrap objects' readiness as
// the condition BootstrapReady, handing a newly applied revision to reporter.
func BootstrapChecks(reporter *RevisionReporter) ChecksFunc {
	return func() []healthcheck.ConditionTypeToHealthCheck {
		return []healthcheck.ConditionTypeToHealthCheck{{
			ConditionType: ConditionTypeBootstrapReady,
			HealthCheck:   CheckBootstrap(reporter),
		}}
	}
}
