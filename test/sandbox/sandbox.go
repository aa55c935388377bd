// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package sandbox runs the extension against real API servers without a Gardener installation: a
// garden, a seed and per shoot an API server with its resource manager, shoots set up as gardenlet
// sets them up. It is the harness; what runs in it lives in packages by role (cluster, gardener,
// kubelet, network, kubecontrollermanager), which callers import for their names: this package
// does not re-export them. docs/development/sandbox.md describes both.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	gardenerextension "github.com/gardener/gardener/pkg/component/extensions/extension"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

var (
	// PollInterval is how often helpers re-read objects while waiting.
	PollInterval = 200 * time.Millisecond
	// WatchRenewal is how long a wait watches the Extension before it starts a new watch from the
	// last version it saw.
	WatchRenewal = 20 * time.Second

	// ResourceManagerConcurrentSyncs is the number of ManagedResource workers per shoot.
	ResourceManagerConcurrentSyncs = 2
	// ResourceManagerSyncPeriod is how often gardener-resource-manager re-applies a ManagedResource.
	ResourceManagerSyncPeriod = time.Minute
	// ResourceManagerDeletionRequeue is how soon gardener-resource-manager checks a pending deletion
	// again; gardener's default of 5s would dominate the time of deletion scenarios.
	ResourceManagerDeletionRequeue = time.Second
	// ResourceManagerHealthSyncPeriod is how often a shoot's gardener-resource-manager checks the
	// health of a ManagedResource's objects again without an event, gardener's default. A change of
	// an object's health is an event, so scenarios need no shorter period.
	ResourceManagerHealthSyncPeriod = time.Minute
	// ResourceManagerGarbageCollectionPeriod is how often the seed's gardener-resource-manager
	// deletes the garbage-collectable Secrets and ConfigMaps that nothing references. Gardener's
	// 12 hours would never come within a scenario.
	ResourceManagerGarbageCollectionPeriod = 10 * time.Second
	// ResourceManagerGarbageCollectionMinimumAge is how old an unreferenced garbage-collectable
	// Secret must be before the garbage collector deletes it. The age protects a Secret between its
	// write and the write of the ManagedResource that references it, which takes milliseconds but
	// may take seconds on a loaded machine; gardener's 10 minutes would make scenarios wait that
	// long for a collection.
	ResourceManagerGarbageCollectionMinimumAge = 30 * time.Second
	// HealthCheckSyncPeriod is how often the in-process health check controller checks a shoot; the
	// binary's minute would make scenarios wait long for a condition.
	HealthCheckSyncPeriod = 5 * time.Second
	// NudgeInterval is how long a new Extension may wait for a deployed extension to pick it up
	// before it is touched again (see ShootHandle.CreateExtension).
	NudgeInterval = 2 * time.Second
	// UnresponsiveNudgeWindow is how long a new Extension of an unresponsive light shoot
	// (ShootSpec.Unresponsive) is nudged: several NudgeIntervals, far longer than the cache lags.
	UnresponsiveNudgeWindow = 5 * NudgeInterval
)

// GardenNamespace is the seed namespace of gardenlet and the extensions' heartbeats.
const GardenNamespace = v1beta1constants.GardenNamespace

// HostPolicy lets the extension scan the SSH host keys of the sandbox's git servers
// (test/gitserver), which listen on loopback ports above 1024; the default policy refuses both.
func HostPolicy() config.HostPolicy {
	return config.HostPolicy{AllowedNetworks: []string{"127.0.0.0/8", "::1/128"}, AllowedPorts: []string{"1024-65535"}}
}

// Options configure a sandbox.
type Options struct {
	// FluxControllers maps Flux controller images ("source-controller:v1.7.4", no registry) to
	// their binaries (hack/build-flux-controllers.sh); optional. Shoots with
	// ShootSpec.RunControllers run them. Only components of RunnableFluxControllers are accepted.
	FluxControllers map[string]string
	// KluctlControllers maps kluctl controller images, as "kluctl:<tag>" without registry (e.g.
	// "kluctl:v2.28.2"), to their binaries (hack/build-kluctl-controller.sh, ParseControllers);
	// optional. The shoots with ShootSpec.RunControllers run the delivered kluctl controller
	// Deployment of these images.
	KluctlControllers map[string]string
	// ExtensionConfig is the extension's component configuration; nil uses the defaults of
	// loader.Defaults with the sandbox's HostPolicy.
	ExtensionConfig *config.ControllerConfiguration
	// IgnoreOperationAnnotation is the extension's --ignore-operation-annotation. Gardener's
	// library then also ignores migrate, restore and Cluster changes, so the ShootHandle operations
	// other than UpdateProviderConfig and Delete need it false.
	IgnoreOperationAnnotation bool
	// MaxConcurrentReconciles of the extension controller; zero means 5.
	MaxConcurrentReconciles int
	// HealthCheck also runs the extension's health check controller, as the extension binary does.
	HealthCheck bool
	// WithoutExtension starts only the clusters and resource managers, e.g. to run the extension
	// binary against the sandbox.
	WithoutExtension bool
	// Log receives the logs of the sandbox's controllers.
	Log logr.Logger
	// MarkSharedApplied replaces the resource manager of the shared control plane (see
	// ShootSpec.SharedControlPlane) with a stand-in that reports every ManagedResource of a light
	// shoot as applied at once and applies nothing: to the extension it looks like every shoot
	// had a resource manager of its own with room to spare, so a benchmark measures the
	// extension rather than the one shared resource manager.
	MarkSharedApplied bool
	// Deployed runs the extension as deployed, installed the way a landscape installs it
	// (landscape.go): published with its chart, installed by gardener-controller-manager and
	// gardenlet, run by the seed's kubelet stand-in as a process on a read-only root with the chart's
	// identities (docs/development/sandbox.md). It needs root.
	Deployed bool
	// ExtensionBinary is the binary Deployed runs, built with BuildExtension beforehand (outside
	// the time bounds of the clusters); empty builds it when the sandbox starts.
	ExtensionBinary string
	// ExtensionLogPath is where the deployed extension logs; empty means a file in a temporary
	// directory that Stop removes.
	ExtensionLogPath string
	// AuditLogDir, if set, makes the garden and seed API servers write audit logs into this
	// directory (Cluster.AuditLogPath): every request with its user agent, and the bodies of
	// Extension writes.
	AuditLogDir string
}

// Sandbox is a garden, a seed, the shoots created with CreateShoot and, unless
// Options.WithoutExtension, the shoot-flux extension controller.
type Sandbox struct {
	// Garden is the garden cluster: project namespaces, the flux-config ConfigMaps, deploy keys.
	Garden *cluster.Cluster
	// Seed is the seed cluster with the Cluster, Extension and ManagedResource CRDs.
	Seed *cluster.Cluster

	opts   Options
	config config.ControllerConfiguration
	log    logr.Logger

	// seedResourceManager runs gardener-resource-manager's garbage collector for the seed.
	seedResourceManager *cluster.Runner

	mu        sync.Mutex
	extension *cluster.Runner
	deployed  *deployedExtension
	// metricsAddr is where the running extension serves /metrics.
	metricsAddr string
	// deployedEnv is set with Options.Deployed.
	deployedEnv *deployedEnv
	extCache    client.Reader
	// gardenObjects are the CloudProfile and Seed of every shoot.
	gardenObjects *GardenObjects
	shoots        []*ShootHandle
	shared        *sharedControlPlane

	sharedStart sync.Mutex
}

// Start starts the garden and seed API servers and, unless Options.WithoutExtension, the
// extension. On error everything started so far is stopped again.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	if err := cluster.RequireAssets(); err != nil {
		return nil, err
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 5
	}
	if err := kubelet.ValidateFluxControllers(opts.FluxControllers); err != nil {
		return nil, err
	}
	if err := kubelet.ValidateKluctlControllers(opts.KluctlControllers); err != nil {
		return nil, err
	}
	// gardenlet's Extension component polls every 5 s, which would dominate the sandbox's scenarios
	// of seconds; its rules stay gardenlet's.
	gardenerextension.DefaultInterval = PollInterval
	s := &Sandbox{opts: opts, log: opts.Log}
	if opts.ExtensionConfig != nil {
		s.config = *opts.ExtensionConfig
	} else {
		cfg, err := loader.Defaults()
		if err != nil {
			return nil, fmt.Errorf("failed loading default extension configuration: %w", err)
		}
		cfg.HostPolicy = HostPolicy()
		cfg.Timeouts.BootstrapFinalizers.Duration = BootstrapFinalizersTimeout
		s.config = *cfg
	}

	if err := s.start(ctx); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *Sandbox) start(ctx context.Context) error {
	seedCRDs := seedCRDPaths
	if s.opts.Deployed {
		seedCRDs = landscapeSeedCRDPaths
	}
	crds, err := seedCRDs()
	if err != nil {
		return err
	}
	if s.opts.Deployed {
		if err := s.prepareDeployed(ctx); err != nil {
			return err
		}
	}

	s.log.Info("Starting garden API server with gardener-apiserver")
	if s.Garden, err = gardener.StartGarden(gardener.GardenOptions{AuditDir: s.opts.AuditLogDir, APIServerLog: logWriter{s.log.WithName("gardener-apiserver")}}); err != nil {
		return err
	}
	if s.gardenObjects, err = CreateGardenObjects(ctx, s.Garden.Client); err != nil {
		return err
	}
	var registration []*unstructured.Unstructured
	if s.opts.Deployed {
		registration, err = s.publishExtension(ctx)
	} else {
		registration, err = exampleRegistration()
	}
	if err != nil {
		return err
	}
	if err := s.registerExtension(ctx, registration); err != nil {
		return err
	}
	s.log.Info("Starting seed API server")
	if s.Seed, err = cluster.Start("seed", kubernetes.SeedScheme, crds, cluster.Options{AuditDir: s.opts.AuditLogDir}); err != nil {
		return err
	}
	if err := s.Seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: GardenNamespace}}); err != nil {
		return fmt.Errorf("failed creating seed namespace %s: %w", GardenNamespace, err)
	}
	if s.seedResourceManager, err = gardener.StartSeedResourceManager(ctx, s.log.WithName("seed-garbage-collector"), s.Seed.Config,
		ResourceManagerGarbageCollectionPeriod, ResourceManagerGarbageCollectionMinimumAge); err != nil {
		return err
	}
	if s.opts.Deployed {
		s.log.Info("Starting the landscape's controllers that install the extension")
		if err := s.startLandscape(ctx); err != nil {
			return err
		}
	}

	if s.opts.WithoutExtension {
		return nil
	}
	return s.StartExtension(ctx)
}

// Deployed tells whether the extension runs as deployed (Options.Deployed).
func (s *Sandbox) Deployed() bool {
	return s.opts.Deployed
}

// Stop stops the extension, all shoots and the garden and seed API servers.
func (s *Sandbox) Stop() error {
	errs := []error{s.StopExtension()}
	s.mu.Lock()
	shoots := s.shoots
	s.shoots = nil
	s.mu.Unlock()
	for _, h := range shoots {
		errs = append(errs, h.stopControlPlane())
	}
	s.mu.Lock()
	shared := s.shared
	s.shared = nil
	s.mu.Unlock()
	errs = append(errs, shared.stop(), s.seedResourceManager.Stop())
	if s.deployedEnv != nil {
		errs = append(errs, s.deployedEnv.landscape.stop())
	}
	for _, c := range []*cluster.Cluster{s.Seed, s.Garden} {
		if c != nil {
			errs = append(errs, c.Stop())
		}
	}
	if s.deployedEnv != nil {
		errs = append(errs, os.RemoveAll(s.deployedEnv.dir))
	}
	return errors.Join(errs...)
}

// WriteKubeconfigs writes garden.kubeconfig, seed.kubeconfig and one <seed namespace>.kubeconfig
// per running shoot with its own control plane into dir; shoot.kubeconfig is the one of the first
// shoot, shared-shoot.kubeconfig the one of the shared control plane if it runs.
func (s *Sandbox) WriteKubeconfigs(dir string) error {
	if err := s.Garden.WriteKubeconfig(filepath.Join(dir, "garden.kubeconfig")); err != nil {
		return err
	}
	if err := s.Seed.WriteKubeconfig(filepath.Join(dir, "seed.kubeconfig")); err != nil {
		return err
	}
	s.mu.Lock()
	shoots := append([]*ShootHandle(nil), s.shoots...)
	shared := s.shared
	s.mu.Unlock()
	if shared != nil {
		if err := shared.shoot.WriteKubeconfig(filepath.Join(dir, "shared-shoot.kubeconfig")); err != nil {
			return err
		}
	}
	sort.SliceStable(shoots, func(i, j int) bool { return shoots[i].created.Before(shoots[j].created) })
	for i, h := range shoots {
		if h.shared == nil {
			if err := h.Shoot.WriteKubeconfig(filepath.Join(dir, h.SeedNamespace+".kubeconfig")); err != nil {
				return err
			}
		}
		if i == 0 {
			if err := h.Shoot.WriteKubeconfig(filepath.Join(dir, "shoot.kubeconfig")); err != nil {
				return err
			}
		}
	}
	return nil
}

// logWriter writes each line it is given as a message of log at verbosity 1: a component's own
// log lines, which the sandbox's log shows only when asked for detail.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.log.V(1).Info(line)
		}
	}
	return len(p), nil
}
