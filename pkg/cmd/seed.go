// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cmd

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ApplySeedCacheOptions sets how the seed manager caches objects. A seed holds hundreds of shoots:
// Secrets are read rarely and are many, so they are never cached; managedFields are stripped from
// everything cached, as nothing of the extension reads them and they are a large part of every
// Extension, Cluster and ManagedResource.
func ApplySeedCacheOptions(o *manager.Options) {
	o.Client.Cache = &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}
	o.Cache.DefaultTransform = cache.TransformStripManagedFields()
}
