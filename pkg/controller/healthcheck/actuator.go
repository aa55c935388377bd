package healthcheck

import (
	"context"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// ChecksFunc returns new instances of the health checks, one set per run.
type ChecksFunc func() []healthcheck.ConditionTypeToHealthCheck

// checkActuator runs gardener's health check actuator with check instances of its own for every
// Extension it checks. The library injects the seed and the shoot client into the check instance
// it was given; shared by all reconciles, two workers would overwrite each other's shoot client,
// and a check would read another shoot and report it as its own. With an instance per run the
// controller may run several workers, so that a shoot whose API server does not answer holds one
// worker until the check times out (the sync period) instead of every shoot of the seed.
type checkActuator struct {
	mgr         manager.Manager
	newChecks   ChecksFunc
	restOptions extensionsconfigv1alpha1.RESTOptions
	classes     []extensionsv1alpha1.ExtensionClass
}

var _ healthcheck.HealthCheckActuator = (*checkActuator)(nil)

// NewActuator returns a health check actuator for shoot-flux Extensions that runs the checks
// newChecks returns, new instances for every run.
func NewActuator(mgr manager.Manager, newChecks ChecksFunc, restOptions extensionsconfigv1alpha1.RESTOptions, classes []extensionsv1alpha1.ExtensionClass) healthcheck.HealthCheckActuator {
	return &checkActuator{mgr: mgr, newChecks: newChecks, restOptions: restOptions, classes: classes}
}

// ExecuteHealthCheckFunctions implements healthcheck.HealthCheckActuator with the library's
// actuator, which builds the shoot client, runs the checks and aggregates their results; a new
// one costs no more than the struct.
func (a *checkActuator) ExecuteHealthCheckFunctions(ctx context.Context, log logr.Logger, request types.NamespacedName) (*[]healthcheck.Result, error) {
	return healthcheck.NewActuator(a.mgr, constants.ExtensionType, extensionsv1alpha1.ExtensionResource, newExtension, a.newChecks(), a.restOptions, a.classes).
		ExecuteHealthCheckFunctions(ctx, log, request)
}

func newExtension() extensionsv1alpha1.Object { return &extensionsv1alpha1.Extension{} }
