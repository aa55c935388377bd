// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package metrics owns the Prometheus metrics of the shoot-flux extension. They are registered on
// controller-runtime's registry, so the manager's /metrics endpoint serves them next to
// controller-runtime's own. Every label has a small, fixed set of values: a repository URL, a
// namespace or an error message would give every tenant a series of its own and let one project
// flood the seed's Prometheus.
package metrics

import (
	"context"
	"errors"
	"net"
	"os"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Namespace is the prefix of every metric of the extension.
const Namespace = "shoot_flux"

// Phases of an Extension operation (label phase). ForceDelete counts as delete.
const (
	PhaseReconcile = "reconcile"
	PhaseDelete    = "delete"
	PhaseMigrate   = "migrate"
	PhaseRestore   = "restore"
)

// Classes of failed operations (label class).
const (
	// ClassConfiguration is an error of the user's input: gardener's ERR_CONFIGURATION_PROBLEM.
	ClassConfiguration = "configuration"
	// ClassTimeout is a wait that ran out of time, e.g. for gardener-resource-manager.
	ClassTimeout = "timeout"
	// ClassInfrastructure is every other error: API servers, the garden, host key scans.
	ClassInfrastructure = "infrastructure"
)

// Results of an SSH host key scan (label result).
const (
	ScanOK              = "ok"
	ScanRefusedByPolicy = "refused_by_policy"
	ScanUnreachable     = "unreachable"
	ScanTimeout         = "timeout"
)

var (
	operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "operations_total",
		Help:      "Extension operations the controller ran, by phase (reconcile, delete, migrate, restore), failed ones included.",
	}, []string{"phase"})

	operationErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "reconcile_errors_total",
		Help:      "Failed Extension operations by phase (reconcile, delete, migrate, restore) and class: configuration (ERR_CONFIGURATION_PROBLEM, the user's input), timeout (a wait ran out of time) or infrastructure (everything else).",
	}, []string{"phase", "class"})

	hostKeyScans = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "host_key_scans_total",
		Help:      "SSH host key scans of repository hosts by result: ok, refused_by_policy (the operator's host policy), unreachable (refused connection, unknown name, failed handshake) or timeout (timeouts.hostKeyScan).",
	}, []string{"result"})

	deployKeysGenerated = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "deploy_keys_generated_total",
		Help:      "SSH deploy keys generated for repositories (or shoots) that had none.",
	})

	deployKeysRotated = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "deploy_keys_rotated_total",
		Help:      "SSH deploy keys replaced on request (annotation shoot-flux.extensions.gardener.cloud/rotate).",
	})

	projectWaiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace,
		Name:      "reconciles_waiting_for_project_share",
		Help:      "Extension reconciles that wait for a worker because their project occupies its share of the workers (limits.projectWorkersPercent) or has a reconcile in flight while only the reserve is free (limits.reservedWorkersPercent).",
	})

	managedResourceWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "managed_resource_writes_total",
		Help:      "Write requests to the seed for the extension's ManagedResources and their Secrets, by ManagedResource name, kind (ManagedResource, Secret) and verb (create, update, patch, delete).",
	}, []string{"managed_resource", "kind", "verb"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(operations, operationErrors, hostKeyScans, deployKeysGenerated, deployKeysRotated, projectWaiting, managedResourceWrites)
	// Every label value that can occur is exported from the start, so that rates and alerts see a
	// zero instead of no series before the first occurrence.
	for _, phase := range []string{PhaseReconcile, PhaseDelete, PhaseMigrate, PhaseRestore} {
		operations.WithLabelValues(phase)
		for _, class := range []string{ClassConfiguration, ClassTimeout, ClassInfrastructure} {
			operationErrors.WithLabelValues(phase, class)
		}
	}
	for _, result := range []string{ScanOK, ScanRefusedByPolicy, ScanUnreachable, ScanTimeout} {
		hostKeyScans.WithLabelValues(result)
	}
}

// Classify returns the class of an operation's error; ctx is the operation's context, whose
// expiry makes any error a timeout.
func Classify(ctx context.Context, err error) string {
	for _, code := range v1beta1helper.ExtractErrorCodes(err) {
		if code == gardencorev1beta1.ErrorConfigurationProblem || code == gardencorev1beta1.ErrorRetryableConfigurationProblem {
			return ClassConfiguration
		}
	}
	if ctx.Err() != nil || isTimeout(err) {
		return ClassTimeout
	}
	return ClassInfrastructure
}

func isTimeout(err error) bool {
	var netErr net.Error
	return wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// RecordProjectWaiting adds delta to the reconciles that wait for a worker the fair queue's bounds
// admit them to.
func RecordProjectWaiting(delta int) {
	projectWaiting.Add(float64(delta))
}

// RecordOperation counts an Extension operation of phase and, if it failed, its error class.
func RecordOperation(ctx context.Context, phase string, err error) {
	operations.WithLabelValues(phase).Inc()
	if err != nil {
		operationErrors.WithLabelValues(phase, Classify(ctx, err)).Inc()
	}
}

// ScanResult returns the result label of a host key scan that ended with err.
func ScanResult(err error) string {
	switch {
	case err == nil:
		return ScanOK
	case deniedByPolicy(err):
		return ScanRefusedByPolicy
	case isTimeout(err):
		return ScanTimeout
	default:
		return ScanUnreachable
	}
}

// deniedByPolicy tells whether err is hostpolicy.ErrDenied, which marks itself so that this leaf
// package need not import the host policy.
func deniedByPolicy(err error) bool {
	var denied interface{ DeniedByPolicy() bool }
	return errors.As(err, &denied) && denied.DeniedByPolicy()
}

// RecordHostKeyScan counts a host key scan that ended with err.
func RecordHostKeyScan(err error) {
	hostKeyScans.WithLabelValues(ScanResult(err)).Inc()
}

// RecordDeployKeys counts a stored deploy key write: generated tells whether a new key was
// generated for a name that had none, rotated how many keys it replaced on request.
func RecordDeployKeys(generated bool, rotated int) {
	if generated {
		deployKeysGenerated.Inc()
	}
	deployKeysRotated.Add(float64(rotated))
}

// Names returns the names of all metrics of the extension, e.g. to check that alerting rules name
// only metrics that exist.
func Names() []string {
	return []string{
		Namespace + "_operations_total",
		Namespace + "_reconcile_errors_total",
		Namespace + "_host_key_scans_total",
		Namespace + "_deploy_keys_generated_total",
		Namespace + "_deploy_keys_rotated_total",
		Namespace + "_reconciles_waiting_for_project_share",
		Namespace + "_managed_resource_writes_total",
		Namespace + "_shoots",
		Namespace + "_shoots_by_version",
		Namespace + "_shoots_pending_release",
		Namespace + "_shoots_by_release_lifecycle",
		Namespace + "_shoots_outside_kubernetes_range",
		Namespace + "_oldest_failing_bootstrap_seconds",
		Namespace + "_heartbeat_renew_timestamp_seconds",
	}
}
