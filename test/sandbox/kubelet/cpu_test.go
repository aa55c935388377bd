// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Process state", func() {
	It("reads the parent and the CPU time from a stat line with spaces in the name", func() {
		p, err := ParseProcessStat([]byte("4242 (kube apiserver) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0"))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.PPID).To(Equal(17))
		Expect(p.CPU).To(Equal(3 * time.Second))
	})

	It("counts the CPU time of children that ended", func() {
		p, err := ParseProcessStat([]byte("4242 (kluctl) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 120 30 20 0 12 0 100 0 0"))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.CPU).To(Equal(4500 * time.Millisecond))
	})

	It("refuses a line without the command's parenthesis or with too few fields", func() {
		_, err := ParseProcessStat([]byte("4242 kluctl S 17"))
		Expect(err).To(MatchError(ContainSubstring("malformed stat")))
		_, err = ParseProcessStat([]byte("4242 (kluctl) S 17 4242"))
		Expect(err).To(MatchError(ContainSubstring("short stat")))
	})
})
