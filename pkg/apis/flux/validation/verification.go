// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"regexp"
	"slices"

	"golang.org/x/mod/semver"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
)

// The bounds of a signature verification: the identities and their regular expressions are
// compiled by source-controller on every reconciliation, and by the extension on every validation.
const (
	// MaxOIDCIdentities bounds the entries of source.oci.verify.matchOIDCIdentity.
	MaxOIDCIdentities = 10
	// MaxOIDCIdentityPatternLength bounds an entry's issuer and subject.
	MaxOIDCIdentityPatternLength = 1024
)

// GitProviderGitHub is Flux's GitHub App provider, whose keys the git credentials Secret of this
// extension does not carry (it delivers identity/known_hosts or username/password only).
const GitProviderGitHub = "github"

var (
	// The providers of Flux's source.toolkit.fluxcd.io/v1 GitRepository and OCIRepository (their
	// CRDs' enums) that the bootstrap source can use.
	gitProviders = []string{"generic", "aws", "azure"}
	ociProviders = []string{"generic", "aws", "azure", "gcp"}

	gitVerificationModes = []string{"HEAD", "Tag", "TagAndHEAD"}
	ociVerificationKinds = []string{"cosign", "notation"}
)

// ValidateGitProvider checks the GitRepository's authentication provider; empty is Flux's default.
func ValidateGitProvider(provider string, fldPath *field.Path) field.ErrorList {
	switch {
	case provider == "" || slices.Contains(gitProviders, provider):
		return nil
	case provider == GitProviderGitHub:
		return field.ErrorList{field.Forbidden(fldPath, "needs GitHub App keys in the credentials Secret, which this extension does not deliver "+
			"(it delivers identity and known_hosts, or username and password); use a deploy key or a token with secretResourceName")}
	}
	return field.ErrorList{field.NotSupported(fldPath, provider, gitProviders)}
}

// gitProviderAWSSince is the first Flux release whose GitRepository CRD knows the provider aws
// (AWS CodeCommit, source-controller v1.9); an older one refuses the object.
const gitProviderAWSSince = "v2.9.0"

// validateGitProviderRelease refuses the provider aws where flux.version selects a release whose
// GitRepository does not know it. A version that selects none is reported at flux.version.
func validateGitProviderRelease(provider, version string, supported []string, fldPath *field.Path) field.ErrorList {
	if provider != "aws" {
		return nil
	}
	release, err := helper.ResolveVersion(version, supported)
	if err != nil || semver.Compare(release, gitProviderAWSSince) >= 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, provider, fmt.Sprintf("needs Flux %s or later, whose GitRepository knows AWS CodeCommit; flux.version selects %s", gitProviderAWSSince, release))}
}

// ValidateOCIProvider checks the OCIRepository's authentication provider; empty is Flux's default.
func ValidateOCIProvider(provider string, fldPath *field.Path) field.ErrorList {
	if provider == "" || slices.Contains(ociProviders, provider) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, provider, ociProviders)}
}

// ValidateSecretReference checks that ref names a Secret: a DNS-1123 subdomain. A long name is not
// printed.
func ValidateSecretReference(ref flux.SecretReference, fldPath *field.Path) field.ErrorList {
	namePath := fldPath.Child("name")
	if len(ref.Name) > apivalidation.DNS1123SubdomainMaxLength {
		return field.ErrorList{field.TooLongCharacters(namePath, ref.Name, apivalidation.DNS1123SubdomainMaxLength)}
	}
	return validateObjectName(ref.Name, namePath, apivalidation.IsDNS1123Subdomain)
}

// ValidateGitVerification checks the GitRepository's verification mode and key Secret. ref is the
// effective git reference: a tag can only be verified where one is checked out.
func ValidateGitVerification(v *flux.GitVerification, ref *flux.GitRef, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	modePath := fldPath.Child("mode")
	switch {
	case v.Mode != "" && !slices.Contains(gitVerificationModes, v.Mode):
		allErrs = append(allErrs, field.NotSupported(modePath, v.Mode, gitVerificationModes))
	case (v.Mode == "Tag" || v.Mode == "TagAndHEAD") && ref != nil && (ref.Branch != "" || ref.Commit != ""):
		// source-controller fails such a GitRepository: a branch or commit has no tag object.
		allErrs = append(allErrs, field.Invalid(modePath, v.Mode, "verifies a tag and needs source.ref.tag or source.ref.semver"))
	}
	return append(allErrs, ValidateSecretReference(v.SecretRef, fldPath.Child("secretRef"))...)
}

// ValidateOCIVerification checks the OCIRepository's verification: the provider, its key Secret
// (which notation needs) and the bounded identities of keyless cosign signatures.
func ValidateOCIVerification(v *flux.OCIVerification, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	if v.Provider != "" && !slices.Contains(ociVerificationKinds, v.Provider) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("provider"), v.Provider, ociVerificationKinds))
	}
	notation := v.Provider == "notation"
	secretPath := fldPath.Child("secretRef")
	switch {
	case v.SecretRef != nil:
		allErrs = append(allErrs, ValidateSecretReference(*v.SecretRef, secretPath)...)
	case notation:
		allErrs = append(allErrs, field.Required(secretPath, "notation needs a Secret with its trust policy and certificates"))
	}

	idPath := fldPath.Child("matchOIDCIdentity")
	switch n := len(v.MatchOIDCIdentity); {
	case n > 0 && notation:
		return append(allErrs, field.Forbidden(idPath, "matches the identities of keyless cosign signatures; remove it for notation"))
	case n > MaxOIDCIdentities:
		return append(allErrs, field.TooMany(idPath, n, MaxOIDCIdentities))
	}
	for i, m := range v.MatchOIDCIdentity {
		allErrs = append(allErrs, validatePattern(m.Issuer, idPath.Index(i).Child("issuer"))...)
		allErrs = append(allErrs, validatePattern(m.Subject, idPath.Index(i).Child("subject"))...)
	}
	return allErrs
}

// validatePattern checks a required Go regular expression of bounded length.
func validatePattern(pattern string, fldPath *field.Path) field.ErrorList {
	switch {
	case pattern == "":
		return field.ErrorList{field.Required(fldPath, "must be a Go regular expression")}
	case len(pattern) > MaxOIDCIdentityPatternLength:
		return field.ErrorList{tooLong(fldPath, len(pattern), MaxOIDCIdentityPatternLength)}
	}
	if _, err := regexp.Compile(pattern); err != nil {
		return field.ErrorList{field.Invalid(fldPath, pattern, fmt.Sprintf("must be a Go regular expression: %v", err))}
	}
	return nil
}
