// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestManifests(t *testing.T) {
	// Rendering must never download: every proxy points at a closed port, so any HTTP request
	// fails. This has to happen before anything in the process asks net/http for the proxy, which
	// reads the environment only once.
	for _, env := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(env, "http://127.0.0.1:1")
	}
	for _, env := range []string{"NO_PROXY", "no_proxy"} {
		t.Setenv(env, "")
		if err := os.Unsetenv(env); err != nil {
			t.Fatal(err)
		}
	}

	RegisterFailHandler(Fail)
	RunSpecs(t, "Manifests Suite")
}
