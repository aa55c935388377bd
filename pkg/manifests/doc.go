// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package manifests renders the Flux and kluctl controllers from the upstream manifests embedded per
// release, with images from the image vector. The go:generate line lists the supported releases
// (docs/development/getting-started.md#adding-a-flux-or-kluctl-release).
//
//go:generate go run ../../hack/generate-flux-manifests -out . -imagevector ../../imagevector/images.yaml -flux v2.7.5,v2.9.5 -kluctl v2.28.2
package manifests
