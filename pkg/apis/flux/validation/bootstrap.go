// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// validateBootstrap validates the bootstrap section at fldPath; sourcePath is the path of the
// source, whose fields some modes cannot honour.
func validateBootstrap(cfg *flux.FluxConfig, fldPath, sourcePath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	b := cfg.Bootstrap
	modePath := fldPath.Child("mode")
	allErrs = append(allErrs, ValidateBootstrapMode(b.Mode, modePath)...)
	if b.Name != "" {
		allErrs = append(allErrs, ValidateBootstrapName(b.Name, fldPath.Child("name"))...)
	}

	switch b.Mode {
	case flux.BootstrapModeKluctl:
		if !cfg.Kluctl.Enabled {
			allErrs = append(allErrs, field.Invalid(modePath, b.Mode, "needs kluctl.enabled to be true; use mode flux or none without kluctl"))
		}
		// The KluctlDeployment's git reference knows branches, tags and commits only.
		if src := cfg.Source; src != nil && src.OCI == nil && (src.Ref.SemVer != "" || src.Ref.Name != "") {
			allErrs = append(allErrs, field.Invalid(modePath, b.Mode, "source.ref.semver and source.ref.name need mode flux; kluctl checks out a branch, tag or commit"))
		}
		if src := cfg.Source; src != nil {
			allErrs = append(allErrs, kluctlSourceErrors(src, sourcePath, b.Mode)...)
		}
	case flux.BootstrapModeFlux:
		if !slices.Contains(cfg.Flux.Components, flux.ComponentKustomizeController) {
			allErrs = append(allErrs, field.Invalid(modePath, b.Mode, fmt.Sprintf("needs flux.components to include %q", flux.ComponentKustomizeController)))
		}
	}
	if cfg.Source == nil && b.Mode != flux.BootstrapModeNone {
		allErrs = append(allErrs, field.Invalid(modePath, b.Mode, "needs source.url or source.oci.url; without a source only mode none is possible"))
	}

	// Only the active mode's section is used; values set in the other one were checked per layer.
	switch b.Mode {
	case flux.BootstrapModeKluctl:
		allErrs = append(allErrs, validateKluctlBootstrap(&b.Kluctl, fldPath.Child("kluctl"))...)
	case flux.BootstrapModeFlux:
		allErrs = append(allErrs, validateFluxBootstrap(&b.Flux, fldPath.Child("flux"))...)
	}
	return allErrs
}

func validateKluctlBootstrap(k *flux.KluctlBootstrap, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if k.Context == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("context"), "must not be empty"))
	}
	allErrs = append(allErrs, ValidateKluctlArgs(k.Args, fldPath.Child("args"))...)
	allErrs = append(allErrs, ValidatePositiveDuration(&k.Interval, fldPath.Child("interval"))...)
	allErrs = append(allErrs, ValidatePositiveDuration(k.RetryInterval, fldPath.Child("retryInterval"))...)
	allErrs = append(allErrs, ValidatePositiveDuration(k.Timeout, fldPath.Child("timeout"))...)
	if k.Decryption != nil {
		allErrs = append(allErrs, ValidateDecryption(k.Decryption, fldPath.Child("decryption"))...)
	}
	return allErrs
}

func validateFluxBootstrap(f *flux.FluxBootstrap, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	allErrs = append(allErrs, ValidateRepositoryPath(f.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, ValidatePositiveDuration(&f.Interval, fldPath.Child("interval"))...)
	if f.TargetNamespace != "" {
		allErrs = append(allErrs, ValidateNamespace(f.TargetNamespace, fldPath.Child("targetNamespace"))...)
	}
	allErrs = append(allErrs, ValidatePositiveDuration(f.Timeout, fldPath.Child("timeout"))...)
	allErrs = append(allErrs, ValidatePositiveDuration(f.RetryInterval, fldPath.Child("retryInterval"))...)
	if f.ServiceAccountName != "" {
		allErrs = append(allErrs, ValidateServiceAccountName(f.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if f.Decryption != nil {
		allErrs = append(allErrs, ValidateDecryption(f.Decryption, fldPath.Child("decryption"))...)
	}
	allErrs = append(allErrs, ValidatePostBuild(f.PostBuild, fldPath.Child("postBuild"))...)
	allErrs = append(allErrs, ValidatePatches(f.Patches, fldPath.Child("patches"))...)
	return allErrs
}

// ValidateBootstrapMode checks that mode is kluctl, flux or none.
func ValidateBootstrapMode(mode flux.BootstrapMode, fldPath *field.Path) field.ErrorList {
	if !slices.Contains(bootstrapModes, string(mode)) {
		return field.ErrorList{field.NotSupported(fldPath, mode, bootstrapModes)}
	}
	return nil
}

// ValidateBootstrapName checks that name can name the bootstrap objects: the controllers write it
// into label values of what they apply, so it is a DNS-1123 label.
func ValidateBootstrapName(name string, fldPath *field.Path) field.ErrorList {
	return validateObjectName(name, fldPath, apivalidation.IsDNS1123Label)
}

// ValidateKluctlArgs checks that args, if set, is a JSON object, the only shape kluctl accepts.
func ValidateKluctlArgs(args *runtime.RawExtension, fldPath *field.Path) field.ErrorList {
	if args == nil || args.Raw == nil {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(args.Raw, &obj); err != nil || obj == nil {
		reason := "must be a JSON object"
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			reason = fmt.Sprintf("must be a JSON object, not a JSON %s", typeErr.Value)
		case err != nil:
			reason = fmt.Sprintf("must be a JSON object: %v", err)
		}
		return field.ErrorList{field.Invalid(fldPath, string(args.Raw), reason)}
	}
	return nil
}

// kluctlSourceErrors refuses the source fields of Flux's GitRepository and OCIRepository that the
// KluctlDeployment's source has no equivalent of: its git and oci sources are a URL, a ref and a
// path, pulled with the credentials of spec.credentials.
func kluctlSourceErrors(src *flux.Source, sourcePath *field.Path, mode flux.BootstrapMode) field.ErrorList {
	type sourceField struct {
		name, has string
		set       bool
	}
	fields := []sourceField{
		{"ignore", "no ignore rules; remove it, or ignore the files in the kluctl project", src.Ignore != nil},
		{"provider", "no authentication provider; remove it, kluctl pulls with the credentials of secretResourceName", src.Provider != ""},
		{"verify", "no signature verification; remove it", src.Verify != nil},
	}
	if oci := src.OCI; oci != nil {
		sourcePath = sourcePath.Child("oci")
		fields = []sourceField{
			{"ignore", fields[0].has, oci.Ignore != nil},
			{"provider", fields[1].has, oci.Provider != ""},
			{"certSecretRef", "no CA or client certificate Secret; remove it", oci.CertSecretRef != nil},
			{"verify", fields[2].has, oci.Verify != nil},
		}
	}
	allErrs := field.ErrorList{}
	for _, f := range fields {
		if f.set {
			allErrs = append(allErrs, field.Forbidden(sourcePath.Child(f.name), fmt.Sprintf("needs bootstrap.mode flux: the KluctlDeployment of mode %s has %s", mode, f.has)))
		}
	}
	return allErrs
}
