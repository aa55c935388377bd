// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Process memory", func() {
	It("reads the resident memory from a status file", func() {
		m, err := ParseMemory(strings.NewReader("Name:\tgardener-ext\nVmHWM:\t  200000 kB\nVmRSS:\t  123456 kB\nRssAnon:\t   100000 kB\nRssFile:\t    23456 kB\nThreads:\t9\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(Equal(Memory{RSS: 123456 * 1024, Anon: 100000 * 1024, File: 23456 * 1024, Peak: 200000 * 1024}))
		Expect(m.String()).To(Equal("120.6 MiB (97.7 + 22.9)"))
		_, err = ParseMemory(strings.NewReader("Name:\tx\n"))
		Expect(err).To(MatchError(ContainSubstring("no VmRSS")))
	})

	It("reads the resident memory of a running process", func() {
		m, err := ProcessMemory(os.Getpid())
		Expect(err).NotTo(HaveOccurred())
		Expect(m.RSS).To(BeNumerically(">", 0))
		Expect(m.Anon + m.File).To(BeNumerically("<=", m.RSS))
		Expect(m.Peak).To(BeNumerically(">=", m.RSS))
	})
})
