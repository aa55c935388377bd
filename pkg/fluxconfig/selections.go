// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"bytes"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// Selection is a version selector a tenant wrote.
type Selection struct {
	// Component is the key of a releases.Spec: flux or kluctl.
	Component string
	// Field is where the tenant wrote it, e.g. spec.extensions[0].providerConfig.flux.version.
	Field *field.Path
	// Selector is what the tenant wrote, e.g. v2.9 or 2.9.x.
	Selector string
}

// ProviderConfigSelections returns the version selectors of a providerConfig, with fields below
// fldPath; none if it cannot be decoded, which its validation reports. supported decides which
// flux.version of stackit's providerConfig is kept (see package stackit).
func ProviderConfigSelections(raw *runtime.RawExtension, supported validation.SupportedVersions, fldPath *field.Path) []Selection {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	cfg, _, err := decodeProviderConfig(raw.Raw, supported.Flux)
	if err != nil || cfg == nil {
		return nil
	}
	return layerSelections(cfg, fldPath)
}

// ConfigMapSelections returns the version selectors of a project ConfigMap: the key fluxVersion
// of the original extension and those of config.yaml.
func ConfigMapSelections(cm *corev1.ConfigMap) []Selection {
	var out []Selection
	if v := strings.TrimSpace(cm.Data[constants.ConfigMapKeyFluxVersion]); v != "" {
		out = append(out, Selection{Component: releases.KeyFlux, Field: field.NewPath("data").Key(constants.ConfigMapKeyFluxVersion), Selector: v})
	}
	if data := cm.Data[constants.ConfigMapKeyConfig]; strings.TrimSpace(data) != "" {
		if cfg, err := decodeFluxConfig([]byte(data)); err == nil && cfg != nil {
			out = append(out, layerSelections(cfg, field.NewPath("data").Key(constants.ConfigMapKeyConfig))...)
		}
	}
	return out
}

func layerSelections(cfg *v1alpha1.FluxConfig, fldPath *field.Path) []Selection {
	var out []Selection
	for _, s := range releases.Specs {
		if v := s.Selector(cfg); v != nil {
			out = append(out, Selection{Component: s.Key, Field: s.VersionPath(fldPath), Selector: *v})
		}
	}
	return out
}
