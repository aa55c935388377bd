// Command publish builds the extension and admission images and the four charts of this
// repository, pushes them to a registry and writes the objects that install exactly what it
// pushed (see docs/installation.md). It needs no Docker engine and no helm binary: images are
// assembled with go-containerregistry, charts packaged with helm's library. `make publish` runs it
// with the Makefile's VERSION, ldflags and base image.
//
//	go run ./hack/publish --registry=registry.example.com/gardener --version=v1.2.3 ...
//
// Registry credentials come from the Docker config ($DOCKER_CONFIG/config.json, written by
// `docker login` or `crane auth login`); registries on loopback addresses are reached over HTTP.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var o options
	flag.StringVar(&o.registry, "registry", "", "registry (host[:port][/path]) to push to: images go to <registry>/extensions, charts to <registry>/charts/extensions")
	flag.StringVar(&o.version, "version", "", "tag of the images and charts, and the charts' version and appVersion")
	flag.StringVar(&o.defaultRegistry, "default-registry", "", "registry the charts' default image.repository names; rewritten to --registry in the pushed charts")
	flag.StringVar(&o.baseImage, "base-image", "", `base image of both images, pulled for --platform; "scratch" for none`)
	flag.StringVar(&o.platform, "platform", "linux/amd64", "os/arch of the binaries and the images")
	flag.StringVar(&o.extensionLDFlags, "extension-ldflags", "", "go build -ldflags of the extension binary")
	flag.StringVar(&o.admissionLDFlags, "admission-ldflags", "", "go build -ldflags of the admission binary")
	flag.StringVar(&o.output, "output", "bin/install", "directory the install objects are written to")
	flag.StringVar(&o.chartPullSecret, "chart-pull-secret", "", "Secret (dockerconfigjson, namespace garden) gardenlet and gardener-operator pull the charts with; none for a public registry")
	flag.BoolVar(&o.insecure, "insecure", false, "reach the registry over plain HTTP (always the case for loopback addresses)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "publish: unexpected arguments %v\n", flag.Args())
		os.Exit(2)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "publish: %v\n", err)
		os.Exit(1)
	}
}
