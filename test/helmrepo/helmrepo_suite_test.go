// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helmrepo_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestHelmRepo(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Helm Repository Suite")
}
