// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// fluxKustomization is the Kustomization of mode flux, which applies the source of kind
// sourceKind.
func fluxKustomization(v Values, namespace, sourceKind string) *kustomizev1.Kustomization {
	cfg := v.Config
	f := cfg.Bootstrap.Flux
	name := ObjectName(cfg)
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels()},
		Spec: kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourceKind, Name: name},
			Path:               f.Path,
			Prune:              f.Prune,
			Interval:           f.Interval,
			TargetNamespace:    f.TargetNamespace,
			Wait:               f.Wait,
			Timeout:            f.Timeout,
			RetryInterval:      f.RetryInterval,
			ServiceAccountName: f.ServiceAccountName,
			// Removing the extension must never delete the workloads the repository deployed.
			DeletionPolicy: kustomizev1.DeletionPolicyOrphan,
			PostBuild:      kustomizationPostBuild(f.PostBuild, v.Shoot != nil),
			Patches:        kustomizationPatches(f.Patches),
		},
	}
	if v.Decryption != nil {
		ks.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops", SecretRef: &fluxmeta.LocalObjectReference{Name: constants.DecryptionSecretName}}
	}
	return ks
}

// kustomizationPostBuild is the variable substitution of the Kustomization: the user's variables
// and ConfigMaps and Secrets, and with shootInfo the ConfigMap shoot-info after them, so that its
// keys win over those of the user's objects (kustomize-controller lets a later entry win). The
// user's own variables, which would win over every entry, cannot name a key of shoot-info
// (validation). nil if there is nothing to substitute.
func kustomizationPostBuild(p *fluxapi.PostBuild, shootInfo bool) *kustomizev1.PostBuild {
	out := &kustomizev1.PostBuild{}
	if p != nil {
		if len(p.Substitute) > 0 {
			out.Substitute = p.Substitute
		}
		for _, ref := range p.SubstituteFrom {
			out.SubstituteFrom = append(out.SubstituteFrom, kustomizev1.SubstituteReference{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional})
		}
	}
	if shootInfo {
		// Not optional: applied before the ConfigMap exists, the Kustomization must fail and retry
		// rather than substitute empty values.
		out.SubstituteFrom = append(out.SubstituteFrom, kustomizev1.SubstituteReference{Kind: "ConfigMap", Name: constants.ShootInfoConfigMapName})
	}
	if out.Substitute == nil && out.SubstituteFrom == nil {
		return nil
	}
	return out
}

// kustomizationPatches are the Kustomization's patches as the user wrote them.
func kustomizationPatches(patches []fluxapi.Patch) []kustomize.Patch {
	var out []kustomize.Patch
	for _, p := range patches {
		rendered := kustomize.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			rendered.Target = &kustomize.Selector{
				Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		out = append(out, rendered)
	}
	return out
}
