// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"fmt"
	"time"

	"github.com/gardener/gardener/pkg/api/indexer"
	gardenletconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/gardenlet/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	gardenletcontrollerinstallation "github.com/gardener/gardener/pkg/gardenlet/controller/controllerinstallation"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// gardenClusterIdentity is the garden's cluster identity that gardenlet hands to charts.
const gardenClusterIdentity = "garden"

// GardenletOptions say which seed gardenlet serves, and how.
type GardenletOptions struct {
	// Garden and Seed are the API servers gardenlet connects.
	Garden, Seed *cluster.Cluster
	// SeedName is the name of the seed in the garden.
	SeedName string
	// GardenAccessNamespace is the seed's namespace in the garden, where the token requestor
	// creates the ServiceAccounts of garden access Secrets.
	GardenAccessNamespace string
	// GardenClusterAddress is gardenlet's gardenClientConnection.gardenClusterAddress, the garden
	// address it hands extensions; empty for the garden API server's own.
	GardenClusterAddress string
	// Version is the gardener version gardenlet reports, which charts get.
	Version string
	// CareSyncPeriod is how often the care controller checks a ControllerInstallation again
	// besides the ManagedResource's condition changes.
	CareSyncPeriod time.Duration
}

// StartGardenlet runs gardenlet's ControllerInstallation controllers for the seed
// (pkg/gardenlet/controller/controllerinstallation: the main reconciler, which pulls and renders
// the chart into a ManagedResource, the care and the required reconcilers) and its token requestor
// for garden access Secrets (pkg/controller/tokenrequestor), as gardenlet runs them: a manager of
// the seed with the garden as a second cluster.
func StartGardenlet(ctx context.Context, log logr.Logger, gardenletOpts GardenletOptions) (*cluster.Runner, error) {
	opts := ManagerOptions(log)
	opts.Scheme = kubernetes.SeedScheme
	// The token requestor watches Secrets, of which the seed holds many of the shoots'
	// ManagedResources: gardenlet's cache is restricted to those it handles, and its own reads
	// of Secrets go to the API server.
	opts.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{resourcesv1alpha1.ResourceManagerPurpose: resourcesv1alpha1.LabelPurposeTokenRequest})},
	}}
	opts.Client = client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}}
	mgr, err := manager.New(gardenletOpts.Seed.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("failed creating gardenlet: %w", err)
	}
	garden, err := ctrlcluster.New(gardenletOpts.Garden.Config, func(o *ctrlcluster.Options) {
		o.Scheme = kubernetes.GardenScheme
		o.Logger = opts.Logger
	})
	if err != nil {
		return nil, fmt.Errorf("failed creating gardenlet's garden cluster: %w", err)
	}
	// The field indexes of gardenlet's garden cache that its ControllerInstallation controllers
	// list by (gardenlet's addAllFieldIndexesToGardenClient).
	for _, add := range []func(context.Context, client.FieldIndexer) error{
		indexer.AddControllerInstallationRegistrationRefName, indexer.AddControllerInstallationSeedRefName,
	} {
		if err := add(ctx, garden.GetFieldIndexer()); err != nil {
			return nil, fmt.Errorf("failed adding a field index of gardenlet: %w", err)
		}
	}
	if err := mgr.Add(garden); err != nil {
		return nil, fmt.Errorf("failed adding the garden cluster to gardenlet: %w", err)
	}
	seedClientSet, err := kubernetes.NewWithConfig(
		kubernetes.WithRESTConfig(gardenletOpts.Seed.Config),
		kubernetes.WithRuntimeAPIReader(mgr.GetAPIReader()),
		kubernetes.WithRuntimeClient(mgr.GetClient()),
		kubernetes.WithRuntimeCache(mgr.GetCache()),
	)
	if err != nil {
		return nil, fmt.Errorf("failed creating gardenlet's seed client set: %w", err)
	}
	cfg := gardenletconfigv1alpha1.GardenletConfiguration{
		GardenClientConnection: &gardenletconfigv1alpha1.GardenClientConnection{},
		Controllers: &gardenletconfigv1alpha1.GardenletControllerConfiguration{
			ControllerInstallation: &gardenletconfigv1alpha1.ControllerInstallationControllerConfiguration{ConcurrentSyncs: ptr.To(concurrentSyncs)},
			ControllerInstallationCare: &gardenletconfigv1alpha1.ControllerInstallationCareControllerConfiguration{
				ConcurrentSyncs: ptr.To(concurrentSyncs),
				SyncPeriod:      &metav1.Duration{Duration: gardenletOpts.CareSyncPeriod},
			},
			ControllerInstallationRequired: &gardenletconfigv1alpha1.ControllerInstallationRequiredControllerConfiguration{ConcurrentSyncs: ptr.To(concurrentSyncs)},
		},
	}
	if gardenletOpts.GardenClusterAddress != "" {
		cfg.GardenClientConnection.GardenClusterAddress = ptr.To(gardenletOpts.GardenClusterAddress)
	}
	// The controllers' predicates keep the context they are added with for the manager's lifetime.
	r := cluster.NewRunner(ctx, "gardenlet")
	if err := gardenletcontrollerinstallation.AddToManager(r.Context(), mgr, garden, mgr, seedClientSet, cfg,
		&gardencorev1beta1.Gardener{Version: gardenletOpts.Version}, gardenClusterIdentity, false, nil, gardenletOpts.SeedName, v1beta1constants.GardenNamespace); err != nil {
		r.Cancel()
		return nil, fmt.Errorf("failed adding gardenlet's ControllerInstallation controllers: %w", err)
	}
	if err := (&tokenrequestor.Reconciler{
		ConcurrentSyncs: concurrentSyncs,
		Class:           ptr.To(resourcesv1alpha1.ResourceManagerClassGarden),
		TargetNamespace: gardenletOpts.GardenAccessNamespace,
	}).AddToManager(mgr, mgr, garden); err != nil {
		r.Cancel()
		return nil, fmt.Errorf("failed adding gardenlet's token requestor: %w", err)
	}
	if err := r.Start(ctx, opts.Logger, mgr); err != nil {
		return nil, err
	}
	return r, nil
}
