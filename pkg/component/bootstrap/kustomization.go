// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// kustomizationPostBuild is the variable substitution of the Kustomization: the user's variables
// and ConfigMaps and Secrets, and with shootInfo the ConfigMap shoot-info after them, so that its
// keys win over those of the user's objects (kustomize-controller lets a later entry win). The
// user's own variables, which would win over every entry, cannot name a key of shoot-info
// (validation). nil if there is nothing to substitute.
func kustomizationPostBuild(p *fluxapi.PostBuild, shootInfo bool) *postBuild {
	out := &postBuild{}
	if p != nil {
		if len(p.Substitute) > 0 {
			out.Substitute = p.Substitute
		}
		for _, ref := range p.SubstituteFrom {
			out.SubstituteFrom = append(out.SubstituteFrom, substituteReference{Kind: ref.Kind, Name: ref.Name, Optional: ref.Optional})
		}
	}
	if shootInfo {
		// Not optional: applied before the ConfigMap exists, the Kustomization must fail and retry
		// rather than substitute empty values.
		out.SubstituteFrom = append(out.SubstituteFrom, substituteReference{Kind: "ConfigMap", Name: constants.ShootInfoConfigMapName})
	}
	if out.Substitute == nil && out.SubstituteFrom == nil {
		return nil
	}
	return out
}

// kustomizationPatches are the Kustomization's patches as the user wrote them.
func kustomizationPatches(patches []fluxapi.Patch) []patch {
	var out []patch
	for _, p := range patches {
		rendered := patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			rendered.Target = &patchSelector{
				Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		out = append(out, rendered)
	}
	return out
}
