// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

func validateSource(src *flux.Source, fldPath *field.Path) field.ErrorList {
	if src.OCI != nil {
		allErrs := ValidateGitFieldsUnset(gitFieldsSet(src), fldPath)
		return append(allErrs, validateOCISource(src.OCI, fldPath.Child("oci"))...)
	}
	allErrs := field.ErrorList{}
	urlErrs := ValidateGitURL(src.URL, fldPath.Child("url"))
	allErrs = append(allErrs, urlErrs...)
	allErrs = append(allErrs, ValidateGitRef(src.Ref, fldPath.Child("ref"))...)
	allErrs = append(allErrs, ValidateRepositoryPath(src.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, ValidateRepositoryType(src.Type, fldPath.Child("type"))...)
	allErrs = append(allErrs, ValidateKnownHosts(src.KnownHosts, fldPath.Child("knownHosts"))...)
	allErrs = append(allErrs, ValidateIgnore(src.Ignore, fldPath.Child("ignore"))...)
	allErrs = append(allErrs, ValidateGitProvider(src.Provider, fldPath.Child("provider"))...)
	allErrs = append(allErrs, ValidateGitVerification(src.Verify, &src.Ref, fldPath.Child("verify"))...)

	if len(urlErrs) == 0 && src.Type == flux.RepositoryTypePrivate && src.SecretResourceName == "" {
		if u, err := helper.ParseGitURL(src.URL); err == nil && u.Scheme != helper.SchemeSSH {
			allErrs = append(allErrs, field.Required(fldPath.Child("secretResourceName"),
				"a private https repository needs username/password credentials from a Shoot resource; generated deploy keys only work with ssh URLs"))
		}
	}
	return allErrs
}

// gitFieldsSet names the git fields of an effective source that are set.
func gitFieldsSet(src *flux.Source) []string {
	var names []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"url", src.URL != ""},
		{"ref", src.Ref != (flux.GitRef{})},
		{"path", src.Path != ""},
		{"type", src.Type != ""},
		{"knownHosts", src.KnownHosts != ""},
		{"secretResourceName", src.SecretResourceName != ""},
		{"ignore", src.Ignore != nil},
		{"provider", src.Provider != ""},
		{"verify", src.Verify != nil},
	} {
		if f.set {
			names = append(names, f.name)
		}
	}
	return names
}

// ValidateGitFieldsUnset rejects the git source fields (named below fldPath) that are set next to
// source.oci: a source is either a git repository or an OCI artifact.
func ValidateGitFieldsUnset(names []string, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, name := range names {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(name),
			fmt.Sprintf("is a git source field and must not be set together with %s", fldPath.Child("oci"))))
	}
	return allErrs
}

func validateOCISource(oci *flux.OCISource, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	allErrs = append(allErrs, ValidateOCIURL(oci.URL, fldPath.Child("url"))...)
	allErrs = append(allErrs, ValidateOCIRef(oci.Ref, fldPath.Child("ref"))...)
	allErrs = append(allErrs, ValidateRepositoryPath(oci.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, ValidateIgnore(oci.Ignore, fldPath.Child("ignore"))...)
	allErrs = append(allErrs, ValidateOCIProvider(oci.Provider, fldPath.Child("provider"))...)
	if oci.CertSecretRef != nil {
		allErrs = append(allErrs, ValidateSecretReference(*oci.CertSecretRef, fldPath.Child("certSecretRef"))...)
	}
	allErrs = append(allErrs, ValidateOCIVerification(oci.Verify, fldPath.Child("verify"))...)
	return allErrs
}

// ValidateOCIURL checks that url is an oci://registry/repository URL, see helper.ParseOCIURL.
func ValidateOCIURL(url string, fldPath *field.Path) field.ErrorList {
	if url == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	if _, err := helper.ParseOCIURL(url); err != nil {
		return field.ErrorList{field.Invalid(fldPath, url, err.Error())}
	}
	return nil
}

// ValidateOCIRef checks that exactly one of tag, digest and semver is set and valid.
func ValidateOCIRef(ref flux.OCIRef, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if ref.Tag != "" && !helper.IsOCITag(ref.Tag) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("tag"), ref.Tag, "must be an OCI tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"))
	}
	if ref.Digest != "" && !helper.IsOCIDigest(ref.Digest) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("digest"), ref.Digest, "must be a manifest digest: sha256:<64 lower-case hexadecimal characters> or sha512:<128>"))
	}
	if ref.SemVer != "" {
		allErrs = append(allErrs, ValidateSemVerRange(ref.SemVer, fldPath.Child("semver"))...)
	}
	if set := countSet(ref.Tag, ref.Digest, ref.SemVer); set != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, setFields([]struct{ name, value string }{{"tag", ref.Tag}, {"digest", ref.Digest}, {"semver", ref.SemVer}}),
			"exactly one of tag, digest and semver must be set"))
	}
	return allErrs
}

// ValidateGitURL checks that url is an ssh://, scp-like or https:// git URL, see helper.ParseGitURL.
func ValidateGitURL(url string, fldPath *field.Path) field.ErrorList {
	if url == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	if _, err := helper.ParseGitURL(url); err != nil {
		return field.ErrorList{field.Invalid(fldPath, helper.RedactURL(url), err.Error())}
	}
	return nil
}

// ValidateGitRef checks that exactly one of branch, tag, commit, semver and name is set and valid.
func ValidateGitRef(ref flux.GitRef, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	set := 0
	if ref.Branch != "" {
		set++
		allErrs = append(allErrs, ValidateRefName(ref.Branch, fldPath.Child("branch"))...)
	}
	if ref.Tag != "" {
		set++
		allErrs = append(allErrs, ValidateRefName(ref.Tag, fldPath.Child("tag"))...)
	}
	if ref.Commit != "" {
		set++
		if !commitRegexp.MatchString(ref.Commit) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("commit"), ref.Commit, "must be a full commit SHA: 40 or 64 lower-case hexadecimal characters"))
		}
	}
	if ref.SemVer != "" {
		set++
		allErrs = append(allErrs, ValidateSemVerRange(ref.SemVer, fldPath.Child("semver"))...)
	}
	if ref.Name != "" {
		set++
		if !strings.HasPrefix(ref.Name, "refs/") {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), ref.Name, "must be a full reference name starting with refs/, e.g. refs/pull/42/head"))
		} else {
			allErrs = append(allErrs, ValidateRefName(strings.TrimPrefix(ref.Name, "refs/"), fldPath.Child("name"))...)
		}
	}
	if set != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, refString(ref), "exactly one of branch, tag, commit, semver and name must be set"))
	}
	return allErrs
}

// ValidateSemVerRange checks a semantic version range the way Flux's source-controller parses it.
func ValidateSemVerRange(r string, fldPath *field.Path) field.ErrorList {
	if _, err := semver.NewConstraint(r); err != nil {
		return field.ErrorList{field.Invalid(fldPath, r, fmt.Sprintf("must be a semantic version range, e.g. >=1.0.0 <2.0.0: %v", err))}
	}
	return nil
}

func countSet(values ...string) int {
	n := 0
	for _, v := range values {
		if v != "" {
			n++
		}
	}
	return n
}

func refString(ref flux.GitRef) string {
	return setFields([]struct{ name, value string }{{"branch", ref.Branch}, {"tag", ref.Tag}, {"commit", ref.Commit}, {"semver", ref.SemVer}, {"name", ref.Name}})
}

// setFields shows the fields of a reference that are set, e.g. {tag=v1, digest=sha256:...}.
func setFields(fields []struct{ name, value string }) string {
	var parts []string
	for _, p := range fields {
		if p.value != "" {
			parts = append(parts, p.name+"="+p.value)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ValidateRefName checks the git rules for branch and tag names that matter for a configuration
// (git check-ref-format); names git would reject can never be checked out.
func ValidateRefName(name string, fldPath *field.Path) field.ErrorList {
	var reason string
	switch {
	case name == "":
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		reason = "must not contain whitespace or control characters"
	case strings.ContainsAny(name, "~^:?*[\\"):
		reason = `must not contain any of ~ ^ : ? * [ \`
	case strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//"):
		reason = `must not contain "..", "@{" or "//"`
	case strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, "."):
		reason = `must not start with "-" or "/" or end with "/" or "."`
	case strings.HasSuffix(name, ".lock") || name == "@":
		reason = `must not end with ".lock" or be "@"`
	default:
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, reason)}
}

// ValidateRepositoryPath checks that path is a relative path that stays inside the repository.
func ValidateRepositoryPath(path string, fldPath *field.Path) field.ErrorList {
	switch {
	case path == "":
		return field.ErrorList{field.Required(fldPath, `must not be empty, use "." for the repository root`)}
	case strings.HasPrefix(path, "/"):
		return field.ErrorList{field.Invalid(fldPath, path, "must be relative to the repository root")}
	case slices.Contains(strings.Split(path, "/"), ".."):
		return field.ErrorList{field.Invalid(fldPath, path, `must not contain ".."`)}
	case strings.IndexFunc(path, unicode.IsControl) >= 0:
		return field.ErrorList{field.Invalid(fldPath, path, "must not contain control characters")}
	}
	return nil
}

// ValidateRepositoryType checks that t is public or private.
func ValidateRepositoryType(t flux.RepositoryType, fldPath *field.Path) field.ErrorList {
	if !slices.Contains(repositoryTypes, string(t)) {
		return field.ErrorList{field.NotSupported(fldPath, t, repositoryTypes)}
	}
	return nil
}

// ValidateKnownHosts checks that every line of knownHosts is empty, a comment or a known_hosts
// entry, see sshkey.ValidateKnownHosts. It bounds nothing: the limits of tenant input are applied
// where a layer is read (package fluxconfig).
func ValidateKnownHosts(knownHosts string, fldPath *field.Path) field.ErrorList {
	return sshkey.ValidateKnownHosts(knownHosts, sshkey.KnownHostsLimits{}, fldPath)
}

// ValidateDecryption checks the SOPS decryption settings.
func ValidateDecryption(d *flux.Decryption, fldPath *field.Path) field.ErrorList {
	if d.SecretResourceName == "" {
		return field.ErrorList{field.Required(fldPath.Child("secretResourceName"), "must name a Shoot spec.resources Secret")}
	}
	return nil
}
