// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command publish pushes the images and charts of this repository and writes the objects that
// install them (package publish, docs/operations/installation.md); `make publish` runs it.
// Credentials come from $DOCKER_CONFIG/config.json; loopback registries are reached over HTTP.
//
//	go run ./hack/publish --registry=registry.example.com/gardener --version=v1.2.3 ...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/shoot-flux/gardener-extension-shoot-flux/hack/publish/publish"
)

func main() {
	o := publish.Options{Out: os.Stdout}
	flag.StringVar(&o.Registry, "registry", "", "registry (host[:port][/path]) to push to: images go to <registry>/extensions, charts to <registry>/charts/extensions")
	flag.StringVar(&o.Version, "version", "", "tag of the images and charts, and the charts' version and appVersion")
	flag.StringVar(&o.DefaultRegistry, "default-registry", "", "registry the charts' default image.repository names; rewritten to --registry in the pushed charts")
	flag.StringVar(&o.BaseImage, "base-image", "", `base image of both images, pulled for --platform; "scratch" for none`)
	flag.StringVar(&o.Platform, "platform", "linux/amd64", "os/arch of the binaries and the images")
	flag.StringVar(&o.ExtensionLDFlags, "extension-ldflags", "", "go build -ldflags of the extension binary")
	flag.StringVar(&o.AdmissionLDFlags, "admission-ldflags", "", "go build -ldflags of the admission binary")
	flag.StringVar(&o.Output, "output", "bin/install", "directory the install objects are written to")
	flag.StringVar(&o.ChartPullSecret, "chart-pull-secret", "", "Secret (dockerconfigjson, namespace garden) gardenlet and gardener-operator pull the charts with; none for a public registry")
	flag.BoolVar(&o.Insecure, "insecure", false, "reach the registry over plain HTTP (always the case for loopback addresses)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "publish: unexpected arguments %v\n", flag.Args())
		os.Exit(2)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	root, err := os.Getwd()
	if err == nil {
		err = publish.Run(ctx, o, root)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "publish: %v\n", err)
		os.Exit(1)
	}
}
