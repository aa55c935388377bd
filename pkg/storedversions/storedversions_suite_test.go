// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestStoredversions(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Stored Versions Suite")
}
