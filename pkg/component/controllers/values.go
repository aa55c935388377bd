// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

// ValuesFor are the values of a shoot's controllers ManagedResource for its effective
// configuration, the operator's registry and image pull secret; insecureHostKeys turns off the
// kluctl controller's strict host key checking.
func ValuesFor(cfg *fluxapi.FluxConfig, registry string, pullSecret []byte, insecureHostKeys bool) Values {
	values := Values{Flux: manifests.FluxOptions{
		Version:    cfg.Flux.Version,
		Components: cfg.Flux.Components,
		Namespace:  cfg.Flux.Namespace,
		Registry:   registry,
		Tuning:     tuning(cfg, fluxapi.KnownComponents, pullSecret),
	}}
	if cfg.Kluctl.Enabled {
		values.Kluctl = &manifests.KluctlOptions{
			Version:                      cfg.Kluctl.Version,
			Namespace:                    cfg.Kluctl.Namespace,
			Registry:                     registry,
			DisableStrictHostKeyChecking: insecureHostKeys,
			Tuning:                       tuning(cfg, []string{fluxapi.ComponentKluctlController}, pullSecret),
		}
	}
	return values
}

// tuning picks the settings of the given components, so that a render is only cached again when
// its own settings change.
func tuning(cfg *fluxapi.FluxConfig, components []string, pullSecret []byte) manifests.Tuning {
	t := manifests.Tuning{ImagePullSecret: pullSecret}
	for _, c := range components {
		if s, ok := cfg.Controllers[c]; ok {
			if t.Controllers == nil {
				t.Controllers = map[string]fluxapi.ControllerSettings{}
			}
			t.Controllers[c] = s
		}
	}
	return t
}
