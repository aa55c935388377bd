// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The deployed extension's process", func() {
	It("refuses to read the memory of an extension that does not run as deployed", func() {
		_, err := (&Sandbox{}).ExtensionMemory()
		Expect(err).To(MatchError(ContainSubstring("does not run as deployed")))
	})
})
