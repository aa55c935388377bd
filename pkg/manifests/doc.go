// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package manifests renders the Flux and kluctl controllers the extension deploys into shoots.
//
// The upstream manifests are embedded per release (flux/<version>/, kluctl/<version>/), so
// rendering needs no network: hack/generate-flux-manifests builds them from the Go module cache.
// Flux objects are rendered by Flux's own install package, as `flux install` does; kluctl objects
// are assembled from the upstream controller project. Every container image comes from the image
// vector (package imagevector), optionally moved to another registry.
//
// The supported releases are exactly the embedded ones. Adding or dropping one is a change of
// the -flux or -kluctl list of the go:generate line below and `make generate` (or
// `go generate ./pkg/manifests/...`): the generator rewrites flux/, kluctl/ and the image vector
// (imagevector/images.yaml, the images the manifests of each release pin), so versions no longer
// listed disappear from all three. Shoots and the operator select a release or a minor, which
// helper.ResolveVersion (package pkg/apis/flux/helper) resolves against SupportedVersions.
//
//go:generate go run ../../hack/generate-flux-manifests -out . -imagevector ../../imagevector/images.yaml -flux v2.7.5,v2.9.5 -kluctl v2.28.2
package manifests
