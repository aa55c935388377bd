// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"github.com/gardener/gardener/pkg/utils/imagevector"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// renderer renders with one image vector and keeps the results in a render cache. The output
// depends only on the options, and rendering Flux runs kustomize, which costs far more than keeping
// the bytes; but the namespaces and settings are chosen by tenants, so the cache is bounded.
type renderer struct {
	imageVector imagevector.ImageVector
	cache       *rendercache.Cache
}

// The process renders with the image vector it was started with, into the process's one cache.
var defaultRenderer = &renderer{imageVector: fluximagevector.ImageVector(), cache: rendercache.Shared}

// newRenderer returns a renderer with its own cache, for renders with another image vector.
func newRenderer(vector imagevector.ImageVector) *renderer {
	return &renderer{imageVector: vector, cache: rendercache.New(rendercache.DefaultMaxEntries, rendercache.DefaultMaxBytes)}
}

// cached returns the result stored for key or runs render and stores it. Failures are not kept,
// so a later call tries again.
func (r *renderer) cached(key rendercache.Key, render func() ([]byte, error)) ([]byte, error) {
	return rendercache.Get(r.cache, key, func() ([]byte, int64, error) {
		data, err := render()
		return data, int64(len(data)), err
	})
}
