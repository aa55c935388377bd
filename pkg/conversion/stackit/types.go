// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package stackit decodes, strictly, the providerConfig of stackitcloud's shoot-flux extension
// (v0.4.0 and later; same extension type, apiVersion and kind, other fields) and converts it into
// this extension's FluxConfig with the meaning stackit gave it, so that a switched landscape keeps
// every Shoot's providerConfig. Nothing here is ever written (docs/usage/migration.md).
package stackit

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FluxConfig is stackit's providerConfig across its shapes: v0.4 to v0.27 nest the source in
// source.template (a GitRepository; from v0.22 also an OCIRepository, told apart by kind), later
// releases in source.gitRepository or source.ociRepository. syncMode and
// additionalSecretResourceNames are of the releases before additionalSecretResources.
type FluxConfig struct {
	metav1.TypeMeta `json:",inline"`
	// Flux configures the installation.
	Flux *FluxInstallation `json:"flux,omitempty"`
	// Source is the bootstrap source object.
	Source *Source `json:"source,omitempty"`
	// Kustomization is the bootstrap Kustomization.
	Kustomization *Kustomization `json:"kustomization,omitempty"`
	// AdditionalSecretResources are Shoot spec.resources Secrets copied into the shoot.
	AdditionalSecretResources []AdditionalResource `json:"additionalSecretResources,omitempty"`
	// SyncMode is Once (the default) or ManifestsOnly.
	SyncMode *string `json:"syncMode,omitempty"`
	// AdditionalSecretResourceNames are Shoot spec.resources Secrets copied into the shoot under
	// their names.
	AdditionalSecretResourceNames []string `json:"additionalSecretResourceNames,omitempty"`
}

// FluxInstallation configures the Flux installation.
type FluxInstallation struct {
	Version         *string  `json:"version,omitempty"`
	Registry        *string  `json:"registry,omitempty"`
	Namespace       *string  `json:"namespace,omitempty"`
	Components      []string `json:"components,omitempty"`
	ComponentsExtra []string `json:"componentsExtra,omitempty"`
}

// Source is the bootstrap source: Template and SecretResourceName, or one of GitRepository and
// OCIRepository.
type Source struct {
	// Template is a GitRepository or OCIRepository of source.toolkit.fluxcd.io/v1; without kind a
	// GitRepository, as the releases before OCI support typed it.
	Template           json.RawMessage `json:"template,omitempty"`
	SecretResourceName *string         `json:"secretResourceName,omitempty"`
	GitRepository      *SourceTemplate `json:"gitRepository,omitempty"`
	OCIRepository      *SourceTemplate `json:"ociRepository,omitempty"`
}

// SourceTemplate is a source object with the Shoot resource of its credentials.
type SourceTemplate struct {
	Template           json.RawMessage `json:"template"`
	SecretResourceName *string         `json:"secretResourceName,omitempty"`
}

// Kustomization is the bootstrap Kustomization.
type Kustomization struct {
	// Template is a Kustomization of kustomize.toolkit.fluxcd.io/v1.
	Template json.RawMessage `json:"template"`
}

// AdditionalResource copies a Shoot spec.resources Secret into the shoot.
type AdditionalResource struct {
	Name       string  `json:"name"`
	TargetName *string `json:"targetName,omitempty"`
}
