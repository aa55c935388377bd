// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package validation validates the internal shoot-flux configuration. Besides the validation of a
// whole configuration it exports the per-field checks, which the configuration resolution applies
// to partial configuration layers so that an error names the layer a bad value came from.
package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// SupportedVersions are the Flux and kluctl releases the extension has manifests for, each with a
// leading "v". A version that selects none of them (see helper.ResolveVersion) is rejected, so an
// empty list rejects every version.
type SupportedVersions struct {
	Flux   []string
	Kluctl []string
}

var (
	commitRegexp = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

	managementModes = []string{string(flux.ManagementContinuous), string(flux.ManagementHandover)}
	bootstrapModes  = []string{string(flux.BootstrapModeKluctl), string(flux.BootstrapModeFlux), string(flux.BootstrapModeNone)}
	repositoryTypes = []string{string(flux.RepositoryTypePublic), string(flux.RepositoryTypePrivate)}
)

// ValidateFluxConfig validates an effective, defaulted configuration, including the rules that
// span several fields.
func ValidateFluxConfig(cfg *flux.FluxConfig, supported SupportedVersions, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}

	fluxPath := fldPath.Child("flux")
	allErrs = append(allErrs, ValidateVersion(cfg.Flux.Version, supported.Flux, fluxPath.Child("version"))...)
	allErrs = append(allErrs, ValidateComponents(cfg.Flux.Components, fluxPath.Child("components"))...)
	allErrs = append(allErrs, ValidateNamespace(cfg.Flux.Namespace, fluxPath.Child("namespace"))...)
	allErrs = append(allErrs, ValidateManagementMode(cfg.Flux.Management, fluxPath.Child("management"))...)

	kluctlPath := fldPath.Child("kluctl")
	if cfg.Kluctl.Enabled {
		allErrs = append(allErrs, ValidateVersion(cfg.Kluctl.Version, supported.Kluctl, kluctlPath.Child("version"))...)
		allErrs = append(allErrs, ValidateNamespace(cfg.Kluctl.Namespace, kluctlPath.Child("namespace"))...)
	}

	if cfg.Source != nil {
		allErrs = append(allErrs, validateSource(cfg.Source, fldPath.Child("source"))...)
		allErrs = append(allErrs, validateGitProviderRelease(cfg.Source.Provider, cfg.Flux.Version, supported.Flux, fldPath.Child("source", "provider"))...)
	}

	allErrs = append(allErrs, validateBootstrap(cfg, fldPath.Child("bootstrap"), fldPath.Child("source"))...)
	allErrs = append(allErrs, ValidateAdditionalSecretResources(cfg.AdditionalSecretResources, fldPath.Child("additionalSecretResources"))...)
	allErrs = append(allErrs, ValidateControllers(cfg.Controllers, fldPath.Child("controllers"))...)
	return allErrs
}

// ValidateVersion checks that version selects one of the supported releases: it is one of them or
// the minor of one (see helper.ResolveVersion). The error lists every selector that would.
func ValidateVersion(version string, supported []string, fldPath *field.Path) field.ErrorList {
	if version == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	if _, err := helper.ResolveVersion(version, supported); err != nil {
		return field.ErrorList{field.NotSupported(fldPath, version, helper.VersionSelectors(supported))}
	}
	return nil
}

// ValidateComponents checks that the Flux components are known, unique and include source-controller,
// which every bootstrap mode and the kluctl controller's git sources rely on.
func ValidateComponents(components []string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	seen := sets.New[string]()
	for i, c := range components {
		idxPath := fldPath.Index(i)
		switch {
		case !slices.Contains(flux.KnownComponents, c):
			allErrs = append(allErrs, field.NotSupported(idxPath, c, flux.KnownComponents))
		case seen.Has(c):
			allErrs = append(allErrs, field.Duplicate(idxPath, c))
		}
		seen.Insert(c)
	}
	if !seen.Has(flux.ComponentSourceController) {
		allErrs = append(allErrs, field.Required(fldPath, fmt.Sprintf("must include %q", flux.ComponentSourceController)))
	}
	return allErrs
}

// ValidateNamespace checks that namespace is a valid namespace name.
func ValidateNamespace(namespace string, fldPath *field.Path) field.ErrorList {
	return validateObjectName(namespace, fldPath, apivalidation.IsDNS1123Label)
}

// ValidateServiceAccountName checks that name can name a service account: a DNS-1123 subdomain.
func ValidateServiceAccountName(name string, fldPath *field.Path) field.ErrorList {
	return validateObjectName(name, fldPath, apivalidation.IsDNS1123Subdomain)
}

// validateObjectName checks that name is set and passes check, one of apimachinery's IsDNS1123*.
func validateObjectName(name string, fldPath *field.Path, check func(string) []string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	allErrs := field.ErrorList{}
	for _, msg := range check(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// ValidateManagementMode checks that mode is continuous or handover.
func ValidateManagementMode(mode flux.ManagementMode, fldPath *field.Path) field.ErrorList {
	if !slices.Contains(managementModes, string(mode)) {
		return field.ErrorList{field.NotSupported(fldPath, mode, managementModes)}
	}
	return nil
}

// ValidatePositiveDuration checks that d, if set, is greater than zero.
func ValidatePositiveDuration(d *metav1.Duration, fldPath *field.Path) field.ErrorList {
	if d != nil && d.Duration <= 0 {
		return field.ErrorList{field.Invalid(fldPath, d.Duration.String(), "must be greater than zero")}
	}
	return nil
}

// ValidateAdditionalSecretResources checks that every resource is named once and that no two
// resources end up as the same Secret in the shoot. Empty target names and namespaces are left to
// defaulting.
func ValidateAdditionalSecretResources(resources []flux.AdditionalSecretResource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	names := sets.New[string]()
	targets := sets.New[string]()
	for i, res := range resources {
		idxPath := fldPath.Index(i)
		duplicateName := false
		switch {
		case res.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), "must name a Shoot spec.resources Secret"))
		case names.Has(res.Name):
			duplicateName = true
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), res.Name))
		}
		names.Insert(res.Name)

		targetName := res.TargetName
		targetPath := idxPath.Child("targetName")
		if targetName != "" {
			for _, msg := range apivalidation.IsDNS1123Subdomain(targetName) {
				allErrs = append(allErrs, field.Invalid(targetPath, targetName, msg))
			}
		} else {
			// Without a target name the Secret keeps its name in spec.resources.
			targetName, targetPath = res.Name, idxPath.Child("name")
		}
		if slices.Contains(constants.ReservedSecretNames, targetName) {
			allErrs = append(allErrs, field.Invalid(targetPath, targetName, fmt.Sprintf("is the name of a Secret the extension writes into the shoot; reserved: %s", strings.Join(constants.ReservedSecretNames, ", "))))
		}
		if res.Namespace != "" {
			allErrs = append(allErrs, ValidateNamespace(res.Namespace, idxPath.Child("namespace"))...)
		}
		target := res.Namespace + "/" + targetName
		if targetName != "" && !duplicateName && targets.Has(target) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("targetName"), target))
		}
		targets.Insert(target)
	}
	return allErrs
}
