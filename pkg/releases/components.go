// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package releases

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

// Keys of the components, as the configuration, the providerStatus and the metrics name them.
const (
	KeyFlux   = "flux"
	KeyKluctl = "kluctl"
)

// Spec is where one component with embedded releases lives in the configuration and the
// providerStatus. Specs is the one list of them: everything that treats Flux and kluctl alike
// loops over it.
type Spec struct {
	// Key names the component in configuration paths (flux.version), in the providerStatus
	// (forcedMoves[].component) and in metric labels.
	Key string
	// Name names it in messages, e.g. "Flux".
	Name string
	// StatusField is the providerStatus field of the installed release, e.g. fluxVersion.
	StatusField string

	// Enabled tells whether the configuration installs the component.
	Enabled func(*fluxapi.FluxConfig) bool
	// Version is the release the configuration selects.
	Version func(*fluxapi.FluxConfig) *string
	// Selector is the selector a tenant's layer wrote, nil if none.
	Selector func(*fluxv1alpha1.FluxConfig) *string
	// Installed is the release the providerStatus records.
	Installed func(*fluxv1alpha1.FluxStatus) *string
	// Requested is the selector the tenants' layers wrote (providerStatus.requested).
	Requested func(*fluxv1alpha1.RequestedVersions) *string
	// Pending is the release that waits for the maintenance time window.
	Pending func(*fluxv1alpha1.PendingRelease) *string

	lifecycles func(config.Releases) []config.ReleaseLifecycle
	embedded   func(validation.SupportedVersions) []string
}

// VersionPath is the path of the component's version in a FluxConfig under fldPath.
func (s *Spec) VersionPath(fldPath *field.Path) *field.Path {
	if fldPath == nil {
		return field.NewPath(s.Key, "version")
	}
	return fldPath.Child(s.Key, "version")
}

// Supported returns the component's releases among supported.
func (s *Spec) Supported(supported validation.SupportedVersions) []string {
	return s.embedded(supported)
}

// Specs are the components with embedded releases, Flux first.
var Specs = []*Spec{
	{
		Key: KeyFlux, Name: "Flux", StatusField: "fluxVersion",
		Enabled: func(*fluxapi.FluxConfig) bool { return true },
		Version: func(c *fluxapi.FluxConfig) *string { return &c.Flux.Version },
		Selector: func(c *fluxv1alpha1.FluxConfig) *string {
			if c.Flux == nil {
				return nil
			}
			return c.Flux.Version
		},
		Installed:  func(s *fluxv1alpha1.FluxStatus) *string { return &s.FluxVersion },
		Requested:  func(r *fluxv1alpha1.RequestedVersions) *string { return &r.Flux },
		Pending:    func(p *fluxv1alpha1.PendingRelease) *string { return &p.FluxVersion },
		lifecycles: func(r config.Releases) []config.ReleaseLifecycle { return r.Flux },
		embedded:   func(v validation.SupportedVersions) []string { return v.Flux },
	},
	{
		Key: KeyKluctl, Name: "kluctl", StatusField: "kluctlVersion",
		Enabled: func(c *fluxapi.FluxConfig) bool { return c.Kluctl.Enabled },
		Version: func(c *fluxapi.FluxConfig) *string { return &c.Kluctl.Version },
		Selector: func(c *fluxv1alpha1.FluxConfig) *string {
			if c.Kluctl == nil {
				return nil
			}
			return c.Kluctl.Version
		},
		Installed:  func(s *fluxv1alpha1.FluxStatus) *string { return &s.KluctlVersion },
		Requested:  func(r *fluxv1alpha1.RequestedVersions) *string { return &r.Kluctl },
		Pending:    func(p *fluxv1alpha1.PendingRelease) *string { return &p.KluctlVersion },
		lifecycles: func(r config.Releases) []config.ReleaseLifecycle { return r.Kluctl },
		embedded:   func(v validation.SupportedVersions) []string { return v.Kluctl },
	},
}
