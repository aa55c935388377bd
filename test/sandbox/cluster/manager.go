// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// NewManager returns a manager for controllers the sandbox runs against a cluster's API server in
// its own process (the kubelet and kube-controller-manager stand-ins of a shoot): the client-go
// scheme, no metrics or probe listeners, and controller names that every shoot registers again.
func NewManager(log logr.Logger, c *Cluster) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed building scheme: %w", err)
	}
	mgr, err := manager.New(c.Config, manager.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(GracefulShutdownTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("failed creating manager for shoot %s: %w", c.Name, err)
	}
	return mgr, nil
}
