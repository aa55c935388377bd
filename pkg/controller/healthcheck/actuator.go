// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck

import (
	"context"
	"fmt"
	"sync"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// ChecksFunc returns new instances of the health checks, one set per run.
type ChecksFunc func() []healthcheck.ConditionTypeToHealthCheck

// checkActuator runs gardener's health check actuator with a check instance per Extension: the
// library injects the shoot client into the instance it was given, so a shared one would let two
// workers read each other's shoot. The shoot client is ours (shootClient): the library's discovers
// the shoot's API, whose size the shoot's owner decides.
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
// actuator, which runs the checks and aggregates their results; a new one costs no more than the
// struct. The checks that need the shoot are handed to it wrapped in shootCheck, so that it builds
// no shoot client of its own.
func (a *checkActuator) ExecuteHealthCheckFunctions(ctx context.Context, log logr.Logger, request types.NamespacedName) (*[]healthcheck.Result, error) {
	shoot := &shootClient{seed: a.mgr.GetClient(), namespace: request.Namespace, restOptions: a.restOptions}
	checks := a.newChecks()
	for i, c := range checks {
		if target, ok := c.HealthCheck.(healthcheck.TargetClient); ok {
			checks[i].HealthCheck = &shootCheck{HealthCheck: c.HealthCheck, target: target, shoot: shoot}
		}
	}
	return healthcheck.NewActuator(a.mgr, constants.ExtensionType, extensionsv1alpha1.ExtensionResource, newExtension, checks, a.restOptions, a.classes).
		ExecuteHealthCheckFunctions(ctx, log, request)
}

// shootClient builds the shoot client of one run once, for all its checks, as the library does.
type shootClient struct {
	seed        client.Client
	namespace   string
	restOptions extensionsconfigv1alpha1.RESTOptions

	once   sync.Once
	client client.Client
	err    error
}

// get returns a client that maps only the kinds of the bootstrap objects and reads no response
// over shootclient.MaxResponseBytes, so that a check's memory does not depend on the shoot.
func (s *shootClient) get(ctx context.Context) (client.Client, error) {
	s.once.Do(func() {
		s.client, s.err = shootclient.New(ctx, s.seed, s.namespace, s.restOptions, bootstrap.AllObjectKinds()...)
	})
	return s.client, s.err
}

// shootCheck injects the shoot client into a check before it runs. It is no
// healthcheck.TargetClient itself, so the library builds none.
type shootCheck struct {
	healthcheck.HealthCheck
	target healthcheck.TargetClient
	shoot  *shootClient
}

var _ healthcheck.SourceClient = (*shootCheck)(nil)

// InjectSourceClient implements healthcheck.SourceClient for a check that takes the seed client.
func (s *shootCheck) InjectSourceClient(c client.Client) {
	healthcheck.SourceClientInfo(c, s.HealthCheck)
}

// Check implements healthcheck.HealthCheck. Without a shoot client it fails like the library's
// actuator does.
func (s *shootCheck) Check(ctx context.Context, request types.NamespacedName) (*healthcheck.SingleCheckResult, error) {
	c, err := s.shoot.get(ctx)
	if err != nil {
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: fmt.Sprintf("failed to create shoot client: %v", err)}, err
	}
	s.target.InjectTargetClient(c)
	return s.HealthCheck.Check(ctx, request)
}

func newExtension() extensionsv1alpha1.Object { return &extensionsv1alpha1.Extension{} }
