// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestStackit(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Stackit Conversion Suite")
}
