package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	extensionName = "gardener-extension-shoot-flux"
	admissionName = extensionName + "-admission"
	// installName is the name of the ControllerRegistration, ControllerDeployment and operator
	// Extension, as in the examples.
	installName = "shoot-flux"
)

type options struct {
	registry, version, defaultRegistry, baseImage, platform string
	extensionLDFlags, admissionLDFlags                      string
	output, chartPullSecret                                 string
	insecure                                                bool
}

func (o options) validate() error {
	var errs []error
	for flagName, v := range map[string]string{
		"--registry": o.registry, "--version": o.version, "--default-registry": o.defaultRegistry,
		"--base-image": o.baseImage, "--platform": o.platform, "--output": o.output,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", flagName))
		}
	}
	if o.registry != "" {
		if _, err := name.NewRepository(o.registry+"/extensions/"+extensionName, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("--registry %q: %w", o.registry, err))
		}
	}
	if o.version != "" {
		if _, err := name.NewTag("example.com/shoot-flux:"+o.version, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("--version %q is not a valid tag: %w", o.version, err))
		}
	}
	return errors.Join(errs...)
}

// nameOptions are the options for every ref in the registry pushed to.
func (o options) nameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if o.insecure {
		opts = append(opts, name.Insecure)
	}
	return opts
}

// pushed is an artifact in the registry: its repository, the tag it was pushed with and the
// digest of its manifest.
type pushed struct {
	repository, tag, digest string
}

// ref is repository:tag@digest: pinned by the digest, the tag only for readers.
func (p pushed) ref() string {
	return p.repository + ":" + p.tag + "@" + p.digest
}

func run(ctx context.Context, o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "charts", extensionName, "Chart.yaml")); err != nil {
		return fmt.Errorf("run publish in the repository root: %w", err)
	}
	work, err := os.MkdirTemp("", "shoot-flux-publish-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()

	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	registry := strings.TrimSuffix(o.registry, "/")

	images := map[string]pushed{}
	for _, b := range []struct{ name, ldflags string }{
		{extensionName, o.extensionLDFlags},
		{admissionName, o.admissionLDFlags},
	} {
		binary, err := buildBinary(ctx, root, work, b.name, b.ldflags, o.platform)
		if err != nil {
			return err
		}
		p, err := pushImage(ctx, o, registry+"/extensions/"+b.name, binary, remoteOpts)
		if err != nil {
			return err
		}
		fmt.Printf("pushed image %s\n", p.ref())
		images[b.name] = p
	}

	chartsPushed := map[string]pushed{}
	for _, c := range publishedCharts {
		p, err := pushChart(ctx, o, root, work, c, registry, remoteOpts)
		if err != nil {
			return err
		}
		fmt.Printf("pushed chart %s\n", p.ref())
		chartsPushed[c.name] = p
	}

	files, err := writeInstall(ctx, o, root, work, images, chartsPushed)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Printf("wrote %s\n", f)
	}
	return nil
}
