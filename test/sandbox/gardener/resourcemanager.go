// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"fmt"
	"time"

	resourcemanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcemanagerclient "github.com/gardener/gardener/pkg/resourcemanager/client"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/garbagecollector"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/health/health"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/health/progressing"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/managedresource"
	resourcemanagerpredicate "github.com/gardener/gardener/pkg/resourcemanager/predicate"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// ResourceManagerOptions say which ManagedResources a resource manager applies, and how.
type ResourceManagerOptions struct {
	// Name identifies the resource manager in logs and errors.
	Name string
	// Namespace restricts the source cache to one seed namespace, as in a shoot's control plane.
	Namespace string
	// Accept, if Namespace is empty, selects the seed namespaces whose ManagedResources are
	// applied; the source cache then holds all namespaces.
	Accept func(namespace string) bool
	// ConcurrentSyncs is the number of workers.
	ConcurrentSyncs int
	// SyncPeriod is how often a ManagedResource is applied again.
	SyncPeriod time.Duration
	// Class is the resource class whose ManagedResources are applied and checked; empty is
	// gardener's default class, which also takes ManagedResources without a class, as
	// managedresources.CreateForShoot writes them.
	Class string
	// HealthSyncPeriod is how often the health and progressing controllers check a
	// ManagedResource's objects again without an event.
	HealthSyncPeriod time.Duration
	// DeletionRequeue is how soon a pending deletion is checked again.
	DeletionRequeue time.Duration
}

// StartResourceManager runs gardener-resource-manager's ManagedResource, health and progressing
// controllers as a shoot's resource manager runs them, applying the shoot namespace's
// ManagedResources into the shoot. The garbage collector runs in StartSeedResourceManager.
func StartResourceManager(ctx context.Context, log logr.Logger, seed *rest.Config, shoot *cluster.Cluster, opts ResourceManagerOptions) (*cluster.Runner, error) {
	mgr, err := manager.New(seed, sourceManagerOptions(log, opts))
	if err != nil {
		return nil, fmt.Errorf("failed creating resource manager %s: %w", opts.Name, err)
	}

	target, err := ctrlcluster.New(shoot.Config, func(o *ctrlcluster.Options) {
		o.Scheme = resourcemanagerclient.TargetScheme
		o.Logger = log
		// CRDs are applied by the same ManagedResource as their objects; the dynamic mapper
		// rediscovers kinds on a miss as gardener-resource-manager does.
		o.MapperProvider = apiutil.NewDynamicRESTMapper
		o.Client.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Event{}, &eventsv1.Event{}}}
	})
	if err != nil {
		return nil, fmt.Errorf("failed creating target cluster of resource manager %s: %w", opts.Name, err)
	}
	if err := mgr.Add(target); err != nil {
		return nil, fmt.Errorf("failed adding target cluster to resource manager %s: %w", opts.Name, err)
	}

	// Added before the ManagedResource controller, in gardener's order. With the objects' health
	// the sandbox reports what a landscape would: a Deployment that nobody runs (no kubelet
	// stand-in, or an image without a binary) never observes its generation, which both controllers
	// report as unhealthy and progressing.
	healthConfig := resourcemanagerconfigv1alpha1.HealthControllerConfig{
		ConcurrentSyncs: ptr.To(opts.ConcurrentSyncs),
		SyncPeriod:      &metav1.Duration{Duration: opts.HealthSyncPeriod},
	}
	if err := (&health.Reconciler{
		Config:      healthConfig,
		ClassFilter: resourcemanagerpredicate.NewClassFilter(opts.Class),
	}).AddToManager(mgr, mgr, target, ""); err != nil {
		return nil, fmt.Errorf("failed adding health controller to resource manager %s: %w", opts.Name, err)
	}
	// The progressing controller's predicates keep the context they are added with.
	r := cluster.NewRunner(ctx, "resource-manager "+opts.Name)
	if err := (&progressing.Reconciler{
		Config:      healthConfig,
		ClassFilter: resourcemanagerpredicate.NewClassFilter(opts.Class),
	}).AddToManager(r.Context(), mgr, mgr, target, ""); err != nil {
		r.Cancel()
		return nil, fmt.Errorf("failed adding progressing controller to resource manager %s: %w", opts.Name, err)
	}

	reconciler := &managedresource.Reconciler{
		Config: resourcemanagerconfigv1alpha1.ManagedResourceControllerConfig{
			ConcurrentSyncs:     ptr.To(opts.ConcurrentSyncs),
			SyncPeriod:          &metav1.Duration{Duration: opts.SyncPeriod},
			AlwaysUpdate:        ptr.To(false),
			ManagedByLabelValue: ptr.To("gardener"),
		},
		ClassFilter:                   resourcemanagerpredicate.NewClassFilter(opts.Class),
		RequeueAfterOnDeletionPending: ptr.To(opts.DeletionRequeue),
	}
	if err := reconciler.AddToManager(mgr, mgr, target); err != nil {
		r.Cancel()
		return nil, fmt.Errorf("failed adding managedresource controller to resource manager %s: %w", opts.Name, err)
	}
	if err := r.Start(ctx, log, mgr); err != nil {
		return nil, err
	}
	return r, nil
}

// StartSeedResourceManager runs gardener-resource-manager's garbage collector as the seed's
// resource manager runs it: every period it deletes unreferenced garbage-collectable Secrets and
// ConfigMaps older than minimumAge, also while a shoot is hibernated.
func StartSeedResourceManager(ctx context.Context, log logr.Logger, seed *rest.Config, period, minimumAge time.Duration) (*cluster.Runner, error) {
	mgr, err := manager.New(seed, seedManagerOptions(log))
	if err != nil {
		return nil, fmt.Errorf("failed creating seed resource manager: %w", err)
	}
	if err := (&garbagecollector.Reconciler{
		Config: resourcemanagerconfigv1alpha1.GarbageCollectorControllerConfig{
			Enabled:    true,
			SyncPeriod: &metav1.Duration{Duration: period},
		},
		Clock:                 clock.RealClock{},
		MinimumObjectLifetime: ptr.To(minimumAge),
	}).AddToManager(mgr, mgr); err != nil {
		return nil, fmt.Errorf("failed adding garbage collector to seed resource manager: %w", err)
	}
	return cluster.StartManager(ctx, log, "seed resource manager", mgr)
}

// seedManagerOptions are the options of a controller manager of gardener-resource-manager that
// reads the seed.
func seedManagerOptions(log logr.Logger) manager.Options {
	return manager.Options{
		Scheme:                 resourcemanagerclient.SourceScheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every shoot has a resource manager with the same controller name in this process.
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(cluster.GracefulShutdownTimeout),
	}
}

// sourceManagerOptions are the options of a controller manager that watches the seed
// namespace(s) of a resource manager.
func sourceManagerOptions(log logr.Logger, opts ResourceManagerOptions) manager.Options {
	mgrOpts := seedManagerOptions(log)
	if opts.Namespace != "" {
		mgrOpts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	} else {
		// The namespaces of shoots sharing a control plane come and go while the resource manager
		// runs, which a cache's namespace list cannot follow: the events of other namespaces are
		// dropped instead, so that the resource managers of other shoots alone handle theirs.
		mgrOpts.NewCache = func(config *rest.Config, cacheOpts cache.Options) (cache.Cache, error) {
			c, err := cache.New(config, cacheOpts)
			if err != nil {
				return nil, err
			}
			return &namespaceFilteredCache{Cache: c, accept: opts.Accept}, nil
		}
	}
	return mgrOpts
}

// namespaceFilteredCache hands out informers that deliver events only for objects in accepted
// namespaces. Reads are not filtered.
type namespaceFilteredCache struct {
	cache.Cache
	accept func(namespace string) bool
}

func (c *namespaceFilteredCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &namespaceFilteredInformer{Informer: i, accept: c.accept}, nil
}

func (c *namespaceFilteredCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &namespaceFilteredInformer{Informer: i, accept: c.accept}, nil
}

type namespaceFilteredInformer struct {
	cache.Informer
	accept func(namespace string) bool
}

func (i *namespaceFilteredInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandler(&namespaceFilteredHandler{next: handler, accept: i.accept})
}

func (i *namespaceFilteredInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithResyncPeriod(&namespaceFilteredHandler{next: handler, accept: i.accept}, resyncPeriod)
}

func (i *namespaceFilteredInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.Informer.AddEventHandlerWithOptions(&namespaceFilteredHandler{next: handler, accept: i.accept}, options)
}

type namespaceFilteredHandler struct {
	next   toolscache.ResourceEventHandler
	accept func(namespace string) bool
}

func (h *namespaceFilteredHandler) accepted(obj any) bool {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	m, err := meta.Accessor(obj)
	return err == nil && h.accept(m.GetNamespace())
}

func (h *namespaceFilteredHandler) OnAdd(obj any, isInInitialList bool) {
	if h.accepted(obj) {
		h.next.OnAdd(obj, isInInitialList)
	}
}

func (h *namespaceFilteredHandler) OnUpdate(oldObj, newObj any) {
	if h.accepted(newObj) {
		h.next.OnUpdate(oldObj, newObj)
	}
}

func (h *namespaceFilteredHandler) OnDelete(obj any) {
	if h.accepted(obj) {
		h.next.OnDelete(obj)
	}
}
