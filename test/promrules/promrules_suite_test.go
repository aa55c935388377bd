// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package promrules tests the alerting and recording rules of the extension, those of the seed
// (the chart's PrometheusRule) and those of each shoot (pkg/component/monitoring), with Prometheus'
// own engine: `promtool test rules`, run by gardener's rule test helper as gardener tests its own
// rules. The input series have the shape of the series the extension and the delivered controllers
// really export, recorded from their /metrics in the sandbox (samples/), and every query of the
// dashboards parses.
package promrules_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPromRules(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Prometheus Rules Suite")
}

// promtool is the path of Prometheus' promtool.
var promtool string

var _ = BeforeSuite(func() {
	promtool = os.Getenv("PROMTOOL")
	Expect(promtool).NotTo(BeEmpty(), "PROMTOOL must point at promtool (hack/build-promtool.sh)")
	_, err := os.Stat(promtool)
	Expect(err).NotTo(HaveOccurred())
	// gardener's rule test helper runs promtool from PATH.
	Expect(os.Setenv("PATH", filepath.Dir(promtool)+string(os.PathListSeparator)+os.Getenv("PATH"))).To(Succeed())
})
