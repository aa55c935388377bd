// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helmrepo_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/helmrepo"
)

var _ = Describe("Server", func() {
	chart := helmrepo.Chart{
		Name: "demo", Version: "0.1.0", Values: "message: hello\n",
		Templates: map[string]string{"configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message }}\n"},
	}

	get := func(url string) []byte {
		GinkgoHelper()
		resp, err := http.Get(url) //nolint:gosec // the test's own server
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return body
	}

	It("serves an index whose entries point at archives with the listed digest", func() {
		s, err := helmrepo.Start(chart)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)

		var index struct {
			APIVersion string `json:"apiVersion"`
			Entries    map[string][]struct {
				Name, Version, Digest string
				URLs                  []string `json:"urls"`
			} `json:"entries"`
		}
		Expect(yaml.Unmarshal(get(s.URL()+"/index.yaml"), &index)).To(Succeed())
		Expect(index.APIVersion).To(Equal("v1"))
		Expect(index.Entries["demo"]).To(HaveLen(1))
		entry := index.Entries["demo"][0]
		Expect(entry.Version).To(Equal("0.1.0"))
		Expect(entry.URLs).To(ConsistOf(s.URL() + "/demo-0.1.0.tgz"))

		archive := get(entry.URLs[0])
		sum := sha256.Sum256(archive)
		Expect(hex.EncodeToString(sum[:])).To(Equal(entry.Digest))
		Expect(s.Requests("demo-0.1.0.tgz")).To(Equal(1))

		files := map[string]string{}
		gz, err := gzip.NewReader(bytes.NewReader(archive))
		Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(gz)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
			content, err := io.ReadAll(tr)
			Expect(err).NotTo(HaveOccurred())
			files[hdr.Name] = string(content)
		}
		Expect(files).To(HaveKeyWithValue("demo/values.yaml", "message: hello\n"))
		Expect(files).To(HaveKey("demo/templates/configmap.yaml"))
		Expect(files["demo/Chart.yaml"]).To(ContainSubstring("name: demo"))
	})

	It("answers 404 for anything else", func() {
		s, err := helmrepo.Start(chart)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
		resp, err := http.Get(s.URL() + "/other-0.1.0.tgz") //nolint:gosec // the test's own server
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	})

	It("produces the same archive every time", func() {
		a, err := chart.Archive()
		Expect(err).NotTo(HaveOccurred())
		b, err := chart.Archive()
		Expect(err).NotTo(HaveOccurred())
		Expect(a).To(Equal(b))
	})
})
