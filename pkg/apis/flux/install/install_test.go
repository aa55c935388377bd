// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package install_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
)

var _ = Describe("NewStrictDecoder", func() {
	var decoder runtime.Decoder

	BeforeEach(func() {
		decoder = NewStrictDecoder(NewScheme())
	})

	It("decodes a versioned document into the defaulted internal type", func() {
		cfg := &flux.FluxConfig{}
		_, _, err := decoder.Decode([]byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","source":{"url":"ssh://git@host/r"}}`), nil, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source).To(Equal(&flux.Source{URL: "ssh://git@host/r", Ref: flux.GitRef{Branch: "main"}, Path: ".", Type: flux.RepositoryTypePrivate}))
		Expect(cfg.Bootstrap.Mode).To(Equal(flux.BootstrapModeKluctl))
	})

	It("rejects unknown fields", func() {
		_, _, err := decoder.Decode([]byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","source":{"uri":"ssh://git@host/r"}}`), nil, &flux.FluxConfig{})
		Expect(err).To(MatchError(ContainSubstring(`unknown field "source.uri"`)))
	})

	It("decodes a status", func() {
		status := &flux.FluxStatus{}
		_, _, err := decoder.Decode([]byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxStatus","fluxVersion":"v2.9.5","warnings":["w"]}`), nil, status)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(Equal(&flux.FluxStatus{FluxVersion: "v2.9.5", Warnings: []string{"w"}}))
	})
})
