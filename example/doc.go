// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package example holds example manifests. The operator Extension base (with the admission) is
// generated with gardener's extension-generator from the gardener module go.mod requires, like
// example/controller-registration.yaml is generated with gardener's registration script (see
// charts/embed.go). Both name the charts at europe-docker.pkg.dev/gardener-project/public, where
// this project publishes nothing: `make publish REGISTRY=...` pushes the images and charts to your
// registry and writes the same objects naming them (docs/operations/installation.md).
package example

//go:generate sh -c "go run github.com/gardener/gardener/hack/generators/extension-generator --name=shoot-flux --provider-type=shoot-flux --component-category=extension --extension-oci-repository=europe-docker.pkg.dev/gardener-project/public/charts/extensions/gardener-extension-shoot-flux:$(cat ../VERSION) --admission-runtime-oci-repository=europe-docker.pkg.dev/gardener-project/public/charts/extensions/gardener-extension-shoot-flux-admission-runtime:$(cat ../VERSION) --admission-application-oci-repository=europe-docker.pkg.dev/gardener-project/public/charts/extensions/gardener-extension-shoot-flux-admission-application:$(cat ../VERSION) --destination=extension/base/extension.yaml"
