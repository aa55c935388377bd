// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package fluxconfig resolves a shoot's effective configuration from its layers: the operator's
// defaults, the project ConfigMap's legacy keys and its config.yaml, and the shoot's providerConfig,
// each overriding the one before field by field. Each layer is decoded and validated on its own, so
// an error names the key or field the bad value came from (docs/usage/configuration.md).
package fluxconfig

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Defaults are the operator's versions and controller settings, the lowest configuration layer,
// and the operator's limits of the other layers.
type Defaults struct {
	FluxVersion   string
	KluctlVersion string
	Controllers   map[string]v1alpha1.ControllerSettings
	// Limits bound the tenants' layers (see ValidateConfigMapLimits); zero limits are not checked.
	Limits config.Limits
}

// OperatorControllers returns the operator's controller settings as the lowest configuration layer.
// The configuration API has its own type with the same fields and JSON, so that it does not import
// this API's versioned package; the conversion compiles only while the fields agree.
func OperatorControllers(controllers map[string]config.ControllerSettings) map[string]v1alpha1.ControllerSettings {
	if controllers == nil {
		return nil
	}
	out := make(map[string]v1alpha1.ControllerSettings, len(controllers))
	for key, s := range controllers {
		out[key] = v1alpha1.ControllerSettings(s)
	}
	return out
}

// Requested are the version selectors the tenants' layers (project ConfigMap, providerConfig) wrote,
// empty where they leave the version to the operator's default. A release that changes while they
// stay the same is a change nobody of the project asked for (see package rollout).
type Requested = v1alpha1.RequestedVersions

// Resolve merges the configuration layers (see the package documentation), defaults and validates
// the result and resolves the version selectors among supported. cm and providerConfig may be nil;
// without a source URL in any layer, Source is nil and the bootstrap mode none. knownHosts bounds
// the tenants' source.knownHosts. Configuration errors are *configerror.Error.
func Resolve(defaults Defaults, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits, cm *corev1.ConfigMap, providerConfig *runtime.RawExtension) (*flux.FluxConfig, error) {
	cfg, _, err := ResolveRequested(defaults, supported, knownHosts, cm, providerConfig)
	return cfg, err
}

// ResolveRequested is Resolve that also returns the version selectors the tenants' layers wrote.
func ResolveRequested(defaults Defaults, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits, cm *corev1.ConfigMap, providerConfig *runtime.RawExtension) (*flux.FluxConfig, Requested, error) {
	p := &problems{}
	// Before anything decodes the tenants' documents: an oversized one is refused for its size.
	if limitProblems(defaults.Limits, cm, providerConfig, p); p.err() != nil {
		return nil, Requested{}, p.err()
	}
	layers := []layer{{cfg: defaultsLayer(defaults, supported, p), origin: originDefaults}}
	if cm != nil {
		layers = append(layers, configMapLayers(cm, supported, knownHosts, p)...)
	}
	if cfg := providerConfigLayer(providerConfig, supported, knownHosts, p); cfg != nil {
		layers = append(layers, layer{cfg: cfg, origin: originProviderConfig})
	}
	if err := p.err(); err != nil {
		return nil, Requested{}, err
	}

	merged := &v1alpha1.FluxConfig{}
	for _, l := range layers {
		if err := merge(merged, l.cfg); err != nil {
			return nil, Requested{}, fmt.Errorf("failed merging configuration layers: %w", err)
		}
	}

	merged.Controllers = effectiveControllers(merged.Controllers)

	// An OCI source without a URL is left to the validation, which names source.oci.url.
	if s := merged.Source; s != nil && s.URL == nil && s.OCI == nil {
		if missingURLProblems(layers, p); p.err() != nil {
			return nil, Requested{}, p.err()
		}
		merged.Source = nil
	}
	if merged.Source == nil {
		if merged.Bootstrap == nil {
			merged.Bootstrap = &v1alpha1.Bootstrap{}
		}
		merged.Bootstrap.Mode = ptr.To(v1alpha1.BootstrapModeNone)
	}

	scheme.Default(merged)
	cfg := &flux.FluxConfig{}
	if err := scheme.Convert(merged, cfg, nil); err != nil {
		return nil, Requested{}, fmt.Errorf("failed converting configuration: %w", err)
	}

	addEffectiveProblems(p, layers, validation.ValidateFluxConfig(cfg, supported, nil))
	if err := p.err(); err != nil {
		return nil, Requested{}, err
	}
	if err := resolveVersions(cfg, supported); err != nil {
		return nil, Requested{}, err
	}
	return cfg, requested(layers[1:]), nil
}

// requested returns the version selectors of the tenants' layers: the last one that sets each.
func requested(layers []layer) Requested {
	var r Requested
	for _, l := range layers {
		for _, s := range releases.Specs {
			if v := s.Selector(l.cfg); v != nil {
				*s.Requested(&r) = *v
			}
		}
	}
	return r
}

// effectiveControllers applies the defaults entry to every controller, so that the effective
// configuration holds one complete entry per controller that has settings.
func effectiveControllers(controllers map[string]v1alpha1.ControllerSettings) map[string]v1alpha1.ControllerSettings {
	if len(controllers) == 0 {
		return nil
	}
	defaults, hasDefaults := controllers[v1alpha1.ControllersDefaults]
	out := map[string]v1alpha1.ControllerSettings{}
	for _, component := range append(slices.Clone(flux.KnownComponents), v1alpha1.ComponentKluctlController) {
		own, ok := controllers[component]
		if !ok && !hasDefaults {
			continue
		}
		settings := *defaults.DeepCopy()
		MergeControllerSettings(&settings, own)
		out[component] = settings
	}
	return out
}

// resolveVersions replaces the selectors of the validated configuration with the releases they
// choose, so that everything after Resolve deals with releases only. A minor resolves to its newest
// embedded patch: an extension version that embeds a newer one moves the shoot on its next reconcile.
func resolveVersions(cfg *flux.FluxConfig, supported validation.SupportedVersions) error {
	for _, c := range releases.Specs {
		// A disabled component keeps whatever the layers say: it is neither validated nor installed.
		if !c.Enabled(cfg) {
			continue
		}
		version := c.Version(cfg)
		release, err := helper.ResolveVersion(*version, c.Supported(supported))
		if err != nil {
			return fmt.Errorf("failed resolving %s: %w", c.VersionPath(nil), err)
		}
		*version = release
	}
	return nil
}

// ValidateConfigMap validates the project ConfigMap on its own: its keys, the decoding of
// config.yaml and every field it sets, source.knownHosts within knownHosts. Rules that need the
// other layers are not checked.
func ValidateConfigMap(cm *corev1.ConfigMap, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits) error {
	if cm == nil {
		return nil
	}
	p := &problems{}
	configMapLayers(cm, supported, knownHosts, p)
	return p.err()
}

// ValidateProviderConfig validates an Extension providerConfig on its own: its decoding and every
// field it sets, source.knownHosts within knownHosts. Rules that need the other layers are not
// checked.
func ValidateProviderConfig(raw *runtime.RawExtension, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits) error {
	p := &problems{}
	providerConfigLayer(raw, supported, knownHosts, p)
	return p.err()
}

// ProviderConfigFieldErrors validates a providerConfig like ValidateProviderConfig and returns
// every problem as a field error below fldPath, the providerConfig's path in the object that
// embeds it (e.g. a Shoot's spec.extensions[0].providerConfig). A document that cannot be decoded
// is blamed on fldPath itself.
func ProviderConfigFieldErrors(raw *runtime.RawExtension, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits, fldPath *field.Path) field.ErrorList {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	cfg, conv, err := decodeProviderConfig(raw.Raw, supported.Flux)
	if err != nil {
		var errs fieldErrors
		if errors.As(err, &errs) {
			return reroot(field.ErrorList(errs), fldPath)
		}
		return field.ErrorList{field.Invalid(fldPath, field.OmitValueType{}, err.Error())}
	}
	if cfg == nil {
		return nil
	}
	return reroot(conv.fieldPaths(validateLayer(cfg, supported, knownHosts)), fldPath)
}

// reroot places field errors with paths relative to a document below the document's path.
func reroot(errs field.ErrorList, fldPath *field.Path) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		rerooted := *e
		switch {
		case e.Field == "":
			rerooted.Field = fldPath.String()
		case strings.HasPrefix(e.Field, "["):
			rerooted.Field = fldPath.String() + e.Field
		default:
			rerooted.Field = fldPath.String() + "." + e.Field
		}
		out = append(out, &rerooted)
	}
	return out
}
