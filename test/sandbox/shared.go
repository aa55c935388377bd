// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubecontrollermanager"
)

var (
	// SharedResourceManagerConcurrentSyncs is the number of workers of the resource manager of
	// the shared control plane, which serves many shoots.
	SharedResourceManagerConcurrentSyncs = 10
	// SharedResourceManagerSyncPeriod is how often the resource manager of the shared control
	// plane re-applies a ManagedResource. Shoots sharing it overwrite each other's objects, so a
	// periodic re-apply corrects nothing and would only load the machine.
	SharedResourceManagerSyncPeriod = time.Hour
	// SharedResourceManagerHealthSyncPeriod is how often the resource manager of the shared
	// control plane checks the health of a ManagedResource's objects again without an event. The
	// Deployments of light shoots never become ready (no kubelet stand-in runs there), and the
	// health controller writes an unhealthy status on every check: with hundreds of light shoots,
	// gardener's minute would be a steady stream of status writes to the seed.
	SharedResourceManagerHealthSyncPeriod = 10 * time.Minute
)

// sharedControlPlane is the shoot API server, controller manager and gardener-resource-manager
// of all shoots created with ShootSpec.SharedControlPlane. The resource manager applies the
// ManagedResources of all their seed namespaces into the one API server, so objects with equal
// names overwrite each other there.
type sharedControlPlane struct {
	shoot                 *cluster.Cluster
	kubeControllerManager *cluster.Runner
	resourceManager       *cluster.Runner

	mu         sync.RWMutex
	namespaces map[string]bool
}

// sharedControlPlane returns the shared control plane, starting it on first use.
func (s *Sandbox) sharedControlPlane(ctx context.Context) (*sharedControlPlane, error) {
	// Starting takes seconds; concurrent CreateShoot calls wait for one start.
	s.sharedStart.Lock()
	defer s.sharedStart.Unlock()
	s.mu.Lock()
	shared := s.shared
	s.mu.Unlock()
	if shared != nil {
		return shared, nil
	}

	log := s.log.WithValues("shoot", "shared")
	log.Info("Starting shared shoot API server")
	shoot, err := cluster.Start("shared-shoot", kubernetes.ShootScheme, nil, cluster.Options{})
	if err != nil {
		return nil, err
	}
	shared = &sharedControlPlane{shoot: shoot, namespaces: map[string]bool{}}
	if shared.kubeControllerManager, err = kubecontrollermanager.Start(ctx, log.WithName("kube-controller-manager"), shoot); err != nil {
		return nil, errors.Join(err, shared.stop())
	}
	rmOpts := gardener.ResourceManagerOptions{
		Name:             "shared",
		Accept:           shared.has,
		ConcurrentSyncs:  SharedResourceManagerConcurrentSyncs,
		SyncPeriod:       SharedResourceManagerSyncPeriod,
		HealthSyncPeriod: SharedResourceManagerHealthSyncPeriod,
		DeletionRequeue:  ResourceManagerDeletionRequeue,
	}
	if s.opts.MarkSharedApplied {
		shared.resourceManager, err = gardener.StartAppliedMarker(ctx, log.WithName("applied-marker"), s.Seed.Config, rmOpts)
	} else {
		shared.resourceManager, err = gardener.StartResourceManager(ctx, log.WithName("resource-manager"), s.Seed.Config, shoot, rmOpts)
	}
	if err != nil {
		return nil, errors.Join(err, shared.stop())
	}
	s.mu.Lock()
	s.shared = shared
	s.mu.Unlock()
	return shared, nil
}

// add makes the resource manager apply the ManagedResources of a seed namespace. It must be
// called before the first ManagedResource is written there: events of other namespaces are
// dropped, not remembered.
func (p *sharedControlPlane) add(namespace string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.namespaces[namespace] = true
}

func (p *sharedControlPlane) remove(namespace string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.namespaces, namespace)
}

func (p *sharedControlPlane) has(namespace string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.namespaces[namespace]
}

func (p *sharedControlPlane) stop() error {
	if p == nil {
		return nil
	}
	errs := []error{p.resourceManager.Stop(), p.kubeControllerManager.Stop()}
	if p.shoot != nil {
		errs = append(errs, p.shoot.Stop())
	}
	return errors.Join(errs...)
}
