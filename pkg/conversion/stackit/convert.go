// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// What stackit's extension defaulted: Flux's default components, its objects' name and namespace,
// their interval and the registry its images came from.
const (
	defaultNamespace = "flux-system"
	defaultName      = "flux-system"
	defaultRegistry  = "ghcr.io/fluxcd"
	syncModeOnce     = "Once"
)

var (
	defaultInterval   = metav1.Duration{Duration: time.Minute}
	defaultComponents = []string{
		fluxapi.ComponentSourceController,
		fluxapi.ComponentKustomizeController,
		fluxapi.ComponentHelmController,
		fluxapi.ComponentNotificationController,
	}
)

// Convert converts stackit's FluxConfig into this extension's with stackit's behaviour: Flux handed
// over after the first install, stackit's components and defaults, no kluctl. A field this
// extension cannot honour is an error naming its path below fldPath; warnings say where the result
// behaves differently. embedded are the Flux releases this extension embeds.
func Convert(in *FluxConfig, embedded []string, fldPath *field.Path) (*v1alpha1.FluxConfig, []string, field.ErrorList) {
	c := &converter{embedded: embedded, synced: map[string]string{}}
	for _, r := range in.AdditionalSecretResources {
		c.synced[ptr.Deref(r.TargetName, r.Name)] = r.Name
	}
	for _, name := range in.AdditionalSecretResourceNames {
		c.synced[name] = name
	}
	out := &v1alpha1.FluxConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "FluxConfig"},
		Kluctl:   &v1alpha1.Kluctl{Enabled: ptr.To(false)},
	}
	out.Flux, c.namespace = c.flux(in.Flux, fldPath.Child("flux"))

	switch {
	case in.Source != nil && in.Kustomization != nil:
		src, kind, name := c.source(in.Source, fldPath.Child("source"))
		out.Source = src
		out.Bootstrap = c.kustomization(in.Kustomization, kind, name, fldPath.Child("kustomization", "template"))
	case in.Source != nil:
		c.errs = append(c.errs, field.Required(fldPath.Child("kustomization"), "stackit's source needs a kustomization, as there"))
	case in.Kustomization != nil:
		c.errs = append(c.errs, field.Required(fldPath.Child("source"), "stackit's kustomization needs a source, as there"))
	}

	for i, r := range in.AdditionalSecretResources {
		out.AdditionalSecretResources = append(out.AdditionalSecretResources, v1alpha1.AdditionalSecretResource{Name: r.Name, TargetName: r.TargetName})
		if r.Name == "" {
			c.errs = append(c.errs, field.Required(fldPath.Child("additionalSecretResources").Index(i).Child("name"), "must name a Shoot spec.resources entry"))
		}
	}
	for _, name := range in.AdditionalSecretResourceNames {
		out.AdditionalSecretResources = append(out.AdditionalSecretResources, v1alpha1.AdditionalSecretResource{Name: name})
	}
	if m := ptr.Deref(in.SyncMode, syncModeOnce); m != syncModeOnce {
		c.errs = append(c.errs, field.NotSupported(fldPath.Child("syncMode"), m, []string{syncModeOnce}))
	}
	return out, c.warnings, c.errs
}

type converter struct {
	// embedded are the Flux releases this extension embeds.
	embedded  []string
	namespace string
	errs      field.ErrorList
	warnings  []string
	// sourceIntervalValue is the interval the source template sets; nil if it sets none.
	sourceIntervalValue *metav1.Duration
	sourceIntervalPath  *field.Path
	// synced maps the Secrets stackit's extension synced into the shoot to their Shoot
	// spec.resources entries.
	synced map[string]string
}

func (c *converter) flux(in *FluxInstallation, fldPath *field.Path) (*v1alpha1.Flux, string) {
	if in == nil {
		in = &FluxInstallation{}
	}
	out := &v1alpha1.Flux{
		Version: c.version(in.Version, fldPath.Child("version")),
		// stackit's extension installed Flux once and left it to the repository from then on.
		Management: ptr.To(v1alpha1.ManagementHandover),
	}
	namespace := ptr.Deref(in.Namespace, defaultNamespace)
	out.Namespace = &namespace

	if r := ptr.Deref(in.Registry, defaultRegistry); r != defaultRegistry {
		c.errs = append(c.errs, field.Invalid(fldPath.Child("registry"), r,
			"the operator's image vector decides where the controller images come from; remove flux.registry"))
	}
	components := defaultComponents
	var left []string
	if in.Components != nil {
		components = nil
		left = c.addComponents(&components, in.Components, fldPath.Child("components"))
	} else {
		components = slices.Clone(components)
	}
	extraPath := fldPath.Child("componentsExtra")
	if len(in.ComponentsExtra) > 0 {
		left = appendNew(left, c.addComponents(&components, in.ComponentsExtra, extraPath)...)
	}
	out.Components = components
	if len(left) > 0 {
		// Their Deployments, CRDs and objects are no part of the controllers ManagedResource: the
		// resource manager neither updates nor removes them, so what stackit installed keeps running.
		c.warnings = append(c.warnings, fmt.Sprintf("%s: this extension does not deliver %s: what stackit's extension installed of them stays in the shoot "+
			"as it is, neither updated nor removed; to keep them up to date, add them to the repository (flux install --components-extra=%s --export)",
			extraPath, strings.Join(left, ", "), strings.Join(left, ",")))
	}
	return out, namespace
}

// version keeps a pinned release this extension embeds and drops any other pin with a warning:
// stackit installed the pin once and never changed it, so refusing it would break the shoot on the
// switch. Without the pin the operator's default applies; a newer running Flux is left alone.
func (c *converter) version(pin *string, fldPath *field.Path) *string {
	if pin == nil {
		return nil
	}
	if _, err := helper.ResolveVersion(*pin, c.embedded); err == nil {
		return pin
	}
	var minors []string
	newest := ""
	for _, r := range c.embedded {
		if m := semver.MajorMinor(r); m != "" && !slices.Contains(minors, m) {
			minors = append(minors, m)
		}
		if newest == "" || semver.Compare(r, newest) > 0 {
			newest = r
		}
	}
	slices.SortFunc(minors, semver.Compare)
	list := strings.Join(minors, ", ")
	if canonical, ok := helper.CanonicalVersionSelector(*pin); ok && newest != "" && semver.Compare(semver.MajorMinor(canonical), semver.MajorMinor(newest)) > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: %s is newer than every Flux release this extension embeds (%s): the extension installs no older Flux "+
			"over the one the shoot runs and leaves it to the repository (flux.management handover); remove flux.version", fldPath, *pin, list))
		return nil
	}
	c.warnings = append(c.warnings, fmt.Sprintf("%s: %s is not a Flux release this extension embeds (%s): the shoot gets the release the operator's default "+
		"and the shoot's Kubernetes version select (status.providerStatus.fluxVersion), installed once over the Flux stackit's extension installed and then "+
		"left to the repository; remove flux.version, or write one of %s", fldPath, *pin, list, list))
	return nil
}

// extraComponents are Flux's optional controllers (flux install --components-extra), which this
// extension does not embed.
var extraComponents = []string{"image-reflector-controller", "image-automation-controller", "source-watcher"}

// addComponents adds the components this extension delivers to to and returns the extra ones it
// does not deliver.
func (c *converter) addComponents(to *[]string, names []string, fldPath *field.Path) []string {
	var left []string
	for i, name := range names {
		switch {
		case slices.Contains(extraComponents, name):
			left = appendNew(left, name)
		case !slices.Contains(fluxapi.KnownComponents, name):
			c.errs = append(c.errs, field.NotSupported(fldPath.Index(i), name, append(slices.Clone(fluxapi.KnownComponents), extraComponents...)))
		default:
			*to = appendNew(*to, name)
		}
	}
	return left
}

// appendNew appends the names that list does not hold yet.
func appendNew(list []string, names ...string) []string {
	for _, n := range names {
		if !slices.Contains(list, n) {
			list = append(list, n)
		}
	}
	return list
}

// source converts the source object and returns it with its kind and name.
func (c *converter) source(in *Source, fldPath *field.Path) (*v1alpha1.Source, string, string) {
	var (
		template   json.RawMessage
		secretName *string
		tmplPath   *field.Path
		kind       string
		set        []string
	)
	if len(in.Template) > 0 {
		set = append(set, "template")
		template, secretName, tmplPath = in.Template, in.SecretResourceName, fldPath.Child("template")
	} else if in.SecretResourceName != nil {
		set = append(set, "secretResourceName")
	}
	if in.GitRepository != nil {
		set = append(set, "gitRepository")
		template, secretName, tmplPath, kind = in.GitRepository.Template, in.GitRepository.SecretResourceName, fldPath.Child("gitRepository", "template"), sourcev1.GitRepositoryKind
	}
	if in.OCIRepository != nil {
		set = append(set, "ociRepository")
		template, secretName, tmplPath, kind = in.OCIRepository.Template, in.OCIRepository.SecretResourceName, fldPath.Child("ociRepository", "template"), sourcev1.OCIRepositoryKind
	}
	if len(set) != 1 || len(template) == 0 {
		c.errs = append(c.errs, field.Invalid(fldPath, strings.Join(set, ", "), "must set exactly one of template, gitRepository.template and ociRepository.template"))
		return nil, "", ""
	}

	var typeMeta metav1.TypeMeta
	if err := json.Unmarshal(template, &typeMeta); err != nil {
		c.errs = append(c.errs, field.Invalid(tmplPath, "", err.Error()))
		return nil, "", ""
	}
	if typeMeta.APIVersion != "" && typeMeta.APIVersion != sourcev1.GroupVersion.String() {
		c.errs = append(c.errs, field.NotSupported(tmplPath.Child("apiVersion"), typeMeta.APIVersion, []string{sourcev1.GroupVersion.String()}))
	}
	switch {
	case kind == "" && (typeMeta.Kind == "" || typeMeta.Kind == sourcev1.GitRepositoryKind):
		kind = sourcev1.GitRepositoryKind
	case kind == "" && typeMeta.Kind == sourcev1.OCIRepositoryKind:
		kind = sourcev1.OCIRepositoryKind
	case kind == "":
		c.errs = append(c.errs, field.NotSupported(tmplPath.Child("kind"), typeMeta.Kind, []string{sourcev1.GitRepositoryKind, sourcev1.OCIRepositoryKind}))
		return nil, "", ""
	case typeMeta.Kind != "" && typeMeta.Kind != kind:
		c.errs = append(c.errs, field.NotSupported(tmplPath.Child("kind"), typeMeta.Kind, []string{kind}))
		return nil, "", ""
	}

	out := &v1alpha1.Source{}
	var meta metav1.ObjectMeta
	if kind == sourcev1.OCIRepositoryKind {
		repo := &sourcev1.OCIRepository{}
		if !c.template(template, repo, tmplPath, map[string][]string{
			"spec":     {"url", "ref", "interval", "secretRef", "ignore", "provider", "certSecretRef", "verify"},
			"spec.ref": {"tag", "digest", "semver"}, "spec.certSecretRef": {"name"},
			"spec.verify": {"provider", "secretRef", "matchOIDCIdentity"}, "spec.verify.secretRef": {"name"},
		}) {
			return nil, "", ""
		}
		meta = repo.ObjectMeta
		specPath := tmplPath.Child("spec")
		oci := &v1alpha1.OCISource{URL: ptr.To(repo.Spec.URL), SecretResourceName: secretName, Ignore: repo.Spec.Ignore, Provider: nonEmpty(repo.Spec.Provider),
			CertSecretRef: c.secretReference(repo.Spec.CertSecretRef, specPath.Child("certSecretRef")), Verify: c.ociVerification(repo.Spec.Verify, specPath.Child("verify"))}
		if ref := repo.Spec.Reference; ref != nil {
			oci.Ref = &v1alpha1.OCIRef{Tag: nonEmpty(ref.Tag), Digest: nonEmpty(ref.Digest), SemVer: nonEmpty(ref.SemVer)}
		}
		out.OCI = oci
		c.secretRef(repo.Spec.SecretRef, secretName, tmplPath.Child("spec", "secretRef"), "source.ociRepository.secretResourceName")
		c.sourceInterval(repo.Spec.Interval, tmplPath.Child("spec", "interval"))
	} else {
		repo := &sourcev1.GitRepository{}
		if !c.template(template, repo, tmplPath, map[string][]string{
			"spec":     {"url", "ref", "interval", "secretRef", "ignore", "provider", "verify"},
			"spec.ref": {"branch", "tag", "semver", "name", "commit"}, "spec.verify": {"mode", "secretRef"}, "spec.verify.secretRef": {"name"},
		}) {
			return nil, "", ""
		}
		meta = repo.ObjectMeta
		out.URL = ptr.To(repo.Spec.URL)
		ref := repo.Spec.Reference
		if ref == nil || (ref.Branch == "" && ref.Tag == "" && ref.SemVer == "" && ref.Name == "" && ref.Commit == "") {
			c.errs = append(c.errs, field.Required(tmplPath.Child("spec", "ref"), "stackit's extension needs one of branch, tag, semver, name and commit, and so does this one"))
		} else {
			out.Ref = &v1alpha1.GitRef{Branch: nonEmpty(ref.Branch), Tag: nonEmpty(ref.Tag), SemVer: nonEmpty(ref.SemVer), Name: nonEmpty(ref.Name), Commit: nonEmpty(ref.Commit)}
		}
		out.SecretResourceName = secretName
		out.Ignore = repo.Spec.Ignore
		out.Provider = nonEmpty(repo.Spec.Provider)
		out.Verify = c.gitVerification(repo.Spec.Verification, tmplPath.Child("spec", "verify"))
		// stackit's extension has no deploy keys: without credentials the repository is public.
		repoType := v1alpha1.RepositoryTypePublic
		if secretName != nil {
			repoType = v1alpha1.RepositoryTypePrivate
		}
		out.Type = &repoType
		c.secretRef(repo.Spec.SecretRef, secretName, tmplPath.Child("spec", "secretRef"), "source.secretResourceName")
		c.sourceInterval(repo.Spec.Interval, tmplPath.Child("spec", "interval"))
	}
	c.metadata(meta, tmplPath.Child("metadata"))
	return out, kind, ptr.Deref(nonEmpty(meta.Name), defaultName)
}

// secretRef refuses a credentials Secret the user had to create in the shoot himself: this
// extension delivers the credentials from a Shoot resource under a name of its own.
func (c *converter) secretRef(ref *fluxmeta.LocalObjectReference, secretName *string, fldPath *field.Path, native string) {
	if ref == nil || ref.Name == "" || secretName != nil {
		return
	}
	c.errs = append(c.errs, field.Invalid(fldPath.Child("name"), ref.Name, fmt.Sprintf(
		"names a Secret in the shoot that this extension does not deliver; name the Shoot spec.resources entry with the credentials in %s instead", native)))
}

func (c *converter) sourceInterval(d metav1.Duration, fldPath *field.Path) {
	if d.Duration != 0 {
		c.sourceIntervalValue, c.sourceIntervalPath = &d, fldPath
	}
}

// nonZero is a set flag as a pointer, nil for false: unset as in stackit's template.
func nonZero(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// FieldPath returns the path in stackit's document of a field of the converted FluxConfig, e.g.
// source.template.spec.url for source.url, so that a problem the validation of the converted
// configuration finds names what the user wrote; other paths are returned as they are.
func FieldPath(in *FluxConfig, native string) string {
	tmpl, secret := "source.template", "source.secretResourceName"
	if in.Source != nil {
		switch {
		case in.Source.GitRepository != nil:
			tmpl, secret = "source.gitRepository.template", "source.gitRepository.secretResourceName"
		case in.Source.OCIRepository != nil:
			tmpl, secret = "source.ociRepository.template", "source.ociRepository.secretResourceName"
		}
	}
	ks := "kustomization.template.spec."
	for _, m := range []struct{ native, stackit string }{
		{"source.oci.url", tmpl + ".spec.url"},
		{"source.oci.ref", tmpl + ".spec.ref"},
		{"source.oci.secretResourceName", secret},
		{"source.oci.ignore", tmpl + ".spec.ignore"},
		{"source.oci.provider", tmpl + ".spec.provider"},
		{"source.oci.certSecretRef", tmpl + ".spec.certSecretRef"},
		{"source.oci.verify", tmpl + ".spec.verify"},
		{"source.url", tmpl + ".spec.url"},
		{"source.ref", tmpl + ".spec.ref"},
		{"source.secretResourceName", secret},
		{"source.ignore", tmpl + ".spec.ignore"},
		{"source.provider", tmpl + ".spec.provider"},
		{"source.verify", tmpl + ".spec.verify"},
		{"bootstrap.flux.path", ks + "path"},
		{"bootstrap.flux.interval", ks + "interval"},
		{"bootstrap.flux.targetNamespace", ks + "targetNamespace"},
		{"bootstrap.flux.wait", ks + "wait"},
		{"bootstrap.flux.timeout", ks + "timeout"},
		{"bootstrap.flux.retryInterval", ks + "retryInterval"},
		{"bootstrap.flux.serviceAccountName", ks + "serviceAccountName"},
		{"bootstrap.flux.decryption.secretResourceName", ks + "decryption.secretRef.name"},
		{"bootstrap.flux.postBuild", ks + "postBuild"},
		{"bootstrap.flux.patches", ks + "patches"},
	} {
		if native == m.native || strings.HasPrefix(native, m.native+".") || strings.HasPrefix(native, m.native+"[") {
			return m.stackit + strings.TrimPrefix(native, m.native)
		}
	}
	return native
}
