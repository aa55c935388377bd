// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package projectconfig

import (
	"context"
	"fmt"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

// AddToManager sets up in mgr the Cluster index and the start-up check for ConfigMaps deleted while
// the extension was down, and returns the watches that bring the garden's project ConfigMaps to the
// Extension controller, which adds them to its own.
func AddToManager(ctx context.Context, mgr manager.Manager, garden *gardencluster.Cluster, log logr.Logger) ([]func(controller.Controller) error, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &extensionsv1alpha1.Cluster{}, IndexShootNamespace, ShootNamespaceOf); err != nil {
		return nil, fmt.Errorf("failed indexing clusters by shoot namespace: %w", err)
	}
	mapper := NewMapper(mgr.GetClient())
	orphans := make(chan event.GenericEvent)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		EnqueueDeletedWhileDown(ctx, log, mgr.GetCache(), garden, orphans)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("failed adding the start-up check for deleted project ConfigMaps: %w", err)
	}
	return []func(controller.Controller) error{
		// The watch starts once the garden cache synced, so that the controller starts without
		// the garden; its initial list then catches up with the changes the extension missed.
		func(c controller.Controller) error {
			return c.Watch(garden.WhenSynced(source.Kind[client.Object](
				garden.Cache(),
				&corev1.ConfigMap{},
				Handler(mapper),
				predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == constants.ProjectConfigMapName }),
			)))
		},
		func(c controller.Controller) error {
			return c.Watch(source.Channel(orphans, &handler.EnqueueRequestForObject{}))
		},
	}, nil
}
