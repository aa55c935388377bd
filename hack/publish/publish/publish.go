// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package publish builds the extension and admission images (go-containerregistry, no Docker) and
// the four charts (helm's library), pushes them and writes the objects that install exactly what it
// pushed. hack/publish and the sandbox's registry use it (docs/operations/installation.md).
package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	// ExtensionName is the extension binary, image and chart name.
	ExtensionName = "gardener-extension-shoot-flux"
	admissionName = ExtensionName + "-admission"
	// ChartsDefaultRegistry is the registry the charts' default image repositories name (the
	// Makefile's DEFAULT_REGISTRY), which Options.DefaultRegistry usually is.
	ChartsDefaultRegistry = "europe-docker.pkg.dev/gardener-project/public"
	// installName is the name of the ControllerRegistration, ControllerDeployment and operator
	// Extension, as in the examples.
	installName = "shoot-flux"
)

// Options are the settings of a publication; hack/publish fills them from its flags.
type Options struct {
	// Registry is where the images (<Registry>/extensions) and charts (<Registry>/charts/extensions)
	// go: host[:port][/path].
	Registry string
	// Version is the tag of the images and charts, and the charts' version and appVersion.
	Version string
	// DefaultRegistry is the registry the charts' default image.repository names; it is rewritten
	// to Registry in the pushed charts.
	DefaultRegistry string
	// BaseImage is the base of both images, pulled for Platform; "scratch" for none.
	BaseImage string
	// Platform is the os/arch of the binaries and the images.
	Platform string
	// ExtensionLDFlags and AdmissionLDFlags are the go build -ldflags of the binaries.
	ExtensionLDFlags, AdmissionLDFlags string
	// Output is the directory the install objects are written to.
	Output string
	// ChartPullSecret names the Secret (dockerconfigjson, namespace garden) gardenlet and
	// gardener-operator pull the charts with; empty for a public registry.
	ChartPullSecret string
	// Insecure reaches the registry over plain HTTP. Without it, plain HTTP is only used for
	// loopback addresses: go-containerregistry would fall back to it for private (RFC 1918) and
	// .local addresses too, and send the credentials in the clear.
	Insecure bool
	// RemoteOptions authenticate at the registry; empty uses the Docker config
	// ($DOCKER_CONFIG/config.json, written by `docker login` or `crane auth login`).
	RemoteOptions []remote.Option
	// Out receives the progress lines; nil discards them.
	Out io.Writer
}

func (o Options) validate() error {
	var errs []error
	for flagName, v := range map[string]string{
		"--registry": o.Registry, "--version": o.Version, "--default-registry": o.DefaultRegistry,
		"--base-image": o.BaseImage, "--platform": o.Platform,
	} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", flagName))
		}
	}
	if o.Registry != "" {
		if _, err := name.NewRepository(o.Registry+"/extensions/"+ExtensionName, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("--registry %q: %w", o.Registry, err))
		}
	}
	if o.Version != "" {
		if _, err := name.NewTag("example.com/shoot-flux:"+o.Version, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("--version %q is not a valid tag: %w", o.Version, err))
		}
	}
	return errors.Join(errs...)
}

// nameOptions are the options for every ref in the registry pushed to.
func (o Options) nameOptions() []name.Option {
	opts := []name.Option{name.StrictValidation}
	if o.Insecure {
		opts = append(opts, name.Insecure)
	}
	return opts
}

func (o Options) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(o.out(), format, args...)
}

func (o Options) out() io.Writer {
	if o.Out == nil {
		return io.Discard
	}
	return o.Out
}

// remoteOptions are the options of every registry request.
func (o Options) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(httpsOnly{base: remote.DefaultTransport, allowHTTP: o.Insecure})}
	if len(o.RemoteOptions) == 0 {
		return append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	return append(opts, o.RemoteOptions...)
}

// httpsOnly refuses requests over plain HTTP to hosts other than loopback ones, unless allowHTTP.
type httpsOnly struct {
	base      http.RoundTripper
	allowHTTP bool
}

// RoundTrip implements http.RoundTripper.
func (t httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !t.allowHTTP && !isLoopback(req.URL.Hostname()) {
		return nil, fmt.Errorf("refusing plain HTTP to %s, which would send the registry credentials in the clear: serve the registry over HTTPS, or set INSECURE=true (--insecure)", req.URL.Host)
	}
	return t.base.RoundTrip(req)
}

// isLoopback tells whether host is a loopback name or address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (o Options) registryPath() string {
	return strings.TrimSuffix(o.Registry, "/")
}

// Pushed is an artifact in the registry: its repository, the tag it was pushed with and the
// digest of its manifest.
type Pushed struct {
	Repository, Tag, Digest string
}

// Ref is repository:tag@digest: pinned by the digest, the tag only for readers.
func (p Pushed) Ref() string {
	return p.Repository + ":" + p.Tag + "@" + p.Digest
}

// Run builds and pushes both images and all charts and writes the install objects into
// Options.Output; root is the repository root.
func Run(ctx context.Context, o Options, root string) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.Output == "" {
		return errors.New("--output is required")
	}
	if err := checkRoot(root); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "shoot-flux-publish-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()

	remoteOpts := o.remoteOptions(ctx)
	images := map[string]Pushed{}
	for _, b := range []struct{ name, ldflags string }{
		{ExtensionName, o.ExtensionLDFlags},
		{admissionName, o.AdmissionLDFlags},
	} {
		binary, err := buildBinary(ctx, o, root, work, b.name, b.ldflags)
		if err != nil {
			return err
		}
		p, err := pushImage(ctx, o, o.registryPath()+"/extensions/"+b.name, binary, remoteOpts)
		if err != nil {
			return err
		}
		o.printf("pushed image %s\n", p.Ref())
		images[b.name] = p
	}

	chartsPushed := map[string]Pushed{}
	for _, c := range publishedCharts {
		p, err := pushChart(ctx, o, root, work, c, o.registryPath(), remoteOpts)
		if err != nil {
			return err
		}
		o.printf("pushed chart %s\n", p.Ref())
		chartsPushed[c.name] = p
	}

	files, err := writeInstall(ctx, o, root, work, images, chartsPushed)
	if err != nil {
		return err
	}
	for _, f := range files {
		o.printf("wrote %s\n", f)
	}
	return nil
}

// Extension pushes the image of an extension binary built beforehand (the Makefile's build, for
// Options.Platform) and the extension chart, as Run does, and returns them with the
// ControllerDeployment and ControllerRegistration that install them: the content Run writes into
// RegistrationFile, which it writes into Options.Output as well when that is set. The ldflags are
// not used.
func Extension(ctx context.Context, o Options, root, binary string) (image, chart Pushed, registration []byte, err error) {
	if err := o.validate(); err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	if err := checkRoot(root); err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	work, err := os.MkdirTemp("", "shoot-flux-publish-")
	if err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()

	remoteOpts := o.remoteOptions(ctx)
	// The image's entrypoint is the binary's base name, as in the Dockerfile.
	staged := filepath.Join(work, "bin", ExtensionName)
	if err := os.MkdirAll(filepath.Dir(staged), 0o755); err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	if err := os.Symlink(binary, staged); err != nil {
		return Pushed{}, Pushed{}, nil, fmt.Errorf("failed staging %s: %w", binary, err)
	}
	if image, err = pushImage(ctx, o, o.registryPath()+"/extensions/"+ExtensionName, staged, remoteOpts); err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	for _, c := range publishedCharts {
		if c.name != ExtensionName {
			continue
		}
		if chart, err = pushChart(ctx, o, root, work, c, o.registryPath(), remoteOpts); err != nil {
			return Pushed{}, Pushed{}, nil, err
		}
	}
	registration, err = controllerRegistration(root, o, map[string]Pushed{ExtensionName: image}, map[string]Pushed{ExtensionName: chart})
	if err != nil {
		return Pushed{}, Pushed{}, nil, err
	}
	if o.Output != "" {
		path, err := writeOutput(o, RegistrationFile, registration)
		if err != nil {
			return Pushed{}, Pushed{}, nil, err
		}
		o.printf("wrote %s\n", path)
	}
	return image, chart, registration, nil
}

func checkRoot(root string) error {
	if _, err := os.Stat(filepath.Join(root, "charts", ExtensionName, "Chart.yaml")); err != nil {
		return fmt.Errorf("run publish in the repository root: %w", err)
	}
	return nil
}
