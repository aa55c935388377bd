package sandbox

import (
	"context"
	"fmt"

	resourcemanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	resourcemanagerclient "github.com/gardener/gardener/pkg/resourcemanager/client"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/managedresource"
	resourcemanagerpredicate "github.com/gardener/gardener/pkg/resourcemanager/predicate"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// startResourceManager runs gardener-resource-manager's ManagedResource controller the way a
// shoot's resource manager runs in its control plane: its source cache only sees the shoot's seed
// namespace and it applies into the shoot's API server. Class filter "" is gardener's default
// class, which also takes ManagedResources without a class, as managedresources.CreateForShoot
// writes them.
func startResourceManager(ctx context.Context, log logr.Logger, seed *rest.Config, namespace string, shoot *Cluster) (*runner, error) {
	mgr, err := manager.New(seed, manager.Options{
		Scheme:                 resourcemanagerclient.SourceScheme,
		Logger:                 log,
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every shoot has a resource manager with the same controller name in this process.
		Controller:              ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(GracefulShutdownTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("failed creating resource manager for %s: %w", namespace, err)
	}

	target, err := cluster.New(shoot.Config, func(o *cluster.Options) {
		o.Scheme = resourcemanagerclient.TargetScheme
		o.Logger = log
		// CRDs are applied by the same ManagedResource as their objects; the dynamic mapper
		// rediscovers kinds on a miss as gardener-resource-manager does.
		o.MapperProvider = apiutil.NewDynamicRESTMapper
		o.Client.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Event{}, &eventsv1.Event{}}}
	})
	if err != nil {
		return nil, fmt.Errorf("failed creating target cluster of resource manager for %s: %w", namespace, err)
	}
	if err := mgr.Add(target); err != nil {
		return nil, fmt.Errorf("failed adding target cluster to resource manager for %s: %w", namespace, err)
	}

	reconciler := &managedresource.Reconciler{
		Config: resourcemanagerconfigv1alpha1.ManagedResourceControllerConfig{
			ConcurrentSyncs:     ptr.To(ResourceManagerConcurrentSyncs),
			SyncPeriod:          &metav1.Duration{Duration: ResourceManagerSyncPeriod},
			AlwaysUpdate:        ptr.To(false),
			ManagedByLabelValue: ptr.To("gardener"),
		},
		ClassFilter:                   resourcemanagerpredicate.NewClassFilter(""),
		RequeueAfterOnDeletionPending: ptr.To(ResourceManagerDeletionRequeue),
	}
	if err := reconciler.AddToManager(mgr, mgr, target); err != nil {
		return nil, fmt.Errorf("failed adding managedresource controller for %s: %w", namespace, err)
	}
	return startManager(ctx, log, "resource-manager "+namespace, mgr)
}
