// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package projectconfig brings the changes of project ConfigMaps to the shoots of the project:
// the events of a project are coalesced, and the shoots whose ConfigMap was deleted while the
// extension was down are found at the start.
package projectconfig

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

// CoalesceWindow is how long the ConfigMap events of one project are collected before its shoots
// are enqueued, so that a burst of edits makes one reconcile per shoot and window. It counts from
// the first event, so a stream of edits cannot hold the shoots back; one second keeps a change
// within the 5 s a project admin may expect (make bench).
var CoalesceWindow = time.Second

// MaxCoalesceWindow bounds the growth of a project's window: a window opened while the project's
// previous one is less than that window's length ago is twice as long, so that a loop of edits
// makes a few reconciles per shoot for its first seconds (4 within 10 s) and then one per
// MaxCoalesceWindow, instead of one per CoalesceWindow for as long as it runs. A project that
// edits now and then keeps CoalesceWindow.
var MaxCoalesceWindow = 8 * time.Second

// Mapper maps a project ConfigMap to the shoot-flux Extensions of all shoots of the
// project, so that a change reaches them without waiting for the resync.
type Mapper struct {
	client client.Client

	mu sync.Mutex
	// pending holds the projects whose shoots are enqueued when their window ends; at most one
	// entry per project, dropped when it fires.
	pending map[string]struct{}
	// last holds the length and end of a project's last window, dropped once the project was
	// quiet for that long, so that it holds only the projects that are editing.
	last map[string]lastWindow
}

// lastWindow is the length and end of a project's last window.
type lastWindow struct {
	length time.Duration
	end    time.Time
}

// nextWindow returns the length of the window the project's event opens now; m.mu is held.
func (m *Mapper) nextWindow(project string, now time.Time) time.Duration {
	prev, ok := m.last[project]
	if !ok || now.Sub(prev.end) >= prev.length {
		return CoalesceWindow
	}
	return min(2*prev.length, max(MaxCoalesceWindow, CoalesceWindow))
}

// Handler enqueues the Extensions of a project when its ConfigMap changes, once per CoalesceWindow.
// After a (re)start only those whose providerStatus records other ConfigMap data are enqueued: the
// others were built from it. A shoot with failing reconciles keeps its backoff, so one project's
// edits cannot turn them into a stream that occupies the workers.
func Handler(m *Mapper) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				m.enqueueCoalesced(ctx, e.Object.GetNamespace(), q)
				return
			}
			enqueue(q, m.outdatedExtensionsOfProject(ctx, e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			m.enqueueCoalesced(ctx, e.ObjectNew.GetNamespace(), q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			m.enqueueCoalesced(ctx, e.Object.GetNamespace(), q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			m.enqueueCoalesced(ctx, e.Object.GetNamespace(), q)
		},
	}
}

// enqueueCoalesced enqueues the Extensions of the project's shoots when the project's window ends,
// opening the window if none is open. The shoots are looked up then, so that the list is current
// and looked up once per window.
func (m *Mapper) enqueueCoalesced(ctx context.Context, project string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pending[project]; ok {
		return
	}
	if m.pending == nil {
		m.pending = map[string]struct{}{}
		m.last = map[string]lastWindow{}
	}
	m.pending[project] = struct{}{}
	window := m.nextWindow(project, time.Now())
	// The event's context ends with the event; the lookup runs later.
	ctx = context.WithoutCancel(ctx)
	time.AfterFunc(window, func() {
		// Dropped before the lookup, so that an event during it opens a new window: the lookup may
		// already have missed what that event changed.
		m.mu.Lock()
		delete(m.pending, project)
		end := time.Now()
		m.last[project] = lastWindow{length: window, end: end}
		m.mu.Unlock()
		time.AfterFunc(window, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.last[project].end.Equal(end) {
				delete(m.last, project)
			}
		})
		enqueue(q, m.extensionsOfProject(ctx, project))
	})
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

func (m *Mapper) extensionsOfProject(ctx context.Context, project string) []reconcile.Request {
	return m.requests(ctx, project, func(*extensionsv1alpha1.Extension) bool { return true })
}

// outdatedExtensionsOfProject returns the Extensions whose providerStatus does not record the
// ConfigMap's current data.
func (m *Mapper) outdatedExtensionsOfProject(ctx context.Context, o client.Object) []reconcile.Request {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return m.extensionsOfProject(ctx, o.GetNamespace())
	}
	hash := fluxconfig.ConfigMapHash(cm)
	return m.requests(ctx, o.GetNamespace(), func(ex *extensionsv1alpha1.Extension) bool { return recordedConfigHash(ex) != hash })
}

func (m *Mapper) requests(ctx context.Context, project string, include func(*extensionsv1alpha1.Extension) bool) []reconcile.Request {
	clusters := &extensionsv1alpha1.ClusterList{}
	if err := m.client.List(ctx, clusters, client.MatchingFields{IndexShootNamespace: project}); err != nil {
		logf.FromContext(ctx).Error(err, "Failed listing clusters of project", "namespace", project)
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

// NewMapper returns the mapper of the Extensions of a project; c must have the index
// IndexShootNamespace of Clusters.
func NewMapper(c client.Client) *Mapper {
	return &Mapper{client: c}
}

// IndexShootNamespace indexes Cluster objects by the garden namespace of their shoot, so a
// project ConfigMap change finds its shoots without decoding every Cluster.
const IndexShootNamespace = "shoot.metadata.namespace"

// ShootNamespaceOf is the index function of IndexShootNamespace.
func ShootNamespaceOf(o client.Object) []string {
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
