// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package releases_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

var _ = Describe("Kubernetes ranges", func() {
	It("has a range for every embedded Flux release", func() {
		Expect(manifests.FluxVersions()).NotTo(BeEmpty())
		for _, release := range manifests.FluxVersions() {
			r, ok := releases.FluxKubernetesRange(release)
			Expect(ok).To(BeTrue(), "Flux %s has no Kubernetes range in pkg/releases/kubernetes.go", release)
			Expect(r.Contains(r.Min)).To(BeTrue(), "Flux %s: %s", release, r)
			Expect(r.Contains(r.Max+".99")).To(BeTrue(), "Flux %s: %s", release, r)
		}
	})

	DescribeTable("tells which Kubernetes versions a Flux release supports",
		func(release, kubernetes string, supported bool) {
			Expect(releases.FluxSupportsKubernetes(release, kubernetes)).To(Equal(supported))
		},
		Entry("v2.7 on its floor", "v2.7.5", "1.32.0", true),
		Entry("v2.7 on its ceiling's last patch", "v2.7.5", "1.34.9", true),
		Entry("v2.7 below its floor", "v2.7.5", "1.31.12", false),
		Entry("v2.7 above its ceiling", "v2.7.5", "1.35.0", false),
		Entry("v2.8 on 1.35", "v2.8.1", "v1.35.2", true),
		Entry("v2.9 on 1.34.0, below its patch floor", "v2.9.5", "1.34.0", false),
		Entry("v2.9 on 1.34.1", "v2.9.5", "1.34.1", true),
		Entry("v2.9 on 1.36", "v2.9.5", "1.36.4", true),
		Entry("v2.9 on 1.33", "v2.9.5", "1.33.5", false),
		Entry("a release without an entry", "v2.10.0", "1.35.0", false),
		Entry("a version that does not parse", "v2.9.5", "latest", false),
	)

	It("picks the newest release in range", func() {
		embedded := []string{"v2.7.5", "v2.9.5"}
		Expect(releases.NewestForKubernetes(embedded, "1.33.4")).To(Equal("v2.7.5"))
		Expect(releases.NewestForKubernetes(embedded, "1.34.2")).To(Equal("v2.9.5"))
		Expect(releases.NewestForKubernetes(embedded, "1.31.0")).To(BeEmpty())
	})

	It("names the range and the fix in its warning", func() {
		embedded := []string{"v2.7.5", "v2.9.5"}
		Expect(releases.KubernetesWarning("Flux", "v2.9.5", "1.34.2", embedded)).To(BeEmpty())
		Expect(releases.KubernetesWarning("Flux", "v2.9.5", "1.33.4", embedded)).To(Equal(
			"Flux v2.9.5, which supports Kubernetes 1.34.1 to 1.36, not the shoot's 1.33.4; select flux.version v2.7, which supports it"))
		Expect(releases.KubernetesWarning("Flux", "v2.7.5", "1.37.0", embedded)).To(Equal(
			"Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, not the shoot's 1.37.0; no embedded Flux release supports it " +
				"(v2.7.5: Kubernetes 1.32 to 1.34, v2.9.5: Kubernetes 1.34.1 to 1.36): change the shoot's Kubernetes version"))
	})
})
