// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

var _ = Describe("provider status", func() {
	It("writes apiVersion and kind and reads back what it wrote", func() {
		in := &v1alpha1.FluxStatus{Repository: "ssh://git@example.org/r", ProjectConfigHash: "abc", Warnings: []string{"w"}}
		raw, err := helper.EncodeStatus(in)
		Expect(err).NotTo(HaveOccurred())

		var fields map[string]any
		Expect(json.Unmarshal(raw.Raw, &fields)).To(Succeed())
		Expect(fields).To(HaveKeyWithValue("apiVersion", "shoot-flux.extensions.gardener.cloud/v1alpha1"))
		Expect(fields).To(HaveKeyWithValue("kind", "FluxStatus"))
		Expect(fields).To(HaveKeyWithValue("projectConfigHash", "abc"))

		out, err := helper.DecodeStatus(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Repository).To(Equal(in.Repository))
		Expect(out.ProjectConfigHash).To(Equal("abc"))
		Expect(out.Warnings).To(ConsistOf("w"))
	})

	It("writes the images as a map from component to image", func() {
		in := &v1alpha1.FluxStatus{FluxVersion: "v2.9.5", Images: map[string]string{"source-controller": "ghcr.io/fluxcd/source-controller:v1.9.5"}}
		raw, err := helper.EncodeStatus(in)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw.Raw)).To(ContainSubstring(`"images":{"source-controller":"ghcr.io/fluxcd/source-controller:v1.9.5"}`))

		out, err := helper.DecodeStatus(raw)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.FluxVersion).To(Equal("v2.9.5"))
		Expect(out.Images).To(Equal(in.Images))

		// A status of an earlier release has no images.
		out, err = helper.DecodeStatus(&runtime.RawExtension{Raw: []byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxStatus","fluxVersion":"v2.9.5"}`)})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Images).To(BeNil())
	})

	It("returns nil for an Extension without status", func() {
		Expect(helper.DecodeStatus(nil)).To(BeNil())
		Expect(helper.DecodeStatus(&runtime.RawExtension{})).To(BeNil())
	})

	It("ignores fields another release wrote", func() {
		out, err := helper.DecodeStatus(&runtime.RawExtension{Raw: []byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxStatus","ref":"branch:main","removedField":1}`)})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Ref).To(Equal("branch:main"))
	})

	It("rejects a status of another kind", func() {
		_, err := helper.DecodeStatus(&runtime.RawExtension{Raw: []byte(`{"apiVersion":"other.example.org/v1","kind":"Other"}`)})
		Expect(err).To(HaveOccurred())
	})
})
