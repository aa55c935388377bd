// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command generate-flux-manifests writes the Flux and kluctl manifests pkg/manifests embeds, per
// release in the layout of Flux's release tarball, and their images into the image vector, from the
// Go module cache alone (GitHub is not reachable). The flags list every supported release: the
// output is replaced as a whole (docs/development/getting-started.md#adding-a-flux-or-kluctl-release).
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
