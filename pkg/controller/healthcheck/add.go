// Package healthcheck registers the health checks of shoot-flux Extensions.
//
// The controllers ManagedResource needs no check of ours: since gardener v1.8x gardenlet's shoot
// care controller aggregates every class-less ManagedResource of the shoot namespace into the
// Shoot's SystemComponentsHealthy condition (pkg/gardenlet/controller/shoot/care/health.go in
// v1.149). Both our ManagedResources are class-less. gardener-resource-manager judges the health
// of well-known kinds only (Deployments, CRDs, ...); KluctlDeployments and Flux custom resources
// are applied but not health-checked, so a broken user repository never turns
// SystemComponentsHealthy false. Its state is reported here as the Extension condition
// BootstrapReady instead.
package healthcheck

import (
	"context"
	"fmt"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// DefaultAddOptions are the options used by AddToManager.
var DefaultAddOptions = healthcheck.DefaultAddArgs{
	HealthCheckConfig: extensionsconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: time.Minute}},
	// The library injects the shoot client into a check instance shared by all reconciles;
	// one worker keeps each check on the shoot it was given.
	Controller: controller.Options{MaxConcurrentReconciles: 1},
}

// AddToManager adds the health check controller with the DefaultAddOptions.
func AddToManager(_ context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(mgr, DefaultAddOptions)
}

// AddToManagerWithOptions adds the health check controller with the given options.
func AddToManagerWithOptions(mgr manager.Manager, opts healthcheck.DefaultAddArgs) error {
	reporter := NewRevisionReporter(mgr.GetClient(), mgr.GetLogger().WithName("revision-reporter"), RevisionReportDelay)
	if err := mgr.Add(reporter); err != nil {
		return fmt.Errorf("failed adding the revision reporter: %w", err)
	}
	return healthcheck.DefaultRegistration(
		constants.ExtensionType,
		extensionsv1alpha1.SchemeGroupVersion.WithKind(extensionsv1alpha1.ExtensionResource),
		func() client.ObjectList { return &extensionsv1alpha1.ExtensionList{} },
		func() extensionsv1alpha1.Object { return &extensionsv1alpha1.Extension{} },
		mgr,
		opts,
		nil,
		[]healthcheck.ConditionTypeToHealthCheck{{
			ConditionType: ConditionTypeBootstrapReady,
			HealthCheck:   CheckBootstrap(reporter),
		}},
		nil,
	)
}
