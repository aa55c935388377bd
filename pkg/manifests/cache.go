package manifests

import (
	"errors"
	"sync"

	"github.com/gardener/gardener/pkg/utils/imagevector"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

// renderer renders with one image vector and remembers every result: the output depends only on
// the options, and rendering Flux runs kustomize, which costs far more than keeping the bytes. The
// set of distinct options is small (versions x component sets x namespaces x registries configured
// by the operator), so entries are never evicted.
type renderer struct {
	imageVector imagevector.ImageVector

	mu    sync.Mutex
	cache map[string]*renderCall
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
	return &renderer{imageVector: vector, cache: map[string]*renderCall{}}
}

// cached returns the result stored for key or runs render and stores it. Failures are not kept,
// so a later call tries again.
func (r *renderer) cached(key string, render func() ([]byte, error)) ([]byte, error) {
	r.mu.Lock()
	if call, ok := r.cache[key]; ok {
		r.mu.Unlock()
		<-call.done
		return call.data, call.err
	}
	// The error stays set if render panics, so waiters do not take an empty result for success.
	call := &renderCall{done: make(chan struct{}), err: errRenderAborted}
	r.cache[key] = call
	r.mu.Unlock()

	defer func() {
		if call.err != nil {
			r.mu.Lock()
			delete(r.cache, key)
			r.mu.Unlock()
		}
		close(call.done)
	}()
	call.data, call.err = render()
	return call.data, call.err
}
