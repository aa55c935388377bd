// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// validateLayer checks every field a single layer sets on its own. Rules that combine fields of
// different sections are left to the effective configuration, because another layer may supply the
// missing part.
func validateLayer(cfg *v1alpha1.FluxConfig, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits) field.ErrorList {
	allErrs := field.ErrorList{}

	if f := cfg.Flux; f != nil {
		fldPath := field.NewPath("flux")
		if f.Version != nil {
			allErrs = append(allErrs, validation.ValidateVersion(*f.Version, supported.Flux, fldPath.Child("version"))...)
		}
		if f.Components != nil {
			allErrs = append(allErrs, validation.ValidateComponents(f.Components, fldPath.Child("components"))...)
		}
		if f.Namespace != nil {
			allErrs = append(allErrs, validation.ValidateNamespace(*f.Namespace, fldPath.Child("namespace"))...)
		}
		if f.Management != nil {
			allErrs = append(allErrs, validation.ValidateManagementMode(flux.ManagementMode(*f.Management), fldPath.Child("management"))...)
		}
	}

	if k := cfg.Kluctl; k != nil {
		fldPath := field.NewPath("kluctl")
		if k.Version != nil {
			allErrs = append(allErrs, validation.ValidateVersion(*k.Version, supported.Kluctl, fldPath.Child("version"))...)
		}
		if k.Namespace != nil {
			allErrs = append(allErrs, validation.ValidateNamespace(*k.Namespace, fldPath.Child("namespace"))...)
		}
	}

	if s := cfg.Source; s != nil {
		allErrs = append(allErrs, validateSourceLayer(s, knownHosts, field.NewPath("source"))...)
	}

	if b := cfg.Bootstrap; b != nil {
		allErrs = append(allErrs, validateBootstrapLayer(b, field.NewPath("bootstrap"))...)
	}

	if cfg.AdditionalSecretResources != nil {
		resources := make([]flux.AdditionalSecretResource, 0, len(cfg.AdditionalSecretResources))
		for _, r := range cfg.AdditionalSecretResources {
			resources = append(resources, flux.AdditionalSecretResource{Name: r.Name, TargetName: ptr.Deref(r.TargetName, ""), Namespace: ptr.Deref(r.Namespace, "")})
		}
		fldPath := field.NewPath("additionalSecretResources")
		allErrs = append(allErrs, validation.ValidateAdditionalSecretResources(resources, fldPath)...)
		// Unlike in the effective configuration, an empty string here was written by the user.
		for i, r := range cfg.AdditionalSecretResources {
			if r.TargetName != nil && *r.TargetName == "" {
				allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("targetName"), "must not be empty if set"))
			}
			if r.Namespace != nil && *r.Namespace == "" {
				allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("namespace"), "must not be empty if set"))
			}
		}
	}
	if cfg.Controllers != nil {
		allErrs = append(allErrs, ValidateControllers(cfg.Controllers, field.NewPath("controllers"))...)
	}
	return allErrs
}

// ValidateControllers validates the versioned settings of the controllers' Deployments, those of
// a configuration layer or of the operator's configuration.
func ValidateControllers(controllers map[string]v1alpha1.ControllerSettings, fldPath *field.Path) field.ErrorList {
	internal := make(map[string]flux.ControllerSettings, len(controllers))
	for key, s := range controllers {
		var out flux.ControllerSettings
		// The generated conversion only copies fields and cannot fail.
		_ = v1alpha1.Convert_v1alpha1_ControllerSettings_To_flux_ControllerSettings(&s, &out, nil)
		internal[key] = out
	}
	allErrs := validation.ValidateControllers(internal, fldPath)
	for key, s := range controllers {
		allErrs = append(allErrs, validation.ValidateNotEmptyIfSet(s.PriorityClassName, fldPath.Child(key, "priorityClassName"))...)
	}
	return allErrs
}

func validateSourceLayer(s *v1alpha1.Source, knownHosts sshkey.KnownHostsLimits, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.URL != nil {
		allErrs = append(allErrs, validation.ValidateGitURL(*s.URL, fldPath.Child("url"))...)
	}
	if refIsSet(s.Ref) {
		ref := flux.GitRef{Branch: ptr.Deref(s.Ref.Branch, ""), Tag: ptr.Deref(s.Ref.Tag, ""), Commit: ptr.Deref(s.Ref.Commit, ""),
			SemVer: ptr.Deref(s.Ref.SemVer, ""), Name: ptr.Deref(s.Ref.Name, "")}
		allErrs = append(allErrs, validation.ValidateGitRef(ref, fldPath.Child("ref"))...)
	}
	if s.Path != nil {
		allErrs = append(allErrs, validation.ValidateRepositoryPath(*s.Path, fldPath.Child("path"))...)
	}
	if s.Type != nil {
		allErrs = append(allErrs, validation.ValidateRepositoryType(flux.RepositoryType(*s.Type), fldPath.Child("type"))...)
	}
	if s.KnownHosts != nil {
		allErrs = append(allErrs, sshkey.ValidateKnownHosts(*s.KnownHosts, knownHosts, fldPath.Child("knownHosts"))...)
	}
	if s.SecretResourceName != nil && *s.SecretResourceName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretResourceName"), "must name a Shoot spec.resources Secret if set"))
	}
	allErrs = append(allErrs, validation.ValidateIgnore(s.Ignore, fldPath.Child("ignore"))...)
	allErrs = append(allErrs, validation.ValidateGitProvider(ptr.Deref(s.Provider, ""), fldPath.Child("provider"))...)
	if s.Verify != nil {
		var v flux.GitVerification
		// The generated conversion only copies fields and cannot fail. The ref is checked with the
		// effective configuration, where another layer may set it.
		_ = v1alpha1.Convert_v1alpha1_GitVerification_To_flux_GitVerification(s.Verify, &v, nil)
		allErrs = append(allErrs, validation.ValidateGitVerification(&v, nil, fldPath.Child("verify"))...)
	}
	if s.OCI != nil {
		var gitFields []string
		if s.URL != nil {
			gitFields = append(gitFields, "url")
		}
		for _, f := range sourceFields {
			if f.set(s) {
				gitFields = append(gitFields, f.name)
			}
		}
		allErrs = append(allErrs, validation.ValidateGitFieldsUnset(gitFields, fldPath)...)
		allErrs = append(allErrs, validateOCISourceLayer(s.OCI, fldPath.Child("oci"))...)
	}
	return allErrs
}

func validateOCISourceLayer(s *v1alpha1.OCISource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.URL != nil {
		allErrs = append(allErrs, validation.ValidateOCIURL(*s.URL, fldPath.Child("url"))...)
	}
	if ociRefIsSet(s.Ref) {
		ref := flux.OCIRef{Tag: ptr.Deref(s.Ref.Tag, ""), Digest: ptr.Deref(s.Ref.Digest, ""), SemVer: ptr.Deref(s.Ref.SemVer, "")}
		allErrs = append(allErrs, validation.ValidateOCIRef(ref, fldPath.Child("ref"))...)
	}
	if s.Path != nil {
		allErrs = append(allErrs, validation.ValidateRepositoryPath(*s.Path, fldPath.Child("path"))...)
	}
	if s.SecretResourceName != nil && *s.SecretResourceName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretResourceName"), "must name a Shoot spec.resources Secret if set"))
	}
	allErrs = append(allErrs, validation.ValidateIgnore(s.Ignore, fldPath.Child("ignore"))...)
	allErrs = append(allErrs, validation.ValidateOCIProvider(ptr.Deref(s.Provider, ""), fldPath.Child("provider"))...)
	if s.CertSecretRef != nil {
		allErrs = append(allErrs, validation.ValidateSecretReference(flux.SecretReference{Name: s.CertSecretRef.Name}, fldPath.Child("certSecretRef"))...)
	}
	if s.Verify != nil {
		var v flux.OCIVerification
		_ = v1alpha1.Convert_v1alpha1_OCIVerification_To_flux_OCIVerification(s.Verify, &v, nil)
		allErrs = append(allErrs, validation.ValidateOCIVerification(&v, fldPath.Child("verify"))...)
	}
	return allErrs
}

func validateBootstrapLayer(b *v1alpha1.Bootstrap, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if b.Mode != nil {
		allErrs = append(allErrs, validation.ValidateBootstrapMode(flux.BootstrapMode(*b.Mode), fldPath.Child("mode"))...)
	}
	if b.Name != nil {
		allErrs = append(allErrs, validation.ValidateBootstrapName(*b.Name, fldPath.Child("name"))...)
	}

	if k := b.Kluctl; k != nil {
		kluctlPath := fldPath.Child("kluctl")
		if k.Context != nil && *k.Context == "" {
			allErrs = append(allErrs, field.Required(kluctlPath.Child("context"), "must not be empty if set"))
		}
		allErrs = append(allErrs, validation.ValidateKluctlArgs(k.Args, kluctlPath.Child("args"))...)
		allErrs = append(allErrs, validation.ValidatePositiveDuration(k.Interval, kluctlPath.Child("interval"))...)
		allErrs = append(allErrs, validation.ValidatePositiveDuration(k.RetryInterval, kluctlPath.Child("retryInterval"))...)
		allErrs = append(allErrs, validation.ValidatePositiveDuration(k.Timeout, kluctlPath.Child("timeout"))...)
		if k.Decryption != nil {
			allErrs = append(allErrs, validation.ValidateDecryption(&flux.Decryption{SecretResourceName: k.Decryption.SecretResourceName}, kluctlPath.Child("decryption"))...)
		}
	}

	if f := b.Flux; f != nil {
		fluxPath := fldPath.Child("flux")
		if f.Path != nil {
			allErrs = append(allErrs, validation.ValidateRepositoryPath(*f.Path, fluxPath.Child("path"))...)
		}
		allErrs = append(allErrs, validation.ValidatePositiveDuration(f.Interval, fluxPath.Child("interval"))...)
		if f.TargetNamespace != nil {
			allErrs = append(allErrs, validation.ValidateNamespace(*f.TargetNamespace, fluxPath.Child("targetNamespace"))...)
		}
		allErrs = append(allErrs, validation.ValidatePositiveDuration(f.Timeout, fluxPath.Child("timeout"))...)
		allErrs = append(allErrs, validation.ValidatePositiveDuration(f.RetryInterval, fluxPath.Child("retryInterval"))...)
		if f.ServiceAccountName != nil {
			allErrs = append(allErrs, validation.ValidateServiceAccountName(*f.ServiceAccountName, fluxPath.Child("serviceAccountName"))...)
		}
		if f.Decryption != nil {
			allErrs = append(allErrs, validation.ValidateDecryption(&flux.Decryption{SecretResourceName: f.Decryption.SecretResourceName}, fluxPath.Child("decryption"))...)
		}
		if f.PostBuild != nil {
			var p flux.PostBuild
			// The generated conversion only copies fields and cannot fail.
			_ = v1alpha1.Convert_v1alpha1_PostBuild_To_flux_PostBuild(f.PostBuild, &p, nil)
			allErrs = append(allErrs, validation.ValidatePostBuild(&p, fluxPath.Child("postBuild"))...)
		}
		if f.Patches != nil {
			patches := make([]flux.Patch, len(f.Patches))
			for i := range f.Patches {
				_ = v1alpha1.Convert_v1alpha1_Patch_To_flux_Patch(&f.Patches[i], &patches[i], nil)
			}
			allErrs = append(allErrs, validation.ValidatePatches(patches, fluxPath.Child("patches"))...)
		}
	}
	return allErrs
}

// refIsSet reports whether a layer chooses a ref; only then does it replace the ref of lower layers.
func refIsSet(ref *v1alpha1.GitRef) bool {
	return ref != nil && (ref.Branch != nil || ref.Tag != nil || ref.Commit != nil || ref.SemVer != nil || ref.Name != nil)
}

// ociRefIsSet reports whether a layer chooses an OCI ref, like refIsSet.
func ociRefIsSet(ref *v1alpha1.OCIRef) bool {
	return ref != nil && (ref.Tag != nil || ref.Digest != nil || ref.SemVer != nil)
}
