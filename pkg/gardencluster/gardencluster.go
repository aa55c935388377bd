// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package gardencluster gives the extension its access to the garden without making its start
// depend on the garden: the health checks, Migrate and Delete of shoots need nothing from the
// garden and must go on while its API server cannot be reached.
package gardencluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

// ErrNotReachable is the cause of every garden request made before the garden cache synced for
// the first time.
var ErrNotReachable = errors.New("garden cluster is not reachable")

var (
	// ProbeBackoff is how often the garden is asked whether it answers until it does. The cap keeps
	// the wait after a long outage short; an unanswered request every few seconds costs nothing.
	ProbeBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 10 * time.Second}
	// ProbeTimeout bounds one probe. client-go retries a reset connection for ten seconds before
	// it reports it; the bound lets the reason reach the reconcile errors sooner.
	ProbeTimeout = 5 * time.Second
)

// Cluster is the extension's access to the garden; its cache holds only the project ConfigMaps
// flux-config, trimmed by TransformProjectConfigMap, and never Secrets. Unlike a cluster.Cluster it
// does not hold up the manager's start: until its cache synced, requests fail at once with
// ErrNotReachable. It has no GetCache method, or the manager would wait for its sync.
type Cluster struct {
	cluster cluster.Cluster
	client  client.Client
	log     logr.Logger
	synced  chan struct{}

	mu      sync.Mutex
	lastErr error
}

// New returns the garden access for cfg; it sends no request. maxConfigMapBytes bounds the project
// ConfigMaps the cache keeps (see TransformProjectConfigMap).
func New(cfg *rest.Config, log logr.Logger, maxConfigMapBytes int) (*Cluster, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("could not build garden scheme: %w", err)
	}
	c := &Cluster{log: log, synced: make(chan struct{})}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = scheme
		// The garden kinds the extension uses are fixed. A static mapper spares the discovery
		// requests, without which the dynamic mapper could set up neither the cache nor a client
		// while the garden does not answer.
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return restMapper(), nil }
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: {
				Field:     fields.OneTermEqualSelector("metadata.name", constants.ProjectConfigMapName),
				Transform: TransformProjectConfigMap(maxConfigMapBytes),
			},
		}
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
		o.Cache.DefaultWatchErrorHandler = c.watchError
		o.Client.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}
	})
	if err != nil {
		return nil, fmt.Errorf("could not create garden cluster access: %w", err)
	}
	c.cluster = cl
	c.client = &syncedClient{Client: cl.GetClient(), garden: c}
	return c, nil
}

// TransformProjectConfigMap returns the transform (a toolscache.TransformFunc) of the cached project
// ConfigMaps: every seed caches those of all projects, so it keeps only what the extension reads
// (identity, version, data, binaryData key names). A ConfigMap over maxBytes (zero: unbounded)
// keeps only its size in constants.AnnotationDroppedDataBytes, and its project's reconciles fail
// with the limit's error.
func TransformProjectConfigMap(maxBytes int) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			// A tombstone of a deleted object (DeletedFinalStateUnknown) is passed on as it is.
			return obj, nil
		}
		kept := &corev1.ConfigMap{
			TypeMeta: cm.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:              cm.Name,
				Namespace:         cm.Namespace,
				UID:               cm.UID,
				ResourceVersion:   cm.ResourceVersion,
				Generation:        cm.Generation,
				CreationTimestamp: cm.CreationTimestamp,
				DeletionTimestamp: cm.DeletionTimestamp,
			},
			Immutable: cm.Immutable,
		}
		if size := fluxconfig.ConfigMapDataSize(cm); maxBytes > 0 && size > maxBytes {
			kept.Annotations = map[string]string{constants.AnnotationDroppedDataBytes: strconv.Itoa(size)}
			return kept, nil
		}
		kept.Data = cm.Data
		if len(cm.BinaryData) > 0 {
			kept.BinaryData = make(map[string][]byte, len(cm.BinaryData))
			for key := range cm.BinaryData {
				kept.BinaryData[key] = nil
			}
		}
		return kept, nil
	}
}

// restMapper maps the garden kinds the extension reads and writes: project ConfigMaps and deploy
// key Secrets.
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	return m
}

// Start runs the garden cache until ctx ends and marks it synced once it is. It implements
// manager.Runnable.
func (c *Cluster) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { c.sync(ctx) })
	err := c.cluster.Start(ctx)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("garden cache: %w", err)
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a replica that is not the leader
// fills its cache too, so that it can take over at once.
func (c *Cluster) NeedLeaderElection() bool {
	return false
}

// sync waits until the garden answers, then creates the informer of the project ConfigMaps and
// waits for its sync. The informer is only created once the garden answers: its own retries back
// off to a minute, which would delay every shoot's reconcile by as much after an outage at start.
func (c *Cluster) sync(ctx context.Context) {
	backoff := ProbeBackoff
	for {
		err := c.probe(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			// The manager is stopping; the probe only failed for that.
			return
		}
		c.setErr(err)
		delay := backoff.Step()
		c.log.Error(err, "Garden cluster is not reachable, retrying", "after", delay.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
	if _, err := c.cluster.GetCache().GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false)); err != nil {
		// The static mapper knows ConfigMaps: this is a programming error, not an outage.
		c.setErr(err)
		c.log.Error(err, "Failed creating the informer of project ConfigMaps")
		return
	}
	if !c.cluster.GetCache().WaitForCacheSync(ctx) {
		return
	}
	close(c.synced)
	c.log.Info("Garden cache synced")
}

// probe lists the project ConfigMaps as the informer's first list does, from the API server's
// watch cache, but only one of them: it succeeds when the garden answers and allows the
// informer's request.
func (c *Cluster) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	return c.cluster.GetAPIReader().List(ctx, &corev1.ConfigMapList{}, &client.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", constants.ProjectConfigMapName),
		Limit:         1,
		Raw:           &metav1.ListOptions{ResourceVersion: "0"},
	})
}

// watchError records why the informer cannot list or watch, for the errors of Client, and logs
// it as client-go does by default.
func (c *Cluster) watchError(ctx context.Context, r *toolscache.Reflector, err error) {
	c.setErr(err)
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
}

func (c *Cluster) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastErr = err
}

// Err returns nil once the garden cache synced; before, an ErrNotReachable with the latest reason.
// After the first sync it stays nil: the cache keeps serving its last state through an outage,
// and uncached requests report their own errors.
func (c *Cluster) Err() error {
	select {
	case <-c.synced:
		return nil
	default:
	}
	c.mu.Lock()
	cause := c.lastErr
	c.mu.Unlock()
	if cause == nil {
		return fmt.Errorf("%w: no answer yet", ErrNotReachable)
	}
	return fmt.Errorf("%w: %w", ErrNotReachable, cause)
}

// Synced is closed once the garden cache synced.
func (c *Cluster) Synced() <-chan struct{} {
	return c.synced
}

// Client reads project ConfigMaps from the cache and Secrets from the API server. Until the cache
// synced, every request fails at once with Err.
func (c *Cluster) Client() client.Client {
	return c.client
}

// Cache is the garden cache, for watches. Reads should go through Client, which does not block
// on a cache that has not synced.
func (c *Cluster) Cache() cache.Cache {
	return c.cluster.GetCache()
}

// WhenSynced returns a source that starts src once the garden cache synced, so that a controller
// with a garden watch starts without the garden: a source that cannot sync would fail the
// controller's start after its cache sync timeout.
func (c *Cluster) WhenSynced(src source.Source) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-c.synced:
			}
			if err := src.Start(ctx, q); err != nil {
				c.log.Error(err, "Failed starting a watch of the garden", "source", src)
			}
		}()
		return nil
	})
}
