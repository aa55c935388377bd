// Package manifests renders the Flux and kluctl controllers the extension deploys into shoots.
//
// The upstream manifests are embedded per release (flux/<version>/, kluctl/<version>/), so
// rendering needs no network: hack/generate-flux-manifests builds them from the Go module cache.
// Flux objects are rendered by Flux's own install package, as `flux install` does; kluctl objects
// are assembled from the upstream controller project. Every container image comes from the image
// vector (package imagevector), optionally moved to another registry.
//
// The supported releases are exactly the embedded ones. To add one:
//
//  1. add the version to -flux or -kluctl of the go:generate line below and run
//     `go generate ./pkg/manifests/...`;
//  2. add its images to imagevector/images.yaml with targetVersion "= <version>" (the tests fail
//     until the tags match the embedded manifests);
//  3. optionally move DefaultFluxVersion or DefaultKluctlVersion.
//
// Removing a version from the go:generate line removes its directory on the next run.
//
//go:generate go run ../../hack/generate-flux-manifests -out . -flux v2.9.5 -kluctl v2.28.2
package manifests
