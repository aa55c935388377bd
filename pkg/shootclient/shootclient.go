// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package shootclient builds the extension's clients for a shoot's API server. The shoot's owner
// decides what that API server serves, and one extension process serves every shoot of a seed, so
// a client's memory must not depend on the shoot: it maps a fixed set of kinds instead of
// discovering the shoot's API (whose discovery document a CRD with many versions and categories
// makes as large as the owner likes), and it refuses responses over MaxResponseBytes.
package shootclient

import (
	"context"
	"fmt"
	"io"
	"net/http"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/util"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxResponseBytes bounds every response a shoot client reads. etcd stores no object over 1.5 MiB
// (its default request limit), so no single object the extension reads is larger; a bigger
// response is a list or a document the shoot's owner inflated.
const MaxResponseBytes = 2 << 20

// New returns a client for the shoot of the seed namespace that reads and writes only kinds, all
// namespaced, with responses bounded by MaxResponseBytes. It reaches the shoot with gardener's
// kubeconfig Secret and restOptions, like the clients of gardener's extension library.
func New(ctx context.Context, seed client.Client, namespace string, restOptions extensionsconfigv1alpha1.RESTOptions, kinds ...schema.GroupVersionKind) (client.Client, error) {
	return NewWithOptions(ctx, seed, namespace, restOptions, client.Options{Mapper: RESTMapper(kinds...)})
}

// NewWithOptions is New for callers that map other kinds (cluster-scoped ones too) or need
// another scheme. opts.Mapper must be set, and be static for the reasons above; opts.HTTPClient
// is replaced by one bounded by MaxResponseBytes.
func NewWithOptions(ctx context.Context, seed client.Client, namespace string, restOptions extensionsconfigv1alpha1.RESTOptions, opts client.Options) (client.Client, error) {
	if opts.Mapper == nil {
		return nil, fmt.Errorf("a shoot client needs a static REST mapper")
	}
	// The library reads the Secret and applies the options; with a mapper it sends no request.
	// Its client cannot be given a transport, so only its config is used.
	cfg, _, err := util.NewClientForShoot(ctx, seed, namespace, client.Options{Mapper: opts.Mapper}, restOptions)
	if err != nil {
		return nil, err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return LimitResponses(rt, MaxResponseBytes) })
	if opts.HTTPClient, err = rest.HTTPClientFor(cfg); err != nil {
		return nil, fmt.Errorf("failed to create the HTTP client of the shoot: %w", err)
	}
	c, err := client.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("failed to create the shoot client: %w", err)
	}
	return c, nil
}

// RESTMapper maps exactly kinds, all namespaced, to their resources; an unlisted kind has no
// mapping (meta.IsNoMatchError).
func RESTMapper(kinds ...schema.GroupVersionKind) meta.RESTMapper {
	var versions []schema.GroupVersion
	for _, gvk := range kinds {
		versions = append(versions, gvk.GroupVersion())
	}
	m := meta.NewDefaultRESTMapper(versions)
	for _, gvk := range kinds {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

// ResponseTooLargeError is the error of a response over the limit of LimitResponses.
type ResponseTooLargeError struct {
	// URL is the request's URL.
	URL string
	// Limit is the limit in bytes.
	Limit int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("response of the shoot's API server to %s exceeds the limit of %d bytes (%d MiB)", e.URL, e.Limit, e.Limit>>20)
}

// LimitResponses returns a round tripper that fails a response whose body is over limit bytes:
// at once if its Content-Length says so, otherwise when reading reaches the limit, so that no more
// than limit bytes of it are read into memory. It is meant for requests that read objects, not
// for watches, whose stream is one long response.
func LimitResponses(rt http.RoundTripper, limit int64) http.RoundTripper {
	return &limitedRoundTripper{next: rt, limit: limit}
}

type limitedRoundTripper struct {
	next  http.RoundTripper
	limit int64
}

func (l *limitedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	tooLarge := &ResponseTooLargeError{URL: req.URL.Redacted(), Limit: l.limit}
	if resp.ContentLength > l.limit {
		_ = resp.Body.Close()
		return nil, tooLarge
	}
	resp.Body = &limitedBody{body: resp.Body, remaining: l.limit, err: tooLarge}
	return resp, nil
}

// limitedBody reads up to remaining bytes of body, then fails with err.
type limitedBody struct {
	body      io.ReadCloser
	remaining int64
	err       error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.remaining <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		if n, err := b.body.Read(one[:]); n > 0 {
			return 0, b.err
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.remaining {
		p = p[:b.remaining]
	}
	n, err := b.body.Read(p)
	b.remaining -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
