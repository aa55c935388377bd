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
		return MetricsEndpoint{Deployment: kluctlDeploymentName, Container: kluctlContainerName, Port: kluctlMetricsPort}, nil
	}
	for _, c := range fluxComponents {
		if c == component {
			return MetricsEndpoint{Deployment: component, Container: fluxMetricsContainer, Port: fluxMetricsPort}, nil
		}
	}
	return MetricsEndpoint{}, fmt.Errorf("unknown controller %q", component)
}
