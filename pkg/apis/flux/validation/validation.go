// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package validation validates the internal shoot-flux configuration. Besides the validation of a
// whole configuration it exports the per-field checks, which the configuration resolution applies
// to partial configuration layers so that an error names the layer a bad value came from.
package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
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
	}

	allErrs = append(allErrs, validateBootstrap(cfg, fldPath.Child("bootstrap"))...)
	allErrs = append(allErrs, ValidateAdditionalSecretResources(cfg.AdditionalSecretResources, fldPath.Child("additionalSecretResources"))...)
	allErrs = append(allErrs, ValidateControllers(cfg.Controllers, fldPath.Child("controllers"))...)
	return allErrs
}

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

func validateBootstrap(cfg *flux.FluxConfig, fldPath *field.Path) field.ErrorList {
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
	if namespace == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	allErrs := field.ErrorList{}
	for _, msg := range apivalidation.IsDNS1123Label(namespace) {
		allErrs = append(allErrs, field.Invalid(fldPath, namespace, msg))
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

// ValidateManagementMode checks that mode is continuous or handover.
func ValidateManagementMode(mode flux.ManagementMode, fldPath *field.Path) field.ErrorList {
	if !slices.Contains(managementModes, string(mode)) {
		return field.ErrorList{field.NotSupported(fldPath, mode, managementModes)}
	}
	return nil
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
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	allErrs := field.ErrorList{}
	for _, msg := range apivalidation.IsDNS1123Label(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// ValidateKnownHosts checks that every line of knownHosts is empty, a comment or a known_hosts
// entry, see sshkey.ValidateKnownHosts. It bounds nothing: the limits of tenant input are applied
// where a layer is read (package fluxconfig).
func ValidateKnownHosts(knownHosts string, fldPath *field.Path) field.ErrorList {
	return sshkey.ValidateKnownHosts(knownHosts, sshkey.KnownHostsLimits{}, fldPath)
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

// ValidatePositiveDuration checks that d, if set, is greater than zero.
func ValidatePositiveDuration(d *metav1.Duration, fldPath *field.Path) field.ErrorList {
	if d != nil && d.Duration <= 0 {
		return field.ErrorList{field.Invalid(fldPath, d.Duration.String(), "must be greater than zero")}
	}
	return nil
}

// ValidateDecryption checks the SOPS decryption settings.
func ValidateDecryption(d *flux.Decryption, fldPath *field.Path) field.ErrorList {
	if d.SecretResourceName == "" {
		return field.ErrorList{field.Required(fldPath.Child("secretResourceName"), "must name a Shoot spec.resources Secret")}
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
