// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Process", func() {
	// startIgnoringTerm starts a process that does not end on SIGTERM, as a controller stuck in
	// its start does not, once it is ready to be signalled.
	startIgnoringTerm := func() *Process {
		GinkgoHelper()
		cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`)
		out, err := cmd.StdoutPipe()
		Expect(err).NotTo(HaveOccurred())
		process, err := StartProcess(cmd)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = process.cmd.Process.Kill() })
		// The trap is set once the shell wrote the line.
		_, err = out.Read(make([]byte, len("ready\n")))
		Expect(err).NotTo(HaveOccurred())
		return process
	}

	It("kills a process that outlives SIGTERM once abort is closed, before its grace period ends", func() {
		process := startIgnoringTerm()
		abort := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			process.TerminateUnless(time.Hour, abort)
		}()
		Consistently(process.Done()).WithTimeout(time.Second).ShouldNot(BeClosed(), "SIGTERM ended the process")
		close(abort)
		Eventually(done).WithTimeout(time.Minute).Should(BeClosed())
		Expect(process.Exited()).To(BeTrue())
	})

	It("kills a process that outlives SIGTERM after the grace period without abort", func() {
		process := startIgnoringTerm()
		start := time.Now()
		process.TerminateUnless(time.Second, nil)
		Expect(process.Exited()).To(BeTrue())
		Expect(time.Since(start)).To(BeNumerically(">=", time.Second))
	})
})

var _ = Describe("FreePort", func() {
	It("never returns a port twice in a process", func() {
		seen := map[int]bool{}
		for range 300 {
			port, err := FreePort()
			Expect(err).NotTo(HaveOccurred())
			Expect(seen).NotTo(HaveKey(port))
			seen[port] = true
		}
	})
})
