// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

var _ = Describe("admissionValues", func() {
	image := Pushed{Repository: "registry.example.com/g/extensions/gardener-extension-shoot-flux-admission", Tag: "v1.2.3", Digest: "sha256:aaaa"}
	chart := Pushed{Repository: "registry.example.com/g/charts/extensions/gardener-extension-shoot-flux-admission", Tag: "v1.2.3", Digest: "sha256:bbbb"}

	It("pins the runtime subchart's image by digest and names the chart's digest", func() {
		data, err := admissionValues(image, chart)
		Expect(err).NotTo(HaveOccurred())
		var values map[string]any
		Expect(yaml.Unmarshal(data, &values)).To(Succeed())
		Expect(values).To(Equal(map[string]any{"runtime": map[string]any{"image": map[string]any{
			"repository": image.Repository, "tag": "sha256:aaaa",
		}}}))
		Expect(string(data)).To(HavePrefix("# Values of the admission umbrella chart oci://" + chart.Repository + ", version v1.2.3 (digest sha256:bbbb).\n"))
	})

	It("refuses an image or chart that was not pushed", func() {
		_, err := admissionValues(Pushed{Repository: image.Repository}, chart)
		Expect(err).To(HaveOccurred())
		_, err = admissionValues(image, Pushed{Repository: chart.Repository})
		Expect(err).To(HaveOccurred())
	})
})
