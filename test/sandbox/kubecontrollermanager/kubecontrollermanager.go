// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package kubecontrollermanager stands in for kube-controller-manager in the sandbox's clusters:
// envtest runs none, and without its namespace and garbage collector controllers a deleted
// namespace would stay Terminating and a foreground deletion would never end. Not to be confused
// with gardener-controller-manager, whose controllers package gardener runs.
package kubecontrollermanager

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// Without kube-controller-manager a deleted namespace stays Terminating and a foreground deletion
// (gardener-resource-manager's for apps and batch objects) keeps its finalizer. Nothing here creates
// dependents, so the stand-in removes the garbage collector's finalizers right away.

// foregroundKinds are the kinds gardener-resource-manager deletes with foreground propagation.
var foregroundKinds = []schema.GroupVersionKind{
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
	batchv1.SchemeGroupVersion.WithKind("Job"),
	batchv1.SchemeGroupVersion.WithKind("CronJob"),
}

// NamespaceFinalizerRequeue is how soon a terminating namespace is checked again.
var NamespaceFinalizerRequeue = 250 * time.Millisecond

// Start runs the stand-in against a shoot's (or the seed's) API server until the runner stops.
func Start(ctx context.Context, log logr.Logger, shoot *cluster.Cluster) (*cluster.Runner, error) {
	mgr, err := cluster.NewManager(log, shoot)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}

	clientset, err := kubernetes.NewForConfig(shoot.Config)
	if err != nil {
		return nil, fmt.Errorf("failed creating clientset of shoot %s: %w", shoot.Name, err)
	}
	meta, err := metadata.NewForConfig(shoot.Config)
	if err != nil {
		return nil, fmt.Errorf("failed creating metadata client of shoot %s: %w", shoot.Name, err)
	}

	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	if err := builder.ControllerManagedBy(mgr).
		Named("namespace").
		For(&corev1.Namespace{}, builder.WithPredicates(deleting)).
		Complete(&namespaceFinalizer{client: mgr.GetClient(), clientset: clientset, discovery: clientset.Discovery(), metadata: meta}); err != nil {
		return nil, fmt.Errorf("failed adding namespace controller: %w", err)
	}

	for _, gvk := range foregroundKinds {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		if err := builder.ControllerManagedBy(mgr).
			Named("garbage-collector-"+gvk.Kind).
			For(obj, builder.WithPredicates(deleting)).
			Complete(&garbageCollector{client: mgr.GetClient(), gvk: gvk}); err != nil {
			return nil, fmt.Errorf("failed adding garbage collector for %s: %w", gvk.Kind, err)
		}
	}
	return cluster.StartManager(ctx, log, "kube-controller-manager "+shoot.Name, mgr)
}

// garbageCollector removes the foregroundDeletion and orphan finalizers of deleted objects.
type garbageCollector struct {
	client client.Client
	gvk    schema.GroupVersionKind
}

func (g *garbageCollector) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(g.gvk)
	if err := g.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if obj.DeletionTimestamp == nil {
		return reconcile.Result{}, nil
	}
	finalizers := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool {
		return f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents
	})
	if len(finalizers) == len(obj.Finalizers) {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	obj.Finalizers = finalizers
	if err := g.client.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("failed removing garbage collector finalizers: %w", err)
	}
	return reconcile.Result{}, nil
}

// namespaceFinalizer deletes the content of a deleted namespace and then removes the kubernetes
// finalizer, as the namespace controller of kube-controller-manager does.
type namespaceFinalizer struct {
	client    client.Client
	clientset kubernetes.Interface
	discovery discovery.DiscoveryInterface
	metadata  metadata.Interface
}

func (n *namespaceFinalizer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := n.client.Get(ctx, req.NamespacedName, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return reconcile.Result{}, nil
	}

	remaining, err := n.deleteContent(ctx, ns.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if remaining > 0 {
		return reconcile.Result{RequeueAfter: NamespaceFinalizerRequeue}, nil
	}

	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	if _, err := n.clientset.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("failed finalizing namespace %s: %w", ns.Name, err)
	}
	return reconcile.Result{}, nil
}

// deleteContent deletes every object in the namespace and returns how many are still there.
func (n *namespaceFinalizer) deleteContent(ctx context.Context, namespace string) (int, error) {
	lists, err := n.discovery.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return 0, fmt.Errorf("failed discovering namespaced resources: %w", err)
	}
	remaining := 0
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return 0, fmt.Errorf("failed parsing group version %q: %w", list.GroupVersion, err)
		}
		for _, res := range list.APIResources {
			if !slices.Contains(res.Verbs, "list") || !slices.Contains(res.Verbs, "delete") {
				continue
			}
			resource := n.metadata.Resource(gv.WithResource(res.Name)).Namespace(namespace)
			objects, err := resource.List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				return 0, fmt.Errorf("failed listing %s in namespace %s: %w", res.Name, namespace, err)
			}
			for _, obj := range objects.Items {
				remaining++
				if obj.DeletionTimestamp != nil {
					continue
				}
				if err := resource.Delete(ctx, obj.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return 0, fmt.Errorf("failed deleting %s %s/%s: %w", res.Name, namespace, obj.Name, err)
				}
			}
		}
	}
	return remaining, nil
}
