// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

// CRDsKey names what decides the CRDs of values: the releases and the Flux components.
func CRDsKey(values Values) string {
	components := slices.Clone(values.Flux.Components)
	slices.Sort(components)
	s := fmt.Sprintf("flux %s (%s)", values.Flux.Version, strings.Join(slices.Compact(components), ","))
	if values.Kluctl != nil {
		s += ", kluctl " + values.Kluctl.Version
	}
	return s
}

// CRDs returns the CRDs of the controllers ManagedResource of values.
func CRDs(values Values) ([]apiextensionsv1.CustomResourceDefinition, error) {
	stream, err := manifests.RenderFlux(values.Flux)
	if err != nil {
		return nil, fmt.Errorf("failed rendering flux manifests: %w", err)
	}
	crds, err := storedversions.CRDs(stream)
	if err != nil {
		return nil, err
	}
	if values.Kluctl != nil {
		if stream, err = manifests.RenderKluctl(*values.Kluctl); err != nil {
			return nil, fmt.Errorf("failed rendering kluctl manifests: %w", err)
		}
		kluctl, err := storedversions.CRDs(stream)
		if err != nil {
			return nil, err
		}
		crds = append(crds, kluctl...)
	}
	return crds, nil
}
