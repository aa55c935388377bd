// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	shootmetrics "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics/shoots"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// The extension in this process, as its binary runs it, or as deployed (Options.Deployed).

// WriteExtensionConfig writes the sandbox's extension configuration as a ControllerConfiguration
// file for the binary's --config.
func (s *Sandbox) WriteExtensionConfig(path string) error {
	return WriteControllerConfiguration(path, &s.config)
}

// WriteControllerConfiguration writes cfg as a ControllerConfiguration file for the binary's
// --config.
func WriteControllerConfiguration(path string, cfg *config.ControllerConfiguration) error {
	versioned, err := loader.Versioned(cfg)
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(versioned)
	if err != nil {
		return fmt.Errorf("failed encoding the extension configuration: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed writing the extension configuration: %w", err)
	}
	return nil
}

// ExtensionConfig returns the component configuration the in-process extension runs with.
// BootstrapFinalizersTimeout is the extension's timeouts.bootstrapFinalizers in the sandbox: most
// shoots run no controllers (ShootSpec.RunControllers), so a scenario that plays one that stopped
// need not wait the default minute. A scenario whose running controllers must finalize on a loaded
// machine sets a longer one (ExtensionSettings.Config).
var BootstrapFinalizersTimeout = 5 * time.Second

func (s *Sandbox) ExtensionConfig() config.ControllerConfiguration {
	return *s.config.DeepCopy()
}

// StartExtension starts the extension controller in this process, like the extension binary
// does (cmd/gardener-extension-shoot-flux/app), or with Options.Deployed as deployed, and waits
// until its /readyz answers OK. It fails if it is already running.
func (s *Sandbox) StartExtension(ctx context.Context) error {
	return s.StartExtensionWith(ctx, ExtensionSettings{})
}

// ExtensionSettings override the sandbox's extension settings for one StartExtensionWith, e.g. to
// run a scenario with shoot-scoped deploy keys or more workers.
type ExtensionSettings struct {
	// Config replaces the component configuration; nil keeps the sandbox's.
	Config *config.ControllerConfiguration
	// MaxConcurrentReconciles replaces Options.MaxConcurrentReconciles if not zero.
	MaxConcurrentReconciles int
	// GardenAddress, if set, is the "host:port" the extension reaches the garden API server at
	// instead of the API server's own, e.g. a network.Proxy's Addr, so that a scenario can cut the
	// extension off from the garden.
	GardenAddress string
}

// StartExtensionWith starts the extension like StartExtension with some settings replaced. The
// replacements only hold until the extension is stopped: StartExtension uses the sandbox's
// settings again.
func (s *Sandbox) StartExtensionWith(ctx context.Context, settings ExtensionSettings) error {
	cfg := s.config.DeepCopy()
	if settings.Config != nil {
		cfg = settings.Config.DeepCopy()
	}
	workers := s.opts.MaxConcurrentReconciles
	if settings.MaxConcurrentReconciles != 0 {
		workers = settings.MaxConcurrentReconciles
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extension != nil || s.deployed != nil {
		return fmt.Errorf("the extension is already running")
	}
	if s.opts.Deployed {
		d, err := s.startDeployed(ctx, cfg, workers, settings.GardenAddress)
		if err != nil {
			return err
		}
		s.deployed, s.metricsAddr = d, d.metricsAddr
		return nil
	}

	healthPort, err := kubelet.FreePort()
	if err != nil {
		return err
	}
	healthAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
	metricsPort, err := kubelet.FreePort()
	if err != nil {
		return err
	}
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort))
	// The binary's manager starts with client-go's global scheme, to which SetUpManager adds the
	// extension's kinds; a scheme of its own leaves the global one of this process alone.
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("failed building extension scheme: %w", err)
	}
	log := s.log.WithName("extension")
	mgrOpts := manager.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: healthAddr,
		// A restarted extension registers its controller name again in this process.
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(cluster.GracefulShutdownTimeout),
	}
	// The cache is set up as in the extension binary.
	fluxcmd.ApplySeedCacheOptions(&mgrOpts)
	mgr, err := manager.New(s.Seed.Config, mgrOpts)
	if err != nil {
		return fmt.Errorf("failed creating extension manager: %w", err)
	}
	garden, err := fluxcmd.SetUpManager(mgr, s.gardenConfig(settings.GardenAddress), cfg.Limits)
	if err != nil {
		return err
	}
	// The controller's predicates keep the context they are added with for the manager's lifetime.
	r := cluster.NewRunner(ctx, "extension")
	if err := extension.AddToManagerWithOptions(r.Context(), mgr, extension.AddOptions{
		ControllerOptions:         controller.Options{MaxConcurrentReconciles: workers},
		IgnoreOperationAnnotation: s.opts.IgnoreOperationAnnotation,
		Config:                    *cfg,
		GardenCluster:             garden,
		Resync:                    extension.DefaultAddOptions.Resync,
	}); err != nil {
		r.Cancel()
		return fmt.Errorf("failed adding extension controller: %w", err)
	}
	if s.opts.HealthCheck {
		opts := healthcheck.DefaultAddOptions
		opts.HealthCheckConfig.SyncPeriod = metav1.Duration{Duration: HealthCheckSyncPeriod}
		if err := healthcheck.AddToManagerWithOptions(mgr, opts); err != nil {
			r.Cancel()
			return fmt.Errorf("failed adding health check controller: %w", err)
		}
	}
	// As in the extension binary; this process's registry holds the counters of every start.
	if err := shootmetrics.AddToManager(mgr, "", releases.New(cfg.Rollout.Releases, manifests.SupportedVersions())); err != nil {
		r.Cancel()
		return fmt.Errorf("failed adding the extension's metrics: %w", err)
	}
	if err := r.Start(ctx, log, mgr); err != nil {
		return err
	}
	// Ready as the deployed extension's kubelet would see it.
	if err := kubelet.WaitReady(ctx, healthAddr, r.Exited); err != nil {
		return errors.Join(fmt.Errorf("the extension: %w", err), r.Stop())
	}
	s.extension, s.extCache, s.metricsAddr = r, mgr.GetClient(), metricsAddr
	return nil
}

// gardenConfig is the extension's REST config of the garden: the garden API server's admin config,
// at gardenAddress if set.
func (s *Sandbox) gardenConfig(gardenAddress string) *rest.Config {
	if gardenAddress == "" {
		return s.Garden.Config
	}
	cfg := rest.CopyConfig(s.Garden.Config)
	cfg.Host = "https://" + gardenAddress
	return cfg
}

// StopExtension stops the in-process extension, cancelling running reconciles as a crash or a
// rollout would. It is a no-op if the extension is not running.
func (s *Sandbox) StopExtension() error {
	s.mu.Lock()
	r, d := s.extension, s.deployed
	s.extension, s.extCache, s.deployed, s.metricsAddr = nil, nil, nil, ""
	s.mu.Unlock()
	return errors.Join(r.Stop(), d.stop())
}

// ExtensionRunning tells whether the in-process extension runs.
func (s *Sandbox) ExtensionRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extension != nil || s.deployed != nil
}

// ExtensionMetricsURL is the URL of the running extension's /metrics: the deployed binary's metrics
// port (the chart's metrics.port), or the in-process manager's, whose registry is the one of this
// process. It fails if the extension does not run.
func (s *Sandbox) ExtensionMetricsURL() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metricsAddr == "" {
		return "", errors.New("the extension does not run")
	}
	return "http://" + s.metricsAddr + "/metrics", nil
}

// extensionCache returns the cached client of the running in-process extension, or nil.
func (s *Sandbox) extensionCache() client.Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extCache
}
