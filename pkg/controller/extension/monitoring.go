// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
)

func (a *actuator) monitoring(namespace string, values monitoring.Values) *monitoring.Monitoring {
	return monitoring.New(a.client, a.reader, namespace, values)
}

// reconcileMonitoring adds the delivered controllers to the shoot's own monitoring, or removes
// them when the operator, the project or the shoot owner turned it off. The objects live in the
// seed and stay while the shoot is hibernated, like the controllers ManagedResource; the shoot's
// Prometheus does not run then.
func (a *actuator) reconcileMonitoring(ctx context.Context, namespace string, cfg *fluxapi.FluxConfig, bootstrapped bool) error {
	m := a.monitoring(namespace, monitoringValues(cfg, bootstrapped))
	if !a.config.Monitoring.Shoot.Enabled || !cfg.Monitoring.Shoot.Enabled {
		if err := m.Destroy(ctx); err != nil {
			return fmt.Errorf("failed removing the shoot's monitoring: %w", err)
		}
		return nil
	}
	if err := m.Deploy(ctx); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("failed deploying the shoot's monitoring: the seed serves no prometheus-operator ScrapeConfigs or PrometheusRules (monitoring.shoot.enabled of the extension's configuration turns the shoot monitoring off): %w", err)
		}
		return fmt.Errorf("failed deploying the shoot's monitoring: %w", err)
	}
	return nil
}

// monitoringValues describe the controllers and bootstrap objects the configuration delivers.
func monitoringValues(cfg *fluxapi.FluxConfig, bootstrapped bool) monitoring.Values {
	var values monitoring.Values
	for _, component := range cfg.Flux.Components {
		values.Controllers = append(values.Controllers, monitoring.Controller{Component: component, Namespace: cfg.Flux.Namespace})
	}
	if cfg.Kluctl.Enabled {
		values.Controllers = append(values.Controllers, monitoring.Controller{Component: fluxapi.ComponentKluctlController, Namespace: cfg.Kluctl.Namespace})
	}
	namespace, ok := bootstrap.Namespace(cfg)
	if !bootstrapped || !ok {
		return values
	}
	b := &monitoring.Bootstrap{Mode: cfg.Bootstrap.Mode, Name: bootstrap.ObjectName(cfg), Namespace: namespace}
	if src := cfg.Source; src != nil {
		b.OCI = src.OCI != nil
		b.DeployKey = src.OCI == nil && src.SecretResourceName == "" && src.Type == fluxapi.RepositoryTypePrivate
	}
	values.Bootstrap = b
	return values
}
