// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The suite tests what needs no API server; the suites under test/ start them.
func TestCluster(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Sandbox Cluster Suite")
}
