package manifests

import (
	"errors"
	"sync"

	"github.com/gardener/gardener/pkg/utils/imagevector"
	"k8s.io/utils/lru"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

// MaxCachedRenders bounds the rendered manifests kept in memory (a few hundred KiB each). The
// output depends only on the options, and rendering Flux runs kustomize, which costs far more than
// keeping the bytes; but the namespaces are chosen by tenants, so the set of distinct options is
// not bounded, and the least recently used results are dropped.
const MaxCachedRenders = 32

// renderer renders with one image vector and remembers the recent results.
type renderer struct {
	imageVector imagevector.ImageVector

	mu    sync.Mutex
	cache *lru.Cache
}

// renderCall lets concurrent callers with the same options wait for one rendering.
type renderCall struct {
	done chan struct{}
	data []byte
	err  error
}

var errRenderAborted = errors.New("rendering aborted")

var defaultRenderer = newRenderer(fluximagevector.ImageVector())

func newRenderer(vector imagevector.ImageVector) *renderer {
	return &renderer{imageVector: vector, cache: lru.New(MaxCachedRenders)}
}

// cached returns the result stored for key or runs render and stores it. Failures are not kept,
// so a later call tries again.
func (r *renderer) cached(key string, render func() ([]byte, error)) ([]byte, error) {
	r.mu.Lock()
	if v, ok := r.cache.Get(key); ok {
		r.mu.Unlock()
		call := v.(*renderCall)
		<-call.done
		return call.data, call.err
	}
	// The error stays set if render panics, so waiters do not take an empty result for success.
	call := &renderCall{done: make(chan struct{}), err: errRenderAborted}
	r.cache.Add(key, call)
	r.mu.Unlock()

	defer func() {
		if call.err != nil {
			r.mu.Lock()
			// A later call may have replaced the entry after an eviction; only this one goes.
			if v, ok := r.cache.Get(key); ok && v.(*renderCall) == call {
				r.cache.Remove(key)
			}
			r.mu.Unlock()
		}
		close(call.done)
	}()
	call.data, call.err = render()
	return call.data, call.err
}
