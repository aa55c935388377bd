// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Start", func() {
	It("refuses to start without KUBEBUILDER_ASSETS, before it creates anything", func() {
		GinkgoT().Setenv(AssetsEnv, "")
		tmp := GinkgoT().TempDir()
		GinkgoT().Setenv("TMPDIR", tmp)
		c, err := Start("no-assets", nil, nil, Options{})
		Expect(err).To(MatchError(ContainSubstring("KUBEBUILDER_ASSETS is not set")))
		Expect(err).To(MatchError(ContainSubstring("make test-integration provides it; a missing one is a broken setup")))
		Expect(c).To(BeNil())
		Expect(os.ReadDir(tmp)).To(BeEmpty())
	})
})
