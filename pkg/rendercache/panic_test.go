// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package rendercache

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a build that panics", func() {
	It("leaves its waiters an error, not an empty result, and keeps nothing", func() {
		c := New(10, 1<<20)
		key := KeyOf("test", "a")
		var inflight *call
		Expect(func() {
			_, _ = Get(c, key, func() ([]byte, int64, error) {
				inflight = c.inflight[key]
				panic("boom")
			})
		}).To(PanicWith("boom"))

		// Waiters read the call once done is closed.
		Expect(inflight.done).To(BeClosed())
		Expect(inflight.err).To(MatchError(ErrBuildAborted))
		Expect(c.inflight).To(BeEmpty())
		Expect(c.Len()).To(BeZero())
	})
})
