// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"net"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/netcount"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Host policy of the SSH host key scan", func() {
	// The sandbox's policy allows loopback ports above 1024 for its git server; everything else of
	// the default policy applies.
	It("does not connect to hosts the policy refuses and tells every project the same", Label(labelDeployed), func(ctx SpecContext) {
		listener, err := netcount.Listen()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(listener.Close)
		// The listener is on loopback like the git server, but behind a name the policy refuses.
		port := listener.Port()
		targets := []string{
			fmt.Sprintf("localhost:%d", port),
			"kubernetes.default.svc:443",
			"169.254.169.254:22",
			"127.0.0.1:22",
		}
		messages := map[string]bool{}
		for i, target := range targets {
			project := fmt.Sprintf("ssrf-%d", i)
			projectNamespace := newProject(ctx, project)
			setProjectConfig(ctx, projectNamespace, legacyConfig("ssh://git@"+target+"/fleet", "main", "private"))
			h := createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
			lastErr, err := h.WaitError(ctx, errorTimeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(lastErr.Description).To(ContainSubstring(deploykey.ScanFailedMessage), "target %s", target)
			host, portText, err := net.SplitHostPort(target)
			Expect(err).NotTo(HaveOccurred())
			message := strings.ReplaceAll(lastErr.Description, net.JoinHostPort(host, portText), "HOST")
			messages[strings.ReplaceAll(message, projectNamespace, "PROJECT")] = true
		}
		Expect(messages).To(HaveLen(1), "messages: %v", messages)
		Expect(listener.Accepted()).To(BeZero())
	})
})
