// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardener

import (
	"context"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// StartAppliedMarker runs a stand-in for the resource managers of light shoots that reports every
// ManagedResource as applied without applying anything (sandbox.Options.MarkSharedApplied). It
// lives beside the resource manager it replaces and takes the same options.
func StartAppliedMarker(ctx context.Context, log logr.Logger, seed *rest.Config, opts ResourceManagerOptions) (*cluster.Runner, error) {
	mgr, err := manager.New(seed, sourceManagerOptions(log, opts))
	if err != nil {
		return nil, fmt.Errorf("failed creating applied marker: %w", err)
	}
	if err := builder.ControllerManagedBy(mgr).
		Named("applied-marker").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.ConcurrentSyncs}).
		For(&resourcesv1alpha1.ManagedResource{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(&appliedMarker{client: mgr.GetClient()}); err != nil {
		return nil, fmt.Errorf("failed adding applied marker: %w", err)
	}
	return cluster.StartManager(ctx, log, "applied-marker", mgr)
}

// appliedMarker sets the status gardener-resource-manager sets after a successful apply.
type appliedMarker struct {
	client client.Client
}

func (m *appliedMarker) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := m.client.Get(ctx, req.NamespacedName, mr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if mr.DeletionTimestamp != nil || mr.Status.ObservedGeneration == mr.Generation {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(mr.DeepCopy())
	now := metav1.NewTime(time.Now())
	condition := func(t gardencorev1beta1.ConditionType, status gardencorev1beta1.ConditionStatus, reason string) gardencorev1beta1.Condition {
		return gardencorev1beta1.Condition{Type: t, Status: status, Reason: reason, Message: "Marked applied by the sandbox.", LastTransitionTime: now, LastUpdateTime: now}
	}
	mr.Status.ObservedGeneration = mr.Generation
	mr.Status.Conditions = []gardencorev1beta1.Condition{
		condition(resourcesv1alpha1.ResourcesApplied, gardencorev1beta1.ConditionTrue, resourcesv1alpha1.ConditionApplySucceeded),
		condition(resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionTrue, "ResourcesHealthy"),
		condition(resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionFalse, "ResourcesHealthy"),
	}
	if err := m.client.Status().Patch(ctx, mr, patch); err != nil {
		return reconcile.Result{}, fmt.Errorf("failed marking managed resource %s applied: %w", req.NamespacedName, err)
	}
	return reconcile.Result{}, nil
}
