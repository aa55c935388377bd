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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

// EnqueueDeletedWhileDown sends the Extensions built from a project ConfigMap that no longer exists:
// the watch's initial list has no event for one deleted while the extension was down. It runs once
// the garden cache synced; a failure is only logged, as the resync repairs what it misses.
func EnqueueDeletedWhileDown(ctx context.Context, log logr.Logger, seed cache.Cache, garden *gardencluster.Cluster, events chan<- event.GenericEvent) {
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
		projects := ShootNamespaceOf(cluster)
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
