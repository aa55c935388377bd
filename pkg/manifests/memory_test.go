// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	goruntime "runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/openapi"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

var _ = Describe("memory", func() {
	// kustomize parses Kubernetes' OpenAPI schema into a global on first use and keeps it, ~7 MiB
	// that an extension which renders a handful of times in its life has no use for.
	It("keeps no kustomize OpenAPI schema after rendering", func() {
		_, err := newRenderer(fluximagevector.ImageVector()).renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())

		held := liveHeap()
		openapi.ResetOpenAPI()
		freed := int64(held) - int64(liveHeap())
		Expect(freed).To(BeNumerically("<", 1<<20), "dropping kustomize's schema freed %d bytes", freed)
	})
})

func liveHeap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
