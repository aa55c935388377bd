// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardenerhealthz "github.com/gardener/gardener/pkg/healthz"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxinstall "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

// SetUpManager adds what the extension needs besides its controllers to a seed manager: its kinds,
// the garden access (its cache bounded by limits) and the health checks; the binary and the sandbox
// share it. Neither start nor readiness depend on the garden, which a restart would not bring
// back: until its cache synced, garden requests fail at once with gardencluster.ErrNotReachable.
func SetUpManager(mgr manager.Manager, garden *rest.Config, limits config.Limits) (*gardencluster.Cluster, error) {
	if err := extensionscontroller.AddToScheme(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("could not update manager scheme: %w", err)
	}
	if err := fluxinstall.AddToScheme(mgr.GetScheme()); err != nil {
		return nil, fmt.Errorf("could not update manager scheme: %w", err)
	}
	// The shoots' monitoring objects (pkg/component/monitoring).
	for _, add := range []func(*runtime.Scheme) error{monitoringv1.AddToScheme, monitoringv1alpha1.AddToScheme} {
		if err := add(mgr.GetScheme()); err != nil {
			return nil, fmt.Errorf("could not update manager scheme: %w", err)
		}
	}

	gardenCluster, err := gardencluster.New(garden, mgr.GetLogger().WithName("garden"), int(limits.ProjectConfigMapMaxBytes))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(gardenCluster); err != nil {
		return nil, fmt.Errorf("could not add garden cluster to manager: %w", err)
	}

	if err := mgr.AddReadyzCheck("informer-sync", gardenerhealthz.NewCacheSyncHealthz(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("could not add ready check for informers: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("could not add health check to manager: %w", err)
	}
	return gardenCluster, nil
}
