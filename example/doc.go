// Package example holds example manifests. The operator Extension base is generated with
// gardener's extension-generator from the gardener module go.mod requires, like
// example/controller-registration.yaml is generated with gardener's registration script (see
// charts/embed.go).
package example

//go:generate sh -c "go run github.com/gardener/gardener/hack/generators/extension-generator --name=shoot-flux --provider-type=shoot-flux --component-category=extension --extension-oci-repository=europe-docker.pkg.dev/gardener-project/public/charts/extensions/gardener-extension-shoot-flux:$(cat ../VERSION) --destination=extension/base/extension.yaml"
