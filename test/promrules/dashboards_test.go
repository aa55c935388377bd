// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package promrules_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/charts"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
)

// dashboard is the part of a Plutono dashboard with its queries.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// plutonoVariables are the variables Plutono replaces in a query before it sends it to
// Prometheus, with values of the kind it puts there.
var plutonoVariables = strings.NewReplacer("$__rate_interval", "4m", "$__interval", "1m", "$__range", "6h")

// dashboardQueries returns the queries of a dashboard as Prometheus receives them, by panel.
func dashboardQueries(data []byte) map[string][]string {
	GinkgoHelper()
	var d dashboard
	Expect(json.Unmarshal(data, &d)).To(Succeed())
	queries := map[string][]string{}
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			if t.Expr != "" {
				queries[p.Title] = append(queries[p.Title], plutonoVariables.Replace(t.Expr))
			}
		}
	}
	Expect(queries).NotTo(BeEmpty())
	return queries
}

// seedDashboards returns the dashboards the chart ships to the seed's Plutono, by file.
func seedDashboards() map[string][]byte {
	GinkgoHelper()
	dir := charts.ExtensionChartName + "/dashboards"
	entries, err := charts.FS.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := charts.FS.ReadFile(dir + "/" + e.Name())
		Expect(err).NotTo(HaveOccurred())
		files[e.Name()] = data
	}
	Expect(files).NotTo(BeEmpty())
	return files
}

// checkQueries runs promtool's rule check on the queries, each as the expression of a recording
// rule: it parses them with Prometheus' own parser.
func checkQueries(queries map[string][]string) {
	GinkgoHelper()
	out, err := promtoolCheckQueries(queries)
	Expect(err).NotTo(HaveOccurred(), "%s", out)
}

func promtoolCheckQueries(queries map[string][]string) ([]byte, error) {
	GinkgoHelper()
	type rule struct {
		Record string `json:"record"`
		Expr   string `json:"expr"`
	}
	var rules []rule
	for panel, exprs := range queries {
		for _, expr := range exprs {
			By(fmt.Sprintf("%s: %s", panel, expr))
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard_query_%d", len(rules)), Expr: expr})
		}
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(GinkgoT().TempDir(), "dashboard.rules.yaml")
	Expect(os.WriteFile(file, data, 0o600)).To(Succeed())
	return exec.Command(promtool, "check", "rules", file).CombinedOutput() // #nosec G204 -- the test's own promtool and file.
}

var _ = Describe("Dashboards", func() {
	It("of the seed have queries that parse", func() {
		for name, data := range seedDashboards() {
			By(name)
			checkQueries(dashboardQueries(data))
		}
	})

	It("of the shoot have queries that parse", func() {
		checkQueries(dashboardQueries([]byte(monitoring.Dashboard())))
	})

	It("are checked: a query that does not parse fails", func() {
		out, err := promtoolCheckQueries(map[string][]string{"broken": {"sum by (job (up)"}})
		Expect(err).To(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("parse error"))
	})
})
