// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package controllers deploys the ManagedResource with the Flux controllers and the kluctl
// controller into a shoot.
package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// Values configure the controllers ManagedResource.
type Values struct {
	// Flux selects the Flux version, components, namespace and registry.
	Flux manifests.FluxOptions
	// Kluctl selects the kluctl controller; nil leaves it out.
	Kluctl *manifests.KluctlOptions
}

// New returns a component for the controllers ManagedResource in the given seed namespace. reader
// is used while waiting and should be a cached client.
func New(c client.Client, reader client.Reader, namespace string, values Values, timeouts managedresource.Timeouts) *managedresource.ManagedResource {
	return &managedresource.ManagedResource{
		Client:    c,
		Reader:    reader,
		Namespace: namespace,
		Name:      constants.ManagedResourceControllers,
		Data:      func() (map[string][]byte, error) { return Data(values) },
		Timeouts:  timeouts,
	}
}

// Data returns the ManagedResource secret data (brotli-compressed) for the given values. The data
// only depends on the values, and hundreds of shoots on a seed share a few distinct values:
// compressing a few hundred KiB of YAML per reconcile would dominate the CPU time. So it is kept in
// the process's render cache next to the renders it is made of. The returned map is shared and
// must not be modified.
func Data(values Values) (map[string][]byte, error) {
	key, err := cacheKey(values)
	if err != nil {
		return nil, err
	}
	return rendercache.Get(rendercache.Shared, key, func() (map[string][]byte, int64, error) {
		data, err := build(values)
		if err != nil {
			return nil, 0, err
		}
		var size int64
		for k, v := range data {
			size += int64(len(k) + len(v))
		}
		return data, size, nil
	})
}

func build(values Values) (map[string][]byte, error) {
	fluxYAML, err := manifests.RenderFlux(values.Flux)
	if err != nil {
		return nil, fmt.Errorf("failed rendering flux manifests: %w", err)
	}
	files := map[string][]byte{"flux.yaml": fluxYAML}
	if values.Kluctl != nil {
		kluctlYAML, err := manifests.RenderKluctl(*values.Kluctl)
		if err != nil {
			return nil, fmt.Errorf("failed rendering kluctl manifests: %w", err)
		}
		files["kluctl.yaml"] = kluctlYAML
	}

	data, err := managedresource.Data(files)
	if err != nil {
		return nil, fmt.Errorf("failed serializing controller manifests: %w", err)
	}
	return data, nil
}

// cacheKey hashes every input of the data; the order of the Flux components does not matter.
func cacheKey(v Values) (rendercache.Key, error) {
	components := slices.Clone(v.Flux.Components)
	slices.Sort(components)
	components = slices.Compact(components)
	fluxTuning, err := v.Flux.Tuning.Key()
	if err != nil {
		return rendercache.Key{}, err
	}
	parts := []string{"controllers-data", v.Flux.Version, strings.Join(components, ","), v.Flux.Namespace, v.Flux.Registry, fluxTuning}
	if v.Kluctl != nil {
		kluctlTuning, err := v.Kluctl.Tuning.Key()
		if err != nil {
			return rendercache.Key{}, err
		}
		parts = append(parts, "kluctl", v.Kluctl.Version, v.Kluctl.Namespace, v.Kluctl.Registry, strconv.FormatBool(v.Kluctl.DisableStrictHostKeyChecking), kluctlTuning)
	}
	return rendercache.KeyOf(parts...), nil
}
