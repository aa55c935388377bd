// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package cmd holds the command line options of the shoot-flux extension controller.
package cmd

import (
	"fmt"
	"net"
	"os"
	"time"

	controllercmd "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	extensionsheartbeatcontroller "github.com/gardener/gardener/extensions/pkg/controller/heartbeat"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// EnvGardenKubeconfig is set by gardenlet when the ControllerDeployment asks for
// injectGardenKubeconfig.
const EnvGardenKubeconfig = "GARDEN_KUBECONFIG"

// ConfigOptions load the component configuration file.
type ConfigOptions struct {
	// ConfigLocation is the path of the ControllerConfiguration file; empty uses the defaults.
	ConfigLocation string

	config    *config.ControllerConfiguration
	lifecycle *releases.Lifecycle
}

// AddFlags implements controllercmd.Flagger.
func (o *ConfigOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigLocation, "config", o.ConfigLocation, "Path to the shoot-flux ControllerConfiguration file.")
}

// Complete implements controllercmd.Completer.
func (o *ConfigOptions) Complete() error {
	var err error
	if o.ConfigLocation == "" {
		o.config, err = loader.Defaults()
	} else {
		o.config, err = loader.LoadFromFile(o.ConfigLocation)
	}
	if err != nil {
		return fmt.Errorf("failed loading controller configuration: %w", err)
	}
	if errs := releases.Validate(o.config.Rollout.Releases, manifests.SupportedVersions(), time.Now(), field.NewPath("rollout", "releases")); len(errs) > 0 {
		return fmt.Errorf("failed loading controller configuration: %w", errs.ToAggregate())
	}
	o.lifecycle = releases.New(o.config.Rollout.Releases, manifests.SupportedVersions())
	// Read on every reconcile; a file that is missing or broken from the start stops the start.
	if f := o.config.ImagePullSecretFile; f != "" {
		if _, err := loader.LoadImagePullSecret(f); err != nil {
			return fmt.Errorf("failed loading controller configuration: %w", err)
		}
	}
	return nil
}

// Completed returns the loaded configuration. Only call it after a successful Complete.
func (o *ConfigOptions) Completed() *config.ControllerConfiguration {
	return o.config
}

// Lifecycle returns the operator's lifecycle of the embedded releases, the one the controller and
// the metrics share. Only call it after a successful Complete.
func (o *ConfigOptions) Lifecycle() *releases.Lifecycle {
	return o.lifecycle
}

// GardenOptions hold the access to the garden cluster.
type GardenOptions struct {
	// Kubeconfig is the path of the garden kubeconfig.
	Kubeconfig string
	// ClusterIdentity is the garden's cluster identity.
	ClusterIdentity string

	config *rest.Config
}

// AddFlags implements controllercmd.Flagger.
func (o *GardenOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "garden-kubeconfig", os.Getenv(EnvGardenKubeconfig), "Path to the kubeconfig of the garden cluster (default: $"+EnvGardenKubeconfig+", injected by gardenlet).")
	fs.StringVar(&o.ClusterIdentity, "garden-cluster-identity", "", "Cluster identity of the garden (the chart passes gardener.garden.clusterIdentity, which gardenlet injects), delivered in the shoots' ConfigMap shoot-info.")
}

// Complete implements controllercmd.Completer.
func (o *GardenOptions) Complete() error {
	if o.Kubeconfig == "" {
		return fmt.Errorf("--garden-kubeconfig or $%s is required: the extension reads project ConfigMaps and stores deploy keys in the garden", EnvGardenKubeconfig)
	}
	cfg, err := RESTConfigFromKubeconfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.config = cfg
	return nil
}

// Completed returns the garden REST config. Only call it after a successful Complete.
func (o *GardenOptions) Completed() *rest.Config {
	return o.config
}

// RESTConfigFromKubeconfig builds a REST config from a kubeconfig file. gardenlet's injected
// kubeconfig points at a token file that it renews; the config keeps the file reference so that
// client-go re-reads the token instead of caching an expiring copy.
func RESTConfigFromKubeconfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("failed loading kubeconfig %q: %w", path, err)
	}
	return cfg, nil
}

const (
	// DefaultClientQPS is the rate of requests per second the extension's clients allow
	// themselves to the seed and the garden, per resource type: gardener-resource-manager's default
	// for its clients. client-go's default of 5 would let a seed with hundreds of shoots take
	// minutes for work its API server serves in seconds.
	DefaultClientQPS float32 = 100
	// DefaultClientBurst is the number of requests above the rate a client may send at once.
	DefaultClientBurst = 130
)

// ClientOptions set the client-side rate limits of the extension's clients to the seed and the
// garden. A kubeconfig cannot carry them.
type ClientOptions struct {
	// QPS is the sustained rate of requests per second and resource type.
	QPS float32
	// Burst is the number of requests above QPS that may be sent at once.
	Burst int
}

// NewClientOptions returns ClientOptions with the defaults.
func NewClientOptions() *ClientOptions {
	return &ClientOptions{QPS: DefaultClientQPS, Burst: DefaultClientBurst}
}

// AddFlags implements controllercmd.Flagger.
func (o *ClientOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&o.QPS, "client-qps", o.QPS, "Requests per second (per resource type) the extension's clients send to the seed and the garden at most.")
	fs.IntVar(&o.Burst, "client-burst", o.Burst, "Requests the extension's clients may send at once above --client-qps.")
}

// Complete implements controllercmd.Completer.
func (o *ClientOptions) Complete() error {
	if o.QPS <= 0 {
		return fmt.Errorf("--client-qps must be positive, got %v", o.QPS)
	}
	if o.Burst < 1 {
		return fmt.Errorf("--client-burst must be at least 1, got %d", o.Burst)
	}
	return nil
}

// Apply sets the rate limits in cfg, replacing client-go's defaults, and returns cfg. Only call it
// after a successful Complete.
func (o *ClientOptions) Apply(cfg *rest.Config) *rest.Config {
	cfg.QPS, cfg.Burst, cfg.RateLimiter = o.QPS, o.Burst, nil
	return cfg
}

// ControllerSwitches are the controllers that can be switched on and off.
func ControllerSwitches() *controllercmd.SwitchOptions {
	return controllercmd.NewSwitchOptions(
		controllercmd.Switch(extension.ControllerName, extension.AddToManager),
		controllercmd.Switch(healthcheck.ControllerName, healthcheck.AddToManager),
		controllercmd.Switch(extensionsheartbeatcontroller.ControllerName, extensionsheartbeatcontroller.AddToManager),
	)
}

// ProfilingOptions expose Go's profiling endpoints, e.g. to find out what fills the memory of an
// extension that serves many shoots.
type ProfilingOptions struct {
	// PprofBindAddress is where /debug/pprof is served; empty serves nothing.
	PprofBindAddress string
	// AllowNonLoopback serves them on an address other than a loopback one.
	AllowNonLoopback bool

	// warning is what Complete found worth a warning in the log.
	warning string
}

// AddFlags implements controllercmd.Flagger.
func (o *ProfilingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address to serve Go's /debug/pprof endpoints on, e.g. 127.0.0.1:6060; empty (default) serves nothing. The endpoints are not authenticated: only loopback addresses are accepted unless --pprof-allow-non-loopback is set.")
	fs.BoolVar(&o.AllowNonLoopback, "pprof-allow-non-loopback", o.AllowNonLoopback, "Serve the /debug/pprof endpoints on an address other than a loopback one, e.g. :6060. Anybody who reaches the pod's network can then read the process's memory, deploy keys included.")
}

// Complete implements controllercmd.Completer. The endpoints are unauthenticated and a heap
// profile holds the process's memory, private keys included, so they are served on a loopback
// address only (reached with kubectl port-forward) unless the operator explicitly allows more.
func (o *ProfilingOptions) Complete() error {
	o.warning = ""
	if o.PprofBindAddress == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(o.PprofBindAddress)
	if err != nil {
		return fmt.Errorf("--pprof-bind-address: %w", err)
	}
	if isLoopback(host) {
		return nil
	}
	if !o.AllowNonLoopback {
		return fmt.Errorf("--pprof-bind-address %q is not a loopback address: the endpoints are unauthenticated and expose the process's memory, deploy keys included; use 127.0.0.1:<port> and kubectl port-forward, or set --pprof-allow-non-loopback", o.PprofBindAddress)
	}
	o.warning = fmt.Sprintf("The unauthenticated /debug/pprof endpoints are served on %s, which is not a loopback address: anybody who reaches the pod can read the process's memory, deploy keys included", o.PprofBindAddress)
	return nil
}

// Warning returns what the completed options found worth a warning, empty if nothing.
func (o *ProfilingOptions) Warning() string {
	return o.warning
}

// isLoopback tells whether a bind address's host only listens on the loopback interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Apply sets the profiling address in the manager options.
func (o *ProfilingOptions) Apply(mgrOpts *manager.Options) {
	mgrOpts.PprofBindAddress = o.PprofBindAddress
}
