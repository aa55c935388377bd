// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command generate-flux-manifests writes the version-pinned Flux and kluctl manifests that
// pkg/manifests embeds. It reads nothing but the Go module cache (filled through the Go module
// proxy by `go mod download`), because neither GitHub release assets nor container registries are
// reachable when this project is built.
//
// For every Flux version it writes <out>/flux/<version>/ in the layout of Flux's release
// manifests.tar.gz (one file per controller plus rbac.yaml and policies.yaml), which is what
// github.com/fluxcd/flux2/v2/pkg/manifestgen/install.Generate consumes as its manifests base.
// For every kluctl version it copies the controller manifests from
// github.com/kluctl/kluctl/v2/install/controller to <out>/kluctl/<version>/. The image vector
// file (-imagevector) receives the images these manifests pin, one entry per component and release.
//
// Controller versions the Go module proxy refuses are built from a served version's config/ (see
// substitutes); where their API differs, the CRDs are generated from the api module of the version
// itself with controller-gen, which `go run` fetches through the module proxy as well.
//
// The output directories and the image vector are replaced as a whole, so the flags must list every
// supported version.
//
// Usage:
//
//	go run ./hack/generate-flux-manifests -out pkg/manifests -imagevector imagevector/images.yaml -flux v2.7.5,v2.9.5 -kluctl v2.28.2
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

func main() {
	var (
		out         string
		imageVector string
		flux        string
		kluctl      string
	)
	flag.StringVar(&out, "out", "", "directory that receives the flux/ and kluctl/ trees (pkg/manifests)")
	flag.StringVar(&imageVector, "imagevector", "", "image vector file that receives the images of the releases (imagevector/images.yaml)")
	flag.StringVar(&flux, "flux", "", "comma-separated Flux versions, e.g. v2.9.5")
	flag.StringVar(&kluctl, "kluctl", "", "comma-separated kluctl versions, e.g. v2.28.2")
	flag.Parse()

	if out == "" || imageVector == "" {
		fmt.Fprintln(os.Stderr, "generate-flux-manifests: -out and -imagevector are required")
		os.Exit(2)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	g := &Generator{Downloader: &GoModDownloader{}, CRDs: &ControllerGen{}}
	generated, err := g.Generate(ctx, splitList(flux), splitList(kluctl))
	if err == nil {
		err = WriteTree(out, generated.Manifests)
	}
	if err == nil {
		err = os.WriteFile(imageVector, generated.ImageVector, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "generate-flux-manifests: %v\n", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var items []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}
