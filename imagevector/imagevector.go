// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package imagevector holds the images of everything the extension deploys into shoots.
//
// Flux controller images are named flux-<component> and match the Flux release with
// imagevector.TargetVersion("<flux version>"); the kluctl controller image is kluctl-controller
// and matches the kluctl release the same way.
package imagevector

import (
	_ "embed"
	"fmt"

	"github.com/gardener/gardener/pkg/utils/imagevector"
)

// Names of the images in the image vector.
const (
	FluxSourceController       = "flux-source-controller"
	FluxKustomizeController    = "flux-kustomize-controller"
	FluxHelmController         = "flux-helm-controller"
	FluxNotificationController = "flux-notification-controller"
	KluctlController           = "kluctl-controller"
)

var (
	//go:embed images.yaml
	imagesYAML []byte

	imageVector imagevector.ImageVector
)

func init() {
	var err error
	// Like gardener's own components, an unreadable IMAGEVECTOR_OVERWRITE stops the process at
	// start instead of deploying images nobody asked for.
	if imageVector, err = Load(); err != nil {
		panic(err)
	}
}

// Load reads the embedded image vector and merges the overwrite that the file named by
// IMAGEVECTOR_OVERWRITE holds, if that variable is set.
func Load() (imagevector.ImageVector, error) {
	vector, caBundle, err := imagevector.Read(imagesYAML)
	if err != nil {
		return nil, fmt.Errorf("reading embedded image vector: %w", err)
	}
	vector, _, err = imagevector.WithEnvOverride(vector, caBundle, imagevector.OverrideEnv)
	if err != nil {
		return nil, fmt.Errorf("reading image vector overwrite from $%s: %w", imagevector.OverrideEnv, err)
	}
	return vector, nil
}

// ImageVector returns the image vector read at program start, including the overwrite.
func ImageVector() imagevector.ImageVector {
	return imageVector
}
