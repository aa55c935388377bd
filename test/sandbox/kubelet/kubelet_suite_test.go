// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The suite tests the kubelet and container runtime stand-ins without an API server; the
// integration suites run them against one.
func TestKubelet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Sandbox Kubelet Suite")
}
