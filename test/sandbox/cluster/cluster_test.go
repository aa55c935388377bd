// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"path/filepath"

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

var _ = Describe("StartSeedAndShoot", func() {
	It("stops the shoot when the seed fails to start, and says why", func() {
		Expect(RequireAssets()).To(Succeed())
		tmp := GinkgoT().TempDir()
		GinkgoT().Setenv("TMPDIR", tmp)
		missing := filepath.Join(tmp, "no-such-crds")
		seed, shoot, err := StartSeedAndShoot(nil, []string{missing})
		Expect(err).To(MatchError(ContainSubstring("failed starting seed API server")))
		Expect(err).To(MatchError(ContainSubstring(missing)))
		Expect(seed).To(BeNil())
		Expect(shoot).To(BeNil())
		// Both API servers' certificate and data directories are gone: nothing of them runs on.
		Expect(os.ReadDir(tmp)).To(BeEmpty())
	})
})
