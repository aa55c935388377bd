// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package shootclient_test

import (
	"errors"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// countingBody is an endless response body that counts the bytes read from it.
type countingBody struct {
	size   int64
	read   int64
	closed bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.read >= b.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), b.size-b.read))
	for i := range n {
		p[i] = 'x'
	}
	b.read += int64(n)
	return n, nil
}

func (b *countingBody) Close() error { b.closed = true; return nil }

type fixedRoundTripper struct{ resp *http.Response }

func (f fixedRoundTripper) RoundTrip(*http.Request) (*http.Response, error) { return f.resp, nil }

var _ = Describe("LimitResponses", func() {
	const limit = 1 << 20

	get := func(body *countingBody, contentLength int64) (*http.Response, error) {
		rt := LimitResponses(fixedRoundTripper{resp: &http.Response{StatusCode: http.StatusOK, Body: body, ContentLength: contentLength}}, limit)
		req, err := http.NewRequest(http.MethodGet, "https://api.shoot.invalid/apis/x/v1/namespaces/a/things/b", nil)
		Expect(err).NotTo(HaveOccurred())
		return rt.RoundTrip(req)
	}

	It("passes a body of the limit", func() {
		body := &countingBody{size: limit}
		resp, err := get(body, -1)
		Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(data).To(HaveLen(limit))
	})

	It("fails a body over the limit when reading reaches it, without reading the rest", func() {
		body := &countingBody{size: 100 * limit}
		resp, err := get(body, -1)
		Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(resp.Body)
		var tooLarge *ResponseTooLargeError
		Expect(errors.As(err, &tooLarge)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("/apis/x/v1/namespaces/a/things/b exceeds the limit of 1048576 bytes (1 MiB)")))
		Expect(data).To(HaveLen(limit))
		Expect(body.read).To(Equal(int64(limit + 1)))
		Expect(resp.Body.Close()).To(Succeed())
		Expect(body.closed).To(BeTrue())
	})

	It("fails a response whose Content-Length is over the limit at once and closes its body", func() {
		body := &countingBody{size: limit + 1}
		resp, err := get(body, limit+1)
		Expect(resp).To(BeNil())
		Expect(err).To(MatchError(ContainSubstring("exceeds the limit of 1048576 bytes")))
		Expect(body.read).To(BeZero())
		Expect(body.closed).To(BeTrue())
	})

	It("keeps the limit to 2 MiB, above etcd's 1.5 MiB object limit", func() {
		Expect(MaxResponseBytes).To(Equal(2 << 20))
		Expect(MaxResponseBytes).To(BeNumerically(">", 3<<19))
	})
})

var _ = Describe("RESTMapper", func() {
	kind := schema.GroupVersionKind{Group: "gitops.kluctl.io", Version: "v1beta1", Kind: "KluctlDeployment"}
	repo := schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

	It("maps the given kinds to their namespaced resources", func() {
		m := RESTMapper(kind, repo)
		mapping, err := m.RESTMapping(kind.GroupKind(), kind.Version)
		Expect(err).NotTo(HaveOccurred())
		Expect(mapping.Resource).To(Equal(kind.GroupVersion().WithResource("kluctldeployments")))
		Expect(mapping.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
		mapping, err = m.RESTMapping(repo.GroupKind(), repo.Version)
		Expect(err).NotTo(HaveOccurred())
		Expect(mapping.Resource.Resource).To(Equal("gitrepositories"))
	})

	It("maps no other kind", func() {
		_, err := RESTMapper(kind).RESTMapping(schema.GroupKind{Group: "", Kind: "Secret"}, "v1")
		Expect(meta.IsNoMatchError(err)).To(BeTrue(), "an unlisted kind has no mapping")
	})
})
