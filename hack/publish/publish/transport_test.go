// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"net/http"
	"net/http/httptest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("httpsOnly", func() {
	var server *httptest.Server

	BeforeEach(func() {
		server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		DeferCleanup(server.Close)
	})

	roundTrip := func(t httpsOnly, url string) error {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := t.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}

	DescribeTable("refuses plain HTTP to a host that is not a loopback one, which go-containerregistry falls back to",
		func(url string) {
			err := roundTrip(httpsOnly{base: http.DefaultTransport}, url)
			Expect(err).To(MatchError(ContainSubstring("refusing plain HTTP to")))
			Expect(err).To(MatchError(ContainSubstring("set INSECURE=true")))
		},
		Entry("a private address", "http://10.1.2.3:5000/v2/"),
		Entry("a .local name", "http://registry.local:5000/v2/"),
		Entry("a public name", "http://registry.example.com/v2/"),
	)

	It("lets plain HTTP to loopback addresses through, and every request with INSECURE", func() {
		Expect(roundTrip(httpsOnly{base: http.DefaultTransport}, server.URL+"/v2/")).To(Succeed())
		var reached []string
		recording := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			reached = append(reached, req.URL.String())
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		})
		Expect(roundTrip(httpsOnly{base: recording}, "http://localhost:5000/v2/")).To(Succeed())
		Expect(roundTrip(httpsOnly{base: recording}, "http://[::1]:5000/v2/")).To(Succeed())
		Expect(roundTrip(httpsOnly{base: recording}, "https://10.1.2.3:5000/v2/")).To(Succeed())
		Expect(roundTrip(httpsOnly{base: recording, allowHTTP: true}, "http://10.1.2.3:5000/v2/")).To(Succeed())
		Expect(reached).To(Equal([]string{"http://localhost:5000/v2/", "http://[::1]:5000/v2/", "https://10.1.2.3:5000/v2/", "http://10.1.2.3:5000/v2/"}))
	})
})

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
