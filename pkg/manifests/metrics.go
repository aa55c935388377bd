// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"fmt"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// MetricsEndpoint is where a delivered controller serves its Prometheus metrics: the pods of its
// Deployment (named like the component), the container and the name of its port. The shoot's
// Prometheus finds the pods by these, so they must match the embedded manifests of every release
// (a test renders them all).
type MetricsEndpoint struct {
	// Deployment is the Deployment, whose pods' names start with it and a dash.
	Deployment string
	// Container is the container that serves the metrics.
	Container string
	// Port is the name of the container's metrics port.
	Port string
	// MaxPods is the most pods of the Deployment that run at once: its replicas and the surge pod
	// of a rolling update. The shoot's Prometheus scrapes no more targets than that.
	MaxPods int
	// Reconcilers are the values of the label controller of the controller's
	// controller_runtime_reconcile_* series: controller-runtime names a controller after the kind
	// it reconciles (builder.For) unless the controller names itself (kluctl's --controller-name).
	Reconcilers []string
}

// maxPods is MetricsEndpoint.MaxPods of every delivered controller: one replica (every embedded
// Deployment) plus the surge pod of a rolling update (a test checks the manifests).
const maxPods = 2

// reconcilers are MetricsEndpoint.Reconcilers by component, read from the controllers' sources
// (internal/controller/*_controller.go of each Flux controller, kluctl's controller run command).
var reconcilers = map[string][]string{
	fluxapi.ComponentSourceController:       {"gitrepository", "ocirepository", "helmrepository", "helmchart", "bucket"},
	fluxapi.ComponentKustomizeController:    {"kustomization"},
	fluxapi.ComponentHelmController:         {"helmrelease"},
	fluxapi.ComponentNotificationController: {"alert", "provider", "receiver"},
	fluxapi.ComponentKluctlController:       {"kluctl-controller"},
}

// fluxMetricsContainer and fluxMetricsPort are the same in every Flux controller's Deployment.
const (
	fluxMetricsContainer = "manager"
	fluxMetricsPort      = "http-prom"
	kluctlMetricsPort    = "metrics"
)

// ControllerMetricsEndpoint returns the metrics endpoint of a Flux component or of the kluctl
// controller (fluxapi.ComponentKluctlController).
func ControllerMetricsEndpoint(component string) (MetricsEndpoint, error) {
	if component == fluxapi.ComponentKluctlController {
		return MetricsEndpoint{Deployment: kluctlDeploymentName, Container: kluctlContainerName, Port: kluctlMetricsPort,
			MaxPods: maxPods, Reconcilers: reconcilers[component]}, nil
	}
	for _, c := range fluxComponents {
		if c == component {
			return MetricsEndpoint{Deployment: component, Container: fluxMetricsContainer, Port: fluxMetricsPort,
				MaxPods: maxPods, Reconcilers: reconcilers[component]}, nil
		}
	}
	return MetricsEndpoint{}, fmt.Errorf("unknown controller %q", component)
}
