// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package gardener runs Gardener's own components in the sandbox's process with Gardener's code:
// gardener-apiserver, gardener-controller-manager's and gardenlet's controllers and
// gardener-resource-manager. Stand-ins for what Gardener does not provide are in kubelet, network
// and kubecontrollermanager.
package gardener

import (
	"context"
	"fmt"

	"github.com/gardener/gardener/pkg/api/indexer"
	controllermanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/controllermanager/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/controllermanager/controller/controllerregistration"
	"github.com/go-logr/logr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// concurrentSyncs is the number of workers of each of gardener's controllers that install the
// extension; there is one seed and one extension to install.
const concurrentSyncs = 2

// ManagerOptions are the options of the managers of gardener's controllers in this process: no
// listeners, and controller names that may be registered again after a restart.
func ManagerOptions(log logr.Logger) manager.Options {
	return manager.Options{
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(cluster.GracefulShutdownTimeout),
	}
}

// StartControllerManager runs gardener-controller-manager's ControllerRegistration controllers
// against the garden (pkg/controllermanager/controller/controllerregistration): the seed and shoot
// ControllerInstallation reconcilers, which create and delete the installations the seed needs,
// the Seed and ControllerRegistration finalizers and the extension ClusterRole binder, with the
// field indexes gardener-controller-manager sets up for them.
func StartControllerManager(ctx context.Context, log logr.Logger, garden *cluster.Cluster) (*cluster.Runner, error) {
	opts := ManagerOptions(log)
	opts.Scheme = kubernetes.GardenScheme
	mgr, err := manager.New(garden.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("failed creating gardener-controller-manager: %w", err)
	}
	for _, add := range []func(context.Context, client.FieldIndexer) error{
		indexer.AddBackupBucketSeedName, indexer.AddBackupBucketShootRefName, indexer.AddBackupBucketShootRefNamespace,
		indexer.AddBackupEntrySeedName, indexer.AddBackupEntryShootRefName, indexer.AddBackupEntryShootRefNamespace,
		indexer.AddShootSeedName, indexer.AddShootStatusSeedName,
		indexer.AddControllerInstallationSeedRefName, indexer.AddControllerInstallationShootRefName,
		indexer.AddControllerInstallationShootRefNamespace, indexer.AddControllerInstallationRegistrationRefName,
	} {
		if err := add(ctx, mgr.GetFieldIndexer()); err != nil {
			return nil, fmt.Errorf("failed adding a field index of gardener-controller-manager: %w", err)
		}
	}
	if err := controllerregistration.AddToManager(mgr, controllermanagerconfigv1alpha1.ControllerManagerConfiguration{
		Controllers: controllermanagerconfigv1alpha1.ControllerManagerControllerConfiguration{
			ControllerRegistration: &controllermanagerconfigv1alpha1.ControllerRegistrationControllerConfiguration{
				ConcurrentSyncs: ptr.To(concurrentSyncs),
			},
		},
	}); err != nil {
		return nil, fmt.Errorf("failed adding gardener-controller-manager's ControllerRegistration controllers: %w", err)
	}
	return cluster.StartManager(ctx, opts.Logger, "gardener-controller-manager", mgr)
}
