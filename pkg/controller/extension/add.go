// Package extension contains the controller of shoot-flux Extension resources.
package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

const (
	// ControllerName is the name of the shoot-flux Extension controller.
	ControllerName = "shoot-flux"
	// FinalizerSuffix is the suffix of the finalizer on Extension resources.
	FinalizerSuffix = "shoot-flux"

	// IndexShootNamespace indexes Cluster objects by the garden namespace of their shoot, so a
	// project ConfigMap change finds its shoots without decoding every Cluster.
	IndexShootNamespace = "shoot.metadata.namespace"
)

// AddOptions are options to apply when adding the shoot-flux controller to the manager.
type AddOptions struct {
	// ControllerOptions contains options for the controller.
	ControllerOptions controller.Options
	// IgnoreOperationAnnotation specifies whether to ignore the operation annotation or not.
	IgnoreOperationAnnotation bool
	// ExtensionClasses are the extension classes the controller is responsible for.
	ExtensionClasses []extensionsv1alpha1.ExtensionClass
	// Config is the (defaulted) component configuration.
	Config config.ControllerConfiguration
	// GardenCluster gives access to the garden; it must be added to the manager by the caller.
	GardenCluster *gardencluster.Cluster
	// Resync is how often an unchanged Extension is reconciled again.
	Resync time.Duration
}

// DefaultAddOptions are the default options for the controller, filled from the command line.
var DefaultAddOptions = AddOptions{Resync: 30 * time.Minute}

// AddToManager adds the controller with the DefaultAddOptions.
func AddToManager(ctx context.Context, mgr manager.Manager) error {
	return AddToManagerWithOptions(ctx, mgr, DefaultAddOptions)
}

// AddToManagerWithOptions adds the controller with the given options to the manager.
func AddToManagerWithOptions(ctx context.Context, mgr manager.Manager, opts AddOptions) error {
	if opts.GardenCluster == nil {
		return fmt.Errorf("the shoot-flux controller needs access to the garden cluster")
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &extensionsv1alpha1.Cluster{}, IndexShootNamespace, indexShootNamespace); err != nil {
		return fmt.Errorf("failed indexing clusters by shoot namespace: %w", err)
	}

	garden := opts.GardenCluster
	mapper := &projectMapper{client: mgr.GetClient()}
	orphans := make(chan event.GenericEvent)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		enqueueConfigMapsDeletedWhileDown(ctx, mgr.GetLogger().WithName(ControllerName), mgr.GetCache(), garden, orphans)
		return nil
	})); err != nil {
		return fmt.Errorf("failed adding the start-up check for deleted project ConfigMaps: %w", err)
	}
	return extension.Add(mgr, extension.AddArgs{
		Actuator:                  NewActuator(mgr.GetClient(), garden.Client(), opts.Config),
		ControllerOptions:         opts.ControllerOptions,
		Name:                      ControllerName,
		FinalizerSuffix:           FinalizerSuffix,
		Resync:                    opts.Resync,
		Predicates:                predicates(ctx, mgr, opts.IgnoreOperationAnnotation),
		Type:                      constants.ExtensionType,
		IgnoreOperationAnnotation: opts.IgnoreOperationAnnotation,
		ExtensionClasses:          opts.ExtensionClasses,
		WatchBuilder: []func(controller.Controller) error{
			// The watch starts once the garden cache synced, so that the controller starts without
			// the garden; its initial list then catches up with the changes the extension missed.
			func(c controller.Controller) error {
				return c.Watch(garden.WhenSynced(source.Kind[client.Object](
					garden.Cache(),
					&corev1.ConfigMap{},
					projectConfigHandler(mapper),
					predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == constants.ProjectConfigMapName }),
				)))
			},
			func(c controller.Controller) error {
				return c.Watch(source.Channel(orphans, &handler.EnqueueRequestForObject{}))
			},
		},
	})
}

// predicates select the Extension events to reconcile. Without the operation annotation (local
// development), gardener's defaults fall short: they only admit generation changes, and their
// shoot-not-failed precondition rejects the generic events of the library's Cluster watch, so
// hibernation, migrate/restore/reconcile annotations and Cluster changes would go unnoticed. The
// reconciler skips failed shoots itself, so the precondition is not needed there.
func predicates(ctx context.Context, mgr manager.Manager, ignoreOperationAnnotation bool) []predicate.Predicate {
	if !ignoreOperationAnnotation {
		return extension.DefaultPredicates(ctx, mgr, false)
	}
	return []predicate.Predicate{predicate.Or(predicate.GenerationChangedPredicate{}, hasOperationAnnotation)}
}

var hasOperationAnnotation = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, ok := o.GetAnnotations()[v1beta1constants.GardenerOperation]
	return ok
})

func indexShootNamespace(o client.Object) []string {
	c, ok := o.(*extensionsv1alpha1.Cluster)
	if !ok || c.Spec.Shoot.Raw == nil {
		return nil
	}
	var shoot struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(c.Spec.Shoot.Raw, &shoot); err != nil || shoot.Metadata.Namespace == "" {
		return nil
	}
	return []string{shoot.Metadata.Namespace}
}

// projectMapper maps a project ConfigMap to the shoot-flux Extensions of all shoots of the
// project, so that a change reaches them without waiting for the resync.
type projectMapper struct {
	client client.Client
}

// projectConfigHandler enqueues the Extensions of a project when its ConfigMap changes. The initial
// list after a (re)start only enqueues the Extensions whose providerStatus records other ConfigMap
// data, i.e. the shoots that missed a change while the extension was down: the others were built
// from this very data, and reconciling all of them on every restart would only rewrite their
// lastOperation. Later events enqueue all, as a reconcile with older data may be running.
//
// A shoot whose reconciles are failing keeps its backoff: one project's ConfigMap edits must not
// turn the failing reconciles of its shoots into a stream that occupies the workers.
func projectConfigHandler(m *projectMapper) handler.EventHandler {
	enqueueAll := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		enqueue(q, m.extensionsOfProject(ctx, o))
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				enqueueAll(ctx, e.Object, q)
				return
			}
			enqueue(q, m.outdatedExtensionsOfProject(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueueAll(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueueAll(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueueAll(ctx, e.Object, q)
		},
	}
}

// enqueue adds requests at once, except those in backoff after failed reconciles, which wait for
// their next turn.
func enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], requests []reconcile.Request) {
	for _, req := range requests {
		if q.NumRequeues(req) > 0 {
			q.AddRateLimited(req)
			continue
		}
		q.Add(req)
	}
}

func (m *projectMapper) extensionsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	return m.requests(ctx, o, func(*extensionsv1alpha1.Extension) bool { return true })
}

// outdatedExtensionsOfProject returns the Extensions whose providerStatus does not record the
// ConfigMap's current data.
func (m *projectMapper) outdatedExtensionsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return m.extensionsOfProject(ctx, o)
	}
	hash := fluxconfig.ConfigMapHash(cm)
	return m.requests(ctx, o, func(ex *extensionsv1alpha1.Extension) bool { return recordedConfigHash(ex) != hash })
}

func (m *projectMapper) requests(ctx context.Context, o client.Object, include func(*extensionsv1alpha1.Extension) bool) []reconcile.Request {
	clusters := &extensionsv1alpha1.ClusterList{}
	if err := m.client.List(ctx, clusters, client.MatchingFields{IndexShootNamespace: o.GetNamespace()}); err != nil {
		logf.FromContext(ctx).Error(err, "Failed listing clusters of project", "namespace", o.GetNamespace())
		return nil
	}
	var requests []reconcile.Request
	for _, c := range clusters.Items {
		extensions := &extensionsv1alpha1.ExtensionList{}
		if err := m.client.List(ctx, extensions, client.InNamespace(c.Name)); err != nil {
			logf.FromContext(ctx).Error(err, "Failed listing extensions of shoot", "namespace", c.Name)
			continue
		}
		for i := range extensions.Items {
			ex := &extensions.Items[i]
			if ex.Spec.Type == constants.ExtensionType && include(ex) {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ex)})
			}
		}
	}
	return requests
}

// recordedConfigHash returns the project ConfigMap hash in the Extension's providerStatus; "" if
// there is none or it cannot be read, which makes the Extension count as outdated.
func recordedConfigHash(ex *extensionsv1alpha1.Extension) string {
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil || status == nil {
		return ""
	}
	return status.ProjectConfigHash
}

// enqueueConfigMapsDeletedWhileDown sends the Extensions that were built from a project ConfigMap
// which no longer exists. The initial list of the ConfigMap watch has no event for a ConfigMap
// deleted while the extension was down, so without this those shoots would keep the deleted
// configuration until the resync. A failure is only logged: the resync repairs what it misses, and
// stopping the manager for it would stop every shoot's reconciles. It runs once the garden cache
// synced, which may be long after the start.
func enqueueConfigMapsDeletedWhileDown(ctx context.Context, log logr.Logger, seed cache.Cache, garden *gardencluster.Cluster, events chan<- event.GenericEvent) {
	select {
	case <-ctx.Done():
		return
	case <-garden.Synced():
	}
	if !seed.WaitForCacheSync(ctx) {
		// The context ended before the cache synced: the manager is stopping.
		return
	}
	orphans, err := extensionsWithDeletedConfigMap(ctx, seed, garden.Client())
	if err != nil {
		log.Error(err, "Failed looking for shoots whose project ConfigMap was deleted while the extension was down")
		return
	}
	for _, ex := range orphans {
		log.Info("Project ConfigMap was deleted while the extension was down, reconciling", "namespace", ex.Namespace)
		select {
		case events <- event.GenericEvent{Object: ex}:
		case <-ctx.Done():
			return
		}
	}
}

// extensionsWithDeletedConfigMap returns the shoot-flux Extensions whose providerStatus records a
// project ConfigMap that does not exist.
func extensionsWithDeletedConfigMap(ctx context.Context, seed, garden client.Reader) ([]*extensionsv1alpha1.Extension, error) {
	extensions := &extensionsv1alpha1.ExtensionList{}
	if err := seed.List(ctx, extensions); err != nil {
		return nil, fmt.Errorf("failed listing extensions: %w", err)
	}
	var orphans []*extensionsv1alpha1.Extension
	for i := range extensions.Items {
		ex := &extensions.Items[i]
		if ex.Spec.Type != constants.ExtensionType || ex.DeletionTimestamp != nil || recordedConfigHash(ex) == "" {
			continue
		}
		cluster := &extensionsv1alpha1.Cluster{}
		if err := seed.Get(ctx, client.ObjectKey{Name: ex.Namespace}, cluster); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed reading cluster %s: %w", ex.Namespace, err)
		}
		projects := indexShootNamespace(cluster)
		if len(projects) == 0 {
			continue
		}
		err := garden.Get(ctx, client.ObjectKey{Namespace: projects[0], Name: constants.ProjectConfigMapName}, &corev1.ConfigMap{})
		switch {
		case apierrors.IsNotFound(err):
			orphans = append(orphans, ex)
		case err != nil:
			return nil, fmt.Errorf("failed reading ConfigMap %s/%s: %w", projects[0], constants.ProjectConfigMapName, err)
		}
	}
	return orphans, nil
}
