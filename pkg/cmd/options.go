// Package cmd holds the command line options of the shoot-flux extension controller.
package cmd

import (
	"fmt"
	"os"

	controllercmd "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	extensionsheartbeatcontroller "github.com/gardener/gardener/extensions/pkg/controller/heartbeat"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
)

// EnvGardenKubeconfig is set by gardenlet when the ControllerDeployment asks for
// injectGardenKubeconfig.
const EnvGardenKubeconfig = "GARDEN_KUBECONFIG"

// ConfigOptions load the component configuration file.
type ConfigOptions struct {
	// ConfigLocation is the path of the ControllerConfiguration file; empty uses the defaults.
	ConfigLocation string

	config *config.ControllerConfiguration
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
	return nil
}

// Completed returns the loaded configuration. Only call it after a successful Complete.
func (o *ConfigOptions) Completed() *config.ControllerConfiguration {
	return o.config
}

// GardenOptions hold the access to the garden cluster.
type GardenOptions struct {
	// Kubeconfig is the path of the garden kubeconfig.
	Kubeconfig string

	config *rest.Config
}

// AddFlags implements controllercmd.Flagger.
func (o *GardenOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "garden-kubeconfig", os.Getenv(EnvGardenKubeconfig), "Path to the kubeconfig of the garden cluster (default: $"+EnvGardenKubeconfig+", injected by gardenlet).")
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
	return WithClientRateLimits(cfg), nil
}

var (
	// ClientQPS is the rate of requests per second the extension's clients allow themselves to
	// the seed and the garden, per resource type.
	ClientQPS float32 = 100
	// ClientBurst is the number of requests above ClientQPS a client may send at once.
	ClientBurst = 130
)

// WithClientRateLimits sets ClientQPS and ClientBurst in cfg unless it has limits already. A
// kubeconfig cannot set them, and client-go's default of 5 requests per second (per resource
// type) would let a seed with hundreds of shoots take minutes for work its API server serves in
// seconds. The values are gardener-resource-manager's defaults for its clients.
func WithClientRateLimits(cfg *rest.Config) *rest.Config {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = ClientQPS
	}
	if cfg.Burst == 0 {
		cfg.Burst = ClientBurst
	}
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
