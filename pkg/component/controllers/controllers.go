// Package controllers deploys the ManagedResource with the Flux controllers and the kluctl
// controller into a shoot.
package controllers

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
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

// The compressed data only depends on the values, and hundreds of shoots on a seed share a few
// distinct values; compressing half a megabyte of YAML per reconcile would dominate the CPU time.
var (
	cacheMu sync.Mutex
	cache   = map[string]map[string][]byte{}
)

// Data returns the ManagedResource secret data (brotli-compressed) for the given values. The
// returned map is shared and must not be modified.
func Data(values Values) (map[string][]byte, error) {
	key, err := cacheKey(values)
	if err != nil {
		return nil, err
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if data, ok := cache[key]; ok {
		return data, nil
	}

	fluxYAML, err := manifests.RenderFlux(values.Flux)
	if err != nil {
		return nil, fmt.Errorf("failed rendering flux manifests: %w", err)
	}
	registry := managedresources.NewRegistry(kubernetes.ShootScheme, kubernetes.ShootCodec, kubernetes.ShootSerializer)
	registry.AddSerialized("flux.yaml", fluxYAML)

	if values.Kluctl != nil {
		kluctlYAML, err := manifests.RenderKluctl(*values.Kluctl)
		if err != nil {
			return nil, fmt.Errorf("failed rendering kluctl manifests: %w", err)
		}
		registry.AddSerialized("kluctl.yaml", kluctlYAML)
	}

	data, err := registry.SerializedObjects()
	if err != nil {
		return nil, fmt.Errorf("failed serializing controller manifests: %w", err)
	}
	cache[key] = data
	return data, nil
}

func cacheKey(v Values) (string, error) {
	components := slices.Clone(v.Flux.Components)
	slices.Sort(components)
	fluxTuning, err := v.Flux.Tuning.Key()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s", v.Flux.Version, strings.Join(components, ","), v.Flux.Namespace, v.Flux.Registry, fluxTuning)
	if v.Kluctl != nil {
		kluctlTuning, err := v.Kluctl.Tuning.Key()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "|kluctl|%s|%s|%s|insecure=%t|%s", v.Kluctl.Version, v.Kluctl.Namespace, v.Kluctl.Registry, v.Kluctl.DisableStrictHostKeyChecking, kluctlTuning)
	}
	return b.String(), nil
}
