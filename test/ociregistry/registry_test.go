// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package ociregistry_test

import (
	"archive/tar"
	"compress/gzip"
	"io"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/ociregistry"
)

var _ = Describe("Server", func() {
	var s *ociregistry.Server

	BeforeEach(func() {
		var err error
		s, err = ociregistry.Start("user", "secret")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(s.Close)
	})

	It("serves a pushed Flux artifact to clients with the credentials only", func() {
		digest, err := s.Push("fleet/app", "v1", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
		Expect(err).NotTo(HaveOccurred())
		ref, err := name.ParseReference(s.Host() + "/fleet/app:v1")
		Expect(err).NotTo(HaveOccurred())

		_, err = remote.Image(ref)
		Expect(err).To(MatchError(ContainSubstring("401 Unauthorized")))
		Expect(s.Unauthorised()).To(BeNumerically(">", 0))

		img, err := remote.Image(ref, remote.WithAuth(&authn.Basic{Username: "user", Password: "secret"}))
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Pulls()).To(BeNumerically(">", 0))
		d, err := img.Digest()
		Expect(err).NotTo(HaveOccurred())
		Expect(d.String()).To(Equal(digest))
		manifest, err := img.Manifest()
		Expect(err).NotTo(HaveOccurred())
		Expect(manifest.Config.MediaType).To(Equal(ociregistry.ConfigMediaType))
		Expect(manifest.Layers).To(HaveLen(1))
		Expect(manifest.Layers[0].MediaType).To(Equal(ociregistry.ContentMediaType))

		layers, err := img.Layers()
		Expect(err).NotTo(HaveOccurred())
		rc, err := layers[0].Compressed()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(rc.Close)
		gz, err := gzip.NewReader(rc)
		Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(gz)
		hdr, err := tr.Next()
		Expect(err).NotTo(HaveOccurred())
		Expect(hdr.Name).To(Equal("cm.yaml"))
		content, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(content)).To(Equal("kind: ConfigMap\n"))
	})
})
