// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/VictoriaMetrics/metricsql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// promQLFunctions are the PromQL functions and aggregations the rules and the dashboard may use.
// The parser (MetricsQL, which gardener's dependencies bring along) accepts a superset of PromQL;
// this list keeps the expressions to what the seed's Prometheus evaluates.
var promQLFunctions = []string{"sum", "max", "min", "count", "avg", "rate", "increase", "time", "absent", "histogram_quantile"}

// existingMetrics are the metrics an expression may name: the extension's own and the work queue
// metrics of controller-runtime's registry, named by controller-runtime's constants.
func existingMetrics() []string {
	names := metrics.Names()
	for _, key := range []string{ctrlmetrics.DepthKey, ctrlmetrics.AddsKey, ctrlmetrics.RetriesKey, ctrlmetrics.LongestRunningProcessorKey} {
		names = append(names, ctrlmetrics.WorkQueueSubsystem+"_"+key)
	}
	return names
}

// checkExpression parses a PromQL expression and returns the metrics it names; it fails the spec
// on a syntax error, an unknown function or a metric that does not exist.
func checkExpression(expr string) []string {
	GinkgoHelper()
	parsed, err := metricsql.Parse(expr)
	Expect(err).NotTo(HaveOccurred(), "expression %q", expr)
	var names []string
	metricsql.VisitAll(parsed, func(e metricsql.Expr) {
		switch e := e.(type) {
		case *metricsql.MetricExpr:
			for _, filters := range e.LabelFilterss {
				for _, f := range filters {
					if f.Label == "__name__" {
						names = append(names, f.Value)
					}
				}
			}
		case *metricsql.FuncExpr:
			Expect(promQLFunctions).To(ContainElement(e.Name), "function of %q", expr)
		case *metricsql.AggrFuncExpr:
			Expect(promQLFunctions).To(ContainElement(e.Name), "aggregation of %q", expr)
		}
	})
	Expect(names).NotTo(BeEmpty(), "expression %q names no metric", expr)
	for _, name := range names {
		Expect(existingMetrics()).To(ContainElement(name), "metric of %q", expr)
	}
	return names
}

// docAnchors returns the anchors GitHub gives the headings of a markdown file.
// runbookDoc is the page of the runbooks that the alerts link, relative to the repository root.
const runbookDoc = "docs/operations/monitoring.md"

func docAnchors(path string) []string {
	GinkgoHelper()
	var anchors []string
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(readRepoFile(path)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		anchors = append(anchors, strings.ReplaceAll(drop.ReplaceAllString(heading, ""), " ", "-"))
	}
	return anchors
}

var _ = Describe("monitoring", func() {
	prometheusRule := func(objs []*unstructured.Unstructured) *monitoringv1.PrometheusRule {
		GinkgoHelper()
		return typed[monitoringv1.PrometheusRule](find(objs, "PrometheusRule", deploymentName))
	}

	It("ships alerting rules to the seed Prometheus whose expressions parse and name existing metrics", func() {
		objs := mustRender(namespace, gardenletValues())
		rule := prometheusRule(objs)
		Expect(rule.Namespace).To(Equal(namespace))
		Expect(rule.Labels).To(HaveKeyWithValue("prometheus", "seed"), "the seed Prometheus selects rules by this label")

		anchors := docAnchors(runbookDoc)
		var alerts, named []string
		for _, group := range rule.Spec.Groups {
			for _, r := range group.Rules {
				Expect(r.Record).To(BeEmpty())
				alerts = append(alerts, r.Alert)
				named = append(named, checkExpression(r.Expr.String())...)
				Expect(r.For).NotTo(BeNil(), r.Alert)
				_, err := model.ParseDuration(string(*r.For))
				Expect(err).NotTo(HaveOccurred(), r.Alert)
				Expect(r.Labels).To(HaveKeyWithValue("topology", "seed"), r.Alert)
				Expect([]string{"critical", "warning", "info"}).To(ContainElement(r.Labels["severity"]), r.Alert)
				Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
				Expect(r.Annotations).To(HaveKey("description"), r.Alert)
				runbook, anchor, found := strings.Cut(r.Annotations["runbook_url"], "#")
				Expect(found).To(BeTrue(), "%s links a section", r.Alert)
				u, err := url.Parse(runbook)
				Expect(err).NotTo(HaveOccurred(), r.Alert)
				Expect(u.IsAbs() && u.Scheme == "https" && u.Host != "").To(BeTrue(), "%s: the default runbook URL %q is absolute, so that it can be opened from the alert", r.Alert, runbook)
				Expect(u.Path).To(HaveSuffix("/"+runbookDoc), r.Alert)
				Expect(anchors).To(ContainElement(anchor), "%s links a section of %s", r.Alert, runbookDoc)
				Expect(anchor).To(HavePrefix("runbook-"), r.Alert)
			}
		}
		Expect(alerts).To(ContainElements(
			"ShootFluxBootstrapFailing",
			"ShootFluxConfigurationErrors",
			"ShootFluxHostKeyScanFailures",
			"ShootFluxNotReconciling",
			"ShootFluxManagedResourceWriteRateHigh",
		))
		Expect(named).To(ContainElements(
			"shoot_flux_oldest_failing_bootstrap_seconds",
			"shoot_flux_reconcile_errors_total",
			"shoot_flux_host_key_scans_total",
			"shoot_flux_heartbeat_renew_timestamp_seconds",
			"shoot_flux_managed_resource_writes_total",
		))
	})

	It("fails the check of an expression that does not parse or names a metric that does not exist", func() {
		_, err := metricsql.Parse("sum(rate(shoot_flux_operations_total[5m])")
		Expect(err).To(HaveOccurred())
		Expect(existingMetrics()).NotTo(ContainElement("shoot_flux_reconciles_total"))
		Expect(promQLFunctions).NotTo(ContainElement("range_median"), "MetricsQL's own functions are refused")
	})

	It("renders the thresholds and the runbook URL from the values", func() {
		rule := prometheusRule(mustRender(namespace, merge(gardenletValues(), map[string]any{
			"monitoring": map[string]any{
				"runbookURL": "https://git.example.com/shoot-flux/blob/v1.2.3/" + runbookDoc,
				"alerts":     map[string]any{"bootstrapFailingSeconds": 3600, "managedResourceWritesPerSecond": 5},
			},
			"controllers": map[string]any{"heartbeat": map[string]any{"renewIntervalSeconds": 60}},
		})))
		exprs := map[string]string{}
		for _, r := range rule.Spec.Groups[0].Rules {
			exprs[r.Alert] = r.Expr.String()
			Expect(r.Annotations["runbook_url"]).To(HavePrefix("https://git.example.com/shoot-flux/blob/v1.2.3/" + runbookDoc + "#runbook-"))
		}
		Expect(exprs["ShootFluxBootstrapFailing"]).To(HaveSuffix("> 3600"))
		Expect(exprs["ShootFluxManagedResourceWriteRateHigh"]).To(HaveSuffix("> 5"))
		Expect(exprs["ShootFluxNotReconciling"]).To(ContainSubstring("> 600)"), "ten renewal intervals")
	})

	It("ships a dashboard to the seed's Plutono whose queries parse and name existing metrics", func() {
		cm := typed[corev1.ConfigMap](find(mustRender(namespace, gardenletValues()), "ConfigMap", deploymentName+"-dashboard"))
		Expect(cm.Namespace).To(Equal("garden"), "the seed's Plutono reads dashboards from its own namespace")
		Expect(cm.Labels).To(HaveKeyWithValue("dashboard.monitoring.gardener.cloud/seed", "true"))
		Expect(cm.Data).To(HaveLen(1))
		var dashboard struct {
			Title  string `json:"title"`
			UID    string `json:"uid"`
			Panels []struct {
				Title      string `json:"title"`
				Datasource string `json:"datasource"`
				Targets    []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		Expect(json.Unmarshal([]byte(cm.Data["shoot-flux.json"]), &dashboard)).To(Succeed())
		Expect(dashboard.UID).NotTo(BeEmpty())
		Expect(dashboard.Panels).NotTo(BeEmpty())
		var named []string
		for _, p := range dashboard.Panels {
			Expect(p.Datasource).To(Equal("prometheus-seed"), p.Title)
			Expect(p.Targets).NotTo(BeEmpty(), p.Title)
			for _, t := range p.Targets {
				named = append(named, checkExpression(t.Expr)...)
			}
		}
		for _, name := range metrics.Names() {
			Expect(named).To(ContainElement(name), "the dashboard shows every metric of the extension")
		}
	})

	It("ships nothing with monitoring disabled", func() {
		objs := mustRender(namespace, merge(gardenletValues(), map[string]any{"monitoring": map[string]any{"enabled": false}}))
		Expect(slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool {
			return o.GetKind() == "PrometheusRule" || strings.HasSuffix(o.GetName(), "-dashboard")
		})).To(BeFalse(), "%v", kindsAndNames(objs))
	})
})
