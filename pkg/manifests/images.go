// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"fmt"
	"strings"

	"github.com/gardener/gardener/pkg/utils/imagevector"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/imageregistry"
)

// KluctlComponent is the key of the kluctl controller's image in Images.
const KluctlComponent = kluctlDeploymentName

// Images returns the container image of every controller the options render, keyed by component
// (the Flux components and KluctlComponent; kluctl may be nil), exactly as RenderFlux and
// RenderKluctl put them into the Deployments: from the image vector, with the registry override.
func Images(flux FluxOptions, kluctl *KluctlOptions) (map[string]string, error) {
	return defaultRenderer.images(flux, kluctl)
}

func (r *renderer) images(flux FluxOptions, kluctl *KluctlOptions) (map[string]string, error) {
	images, err := r.fluxImages(flux)
	if err != nil {
		return nil, err
	}
	if kluctl != nil {
		if err := checkVersion("kluctl", kluctl.Version, kluctlVersions); err != nil {
			return nil, err
		}
		if err := validateRegistry(kluctl.Registry); err != nil {
			return nil, err
		}
		if images[KluctlComponent], err = findImage(r.imageVector, fluximagevector.KluctlController, kluctl.Version, kluctl.Registry); err != nil {
			return nil, err
		}
	}
	return images, nil
}

// fluxImages returns the image of every Flux component of opts, keyed by component.
func (r *renderer) fluxImages(opts FluxOptions) (map[string]string, error) {
	if err := checkVersion("flux", opts.Version, fluxVersions); err != nil {
		return nil, err
	}
	components, err := normalizeComponents(opts.Components)
	if err != nil {
		return nil, err
	}
	if err := validateRegistry(opts.Registry); err != nil {
		return nil, err
	}
	images := map[string]string{}
	for _, c := range components {
		if images[c], err = findImage(r.imageVector, fluxImageNames[c], opts.Version, opts.Registry); err != nil {
			return nil, err
		}
	}
	return images, nil
}

// findImage returns the image of name for the given release, with the registry override applied.
func findImage(vector imagevector.ImageVector, name, version, registry string) (string, error) {
	image, err := vector.FindImage(name, imagevector.TargetVersion(version))
	if err != nil {
		return "", fmt.Errorf("finding image %s for %s in the image vector: %w", name, version, err)
	}
	ref := image.String()
	if ref == "" {
		return "", fmt.Errorf("image %s for %s has neither ref nor repository in the image vector", name, version)
	}
	return overrideRegistry(ref, registry), nil
}

// overrideRegistry replaces the registry of an image reference, keeping path, tag and digest
// (ghcr.io/fluxcd/x:v1 becomes my.mirror/fluxcd/x:v1). As in Docker's reference grammar, the first
// path component is a registry only with "." or ":" or as "localhost"; otherwise (docker.io) the
// registry is prepended. An empty registry changes nothing.
func overrideRegistry(ref, registry string) string {
	if registry == "" {
		return ref
	}
	if host, rest, found := strings.Cut(ref, "/"); found && (strings.ContainsAny(host, ".:") || host == "localhost") {
		return registry + "/" + rest
	}
	return registry + "/" + ref
}

func validateRegistry(registry string) error {
	if err := imageregistry.Validate(registry); err != nil {
		return fmt.Errorf("invalid registry %q: %w", registry, err)
	}
	return nil
}
