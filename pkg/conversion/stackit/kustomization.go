// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit

import (
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// sopsProvider is the one decryption provider of Flux's Kustomization.
const sopsProvider = "sops"

// kustomization converts the Kustomization template into bootstrap mode flux; sourceKind and
// sourceName are those of the source template.
func (c *converter) kustomization(in *Kustomization, sourceKind, sourceName string, fldPath *field.Path) *v1alpha1.Bootstrap {
	ks := &kustomizev1.Kustomization{}
	if !c.template(in.Template, ks, fldPath, map[string][]string{
		"spec": {"path", "prune", "interval", "targetNamespace", "sourceRef", "postBuild", "wait", "timeout", "retryInterval", "serviceAccountName", "decryption",
			"patches"},
		"spec.postBuild":  {"substitute", "substituteFrom"},
		"spec.decryption": {"provider", "secretRef"},
	}) {
		return nil
	}
	if ks.APIVersion != "" && ks.APIVersion != kustomizev1.GroupVersion.String() {
		c.errs = append(c.errs, field.NotSupported(fldPath.Child("apiVersion"), ks.APIVersion, []string{kustomizev1.GroupVersion.String()}))
	}
	if ks.Kind != "" && ks.Kind != kustomizev1.KustomizationKind {
		c.errs = append(c.errs, field.NotSupported(fldPath.Child("kind"), ks.Kind, []string{kustomizev1.KustomizationKind}))
	}
	c.metadata(ks.ObjectMeta, fldPath.Child("metadata"))
	// The repository's Kustomizations may depend on the objects by name: they keep stackit's.
	name := ptr.Deref(nonEmpty(ks.Name), defaultName)
	if sourceName != "" && sourceName != name {
		c.errs = append(c.errs, field.Invalid(fldPath.Child("metadata", "name"), name, fmt.Sprintf(
			"this extension gives the source and the Kustomization one name (bootstrap.name): name both %s or both %s", sourceName, name)))
	}

	spec := ks.Spec
	refPath := fldPath.Child("spec", "sourceRef")
	if sourceKind != "" && spec.SourceRef.Kind != "" && spec.SourceRef.Kind != sourceKind {
		c.errs = append(c.errs, field.Invalid(refPath.Child("kind"), spec.SourceRef.Kind, fmt.Sprintf("must be the source template's kind %s", sourceKind)))
	}
	if sourceName != "" && spec.SourceRef.Name != "" && spec.SourceRef.Name != sourceName {
		c.errs = append(c.errs, field.Invalid(refPath.Child("name"), spec.SourceRef.Name, fmt.Sprintf("must be the source template's name %s", sourceName)))
	}
	if spec.SourceRef.Namespace != "" && spec.SourceRef.Namespace != c.namespace {
		c.errs = append(c.errs, field.Invalid(refPath.Child("namespace"), spec.SourceRef.Namespace, fmt.Sprintf("must be Flux's namespace %s", c.namespace)))
	}
	if spec.SourceRef.APIVersion != "" && spec.SourceRef.APIVersion != sourcev1.GroupVersion.String() {
		c.errs = append(c.errs, field.NotSupported(refPath.Child("apiVersion"), spec.SourceRef.APIVersion, []string{sourcev1.GroupVersion.String()}))
	}
	if spec.Path == "" {
		c.errs = append(c.errs, field.Required(fldPath.Child("spec", "path"), "stackit's extension needs it, and so does this one"))
	}

	interval := defaultInterval
	if spec.Interval.Duration != 0 {
		interval = spec.Interval
	}
	if c.sourceIntervalValue != nil && c.sourceIntervalValue.Duration != interval.Duration {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: the source and the Kustomization share one interval here, the Kustomization's %s", c.sourceIntervalPath, interval.Duration))
	}
	flux := &v1alpha1.FluxBootstrap{
		Path: ptr.To(spec.Path),
		// A Kustomization's prune is false unless set; stackit's extension kept it so.
		Prune:              ptr.To(spec.Prune),
		Interval:           &interval,
		TargetNamespace:    nonEmpty(spec.TargetNamespace),
		Wait:               nonZero(spec.Wait),
		Timeout:            spec.Timeout,
		RetryInterval:      spec.RetryInterval,
		ServiceAccountName: nonEmpty(spec.ServiceAccountName),
	}
	flux.Decryption = c.decryption(spec.Decryption, fldPath.Child("spec", "decryption"))
	flux.PostBuild = c.postBuild(spec.PostBuild, fldPath.Child("spec", "postBuild"))
	for _, p := range spec.Patches {
		out := v1alpha1.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			out.Target = &v1alpha1.PatchSelector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector}
		}
		flux.Patches = append(flux.Patches, out)
	}
	return &v1alpha1.Bootstrap{Mode: ptr.To(v1alpha1.BootstrapModeFlux), Name: &name, Flux: flux, ShootInfo: ptr.To(true)}
}

// decryption converts the Kustomization's SOPS decryption: its key is a Secret that stackit's
// extension synced into the shoot from an additionalSecretResources entry, which this extension
// delivers from the same entry.
func (c *converter) decryption(d *kustomizev1.Decryption, fldPath *field.Path) *v1alpha1.Decryption {
	if d == nil {
		return nil
	}
	if d.Provider != sopsProvider {
		c.errs = append(c.errs, field.NotSupported(fldPath.Child("provider"), d.Provider, []string{sopsProvider}))
	}
	if d.SecretRef == nil || d.SecretRef.Name == "" {
		c.errs = append(c.errs, field.Required(fldPath.Child("secretRef", "name"), "name the Secret with the SOPS key that additionalSecretResources delivers"))
		return nil
	}
	resource, ok := c.synced[d.SecretRef.Name]
	if !ok {
		c.errs = append(c.errs, field.Invalid(fldPath.Child("secretRef", "name"), d.SecretRef.Name, fmt.Sprintf(
			"names a Secret in the shoot that this extension does not deliver; add the Shoot spec.resources entry with the SOPS key to additionalSecretResources with targetName %s", d.SecretRef.Name)))
		return nil
	}
	return &v1alpha1.Decryption{SecretResourceName: resource}
}

// postBuild converts the Kustomization's substitution. The ConfigMap shoot-info, which stackit's
// extension delivered too, becomes bootstrap.shootInfo; the other ConfigMaps and Secrets are
// carried. They are checked here, where an error can name the entry as stackit's list numbers it.
func (c *converter) postBuild(p *kustomizev1.PostBuild, fldPath *field.Path) *v1alpha1.PostBuild {
	if p == nil {
		return nil
	}
	out := &v1alpha1.PostBuild{}
	if len(p.Substitute) > 0 {
		out.Substitute = p.Substitute
	}
	fromPath := fldPath.Child("substituteFrom")
	shootInfoAt := -1
	for i, ref := range p.SubstituteFrom {
		if ref.Kind == "ConfigMap" && ref.Name == constants.ShootInfoConfigMapName {
			shootInfoAt = i
			continue
		}
		if errs := validation.ValidateSubstituteReference(fluxapi.SubstituteReference{Kind: ref.Kind, Name: ref.Name}, fromPath.Index(i)); len(errs) > 0 {
			c.errs = append(c.errs, errs...)
			continue
		}
		out.SubstituteFrom = append(out.SubstituteFrom, v1alpha1.SubstituteReference{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional})
	}
	if shootInfoAt >= 0 && shootInfoAt < len(p.SubstituteFrom)-1 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: the ConfigMap %s is substituted after the other entries here, so its keys win over theirs",
			fromPath.Index(shootInfoAt), constants.ShootInfoConfigMapName))
	}
	if out.Substitute == nil && out.SubstituteFrom == nil {
		return nil
	}
	return out
}
