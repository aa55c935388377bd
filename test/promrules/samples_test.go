// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package promrules_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/promscrape"
)

// shapes are the label name sets each series name has in the recorded samples, keyed by the name
// of the sample line (a histogram's _bucket, _sum and _count apart).
type shapes map[string][]sets.Set[string]

// recordedShapes reads the samples whose file names start with one of the prefixes.
func recordedShapes(prefixes ...string) shapes {
	GinkgoHelper()
	files, err := filepath.Glob("samples/*.prom")
	Expect(err).NotTo(HaveOccurred())
	result := shapes{}
	for _, file := range files {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(filepath.Base(file), p+".") }) {
			continue
		}
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred(), file)
		for name, family := range families {
			for _, m := range family.GetMetric() {
				labels := sets.New[string]()
				for _, l := range m.GetLabel() {
					labels.Insert(l.GetName())
				}
				if family.GetType() == dto.MetricType_HISTOGRAM {
					result.add(name+"_bucket", labels.Clone().Insert("le"))
					result.add(name+"_sum", labels)
					result.add(name+"_count", labels)
					continue
				}
				result.add(name, labels)
			}
		}
	}
	Expect(result).NotTo(BeEmpty(), "no samples of %v", prefixes)
	return result
}

func (s shapes) add(name string, labels sets.Set[string]) {
	if !slices.ContainsFunc(s[name], labels.Equal) {
		s[name] = append(s[name], labels)
	}
}

// labelNames returns every label name the series of name have in the samples.
func (s shapes) labelNames(name string) sets.Set[string] {
	all := sets.New[string]()
	for _, l := range s[name] {
		all = all.Union(l)
	}
	return all
}

// series is the promtool notation of an input series: name{label="value", ...}.
var (
	seriesNotation = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$`)
	labelPair      = regexp.MustCompile(`\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?`)
)

func parseSeries(s string) (string, sets.Set[string], error) {
	m := seriesNotation.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", nil, fmt.Errorf("not a series: %s", s)
	}
	labels := sets.New[string]()
	rest := m[2]
	for strings.TrimSpace(rest) != "" {
		pair := labelPair.FindStringSubmatchIndex(rest)
		if pair == nil || pair[0] != 0 {
			return "", nil, fmt.Errorf("cannot read the labels of %s", s)
		}
		labels.Insert(rest[pair[2]:pair[3]])
		rest = rest[pair[1]:]
	}
	return m[1], labels, nil
}

// unrealisticSeries returns the input series of a promtool test file whose labels, less the
// target labels of their scrape, are the labels of no recorded series of their name.
func unrealisticSeries(testFile string, recorded shapes, targetLabels sets.Set[string]) []string {
	GinkgoHelper()
	data, err := os.ReadFile(testFile)
	Expect(err).NotTo(HaveOccurred())
	var tests struct {
		Tests []struct {
			InputSeries []struct {
				Series string `json:"series"`
			} `json:"input_series"`
		} `json:"tests"`
	}
	Expect(yaml.Unmarshal(data, &tests)).To(Succeed())
	var wrong []string
	for _, t := range tests.Tests {
		Expect(t.InputSeries).NotTo(BeEmpty())
		for _, in := range t.InputSeries {
			name, labels, err := parseSeries(in.Series)
			Expect(err).NotTo(HaveOccurred())
			own := labels.Difference(targetLabels)
			if name == "up" {
				// Prometheus' own series of each target.
				if own.Len() != 0 {
					wrong = append(wrong, in.Series)
				}
				continue
			}
			if !slices.ContainsFunc(recorded[name], own.Equal) {
				wrong = append(wrong, fmt.Sprintf("%s: recorded label sets %v", in.Series, recorded[name]))
			}
		}
	}
	return wrong
}

// selector finds the vector selectors with label matchers in an expression.
var (
	selector   = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	byClause   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// unknownLabels returns the labels that an expression matches on, or aggregates by, but that no
// recorded series of the metric it selects has, nor the target labels of the scrape. Recorded
// series of the rules themselves (shoot:...) have the labels their rule keeps.
func unknownLabels(expr string, recorded shapes, targetLabels sets.Set[string], records map[string]sets.Set[string]) []string {
	var unknown []string
	var selected []string
	for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
		name := sel[1]
		selected = append(selected, name)
		known, ok := records[name]
		if !ok {
			known = recorded.labelNames(name).Union(targetLabels)
			if name != "up" && len(recorded[name]) == 0 {
				unknown = append(unknown, fmt.Sprintf("%s: no recorded series", name))
				continue
			}
		}
		for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
			if !known.Has(m[1]) {
				unknown = append(unknown, fmt.Sprintf("%s{%s}", name, m[1]))
			}
		}
	}
	// Selectors without matchers, e.g. rate(metric[5m]).
	for _, token := range identifier.FindAllString(expr, -1) {
		if _, ok := records[token]; ok || len(recorded[token]) > 0 || token == "up" {
			if !slices.Contains(selected, token) {
				selected = append(selected, token)
			}
		}
	}
	for _, by := range byClause.FindAllStringSubmatch(expr, -1) {
		for _, label := range strings.Split(by[1], ",") {
			label = strings.TrimSpace(label)
			if label == "" || label == "le" {
				continue
			}
			if !slices.ContainsFunc(selected, func(name string) bool {
				if known, ok := records[name]; ok {
					return known.Has(label)
				}
				return recorded.labelNames(name).Union(targetLabels).Has(label)
			}) {
				unknown = append(unknown, fmt.Sprintf("by/without (%s) of %v", label, selected))
			}
		}
	}
	return unknown
}

// ruleExpressions returns the expressions of a PrometheusRule by rule name.
func ruleExpressions(rule *monitoringv1.PrometheusRule) map[string]string {
	exprs := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for i, r := range g.Rules {
			exprs[fmt.Sprintf("%s%s #%d", r.Alert, r.Record, i)] = r.Expr.String()
		}
	}
	return exprs
}

var (
	// The labels the ScrapeConfigs of the shoot add to every series of a delivered controller.
	shootTargetLabels = sets.New("job", "pod", "node", "instance")
	// The labels the seed Prometheus' job "extensions" adds (gardener's PodMonitor "extensions").
	seedTargetLabels = sets.New("job", "namespace", "pod", "container", "endpoint", "instance")
	// The labels of the shoots' recorded series: those they are aggregated by.
	shootRecords = map[string]sets.Set[string]{
		monitoring.RecordErrors:    sets.New("job", "controller"),
		monitoring.RecordSuccesses: sets.New("job", "controller"),
	}
	controllerSamples = []string{"source-controller", "kustomize-controller", "kluctl-controller"}
)

var _ = Describe("Recorded samples", func() {
	It("give every input series of the rule tests its shape", func() {
		Expect(unrealisticSeries("testdata/seed.prometheusrule.test.yaml", recordedShapes("extension"), seedTargetLabels)).To(BeEmpty())
		controllers := recordedShapes(controllerSamples...)
		for _, file := range []string{"testdata/shoot-kluctl.prometheusrule.test.yaml", "testdata/shoot-flux.prometheusrule.test.yaml"} {
			Expect(unrealisticSeries(file, controllers, shootTargetLabels)).To(BeEmpty(), file)
		}
	})

	It("have every label the rules match on or aggregate by", func() {
		for name, expr := range ruleExpressions(seedRule()) {
			Expect(unknownLabels(expr, recordedShapes("extension"), seedTargetLabels, nil)).To(BeEmpty(), "%s: %s", name, expr)
		}
		controllers := recordedShapes(controllerSamples...)
		for _, values := range []monitoring.Values{kluctlShoot, fluxShoot} {
			for name, expr := range ruleExpressions(monitoring.PrometheusRule(shootNamespace, values)) {
				Expect(unknownLabels(expr, controllers, shootTargetLabels, shootRecords)).To(BeEmpty(), "%s: %s", name, expr)
			}
		}
	})

	It("have every label the dashboards' queries match on or aggregate by", func() {
		for file, data := range seedDashboards() {
			for panel, exprs := range dashboardQueries(data) {
				for _, expr := range exprs {
					Expect(unknownLabels(expr, recordedShapes("extension"), seedTargetLabels, nil)).To(BeEmpty(), "%s, %s: %s", file, panel, expr)
				}
			}
		}
		controllers := recordedShapes(controllerSamples...)
		for panel, exprs := range dashboardQueries([]byte(monitoring.Dashboard())) {
			for _, expr := range exprs {
				Expect(unknownLabels(expr, controllers, shootTargetLabels, shootRecords)).To(BeEmpty(), "%s: %s", panel, expr)
			}
		}
	})

	It("have every metric the shoots' Prometheus keeps, and none of the labels its scrape adds", func() {
		controllers := recordedShapes(controllerSamples...)
		var missing []string
		for _, name := range monitoring.KeptMetrics {
			if len(controllers[name]) == 0 {
				missing = append(missing, name)
			}
		}
		Expect(missing).To(BeEmpty(), "kept metrics no controller exports")

		scrapeConfigs, err := monitoring.ScrapeConfigs(shootNamespace, kluctlShoot)
		Expect(err).NotTo(HaveOccurred())
		for _, sc := range scrapeConfigs {
			for _, r := range sc.Spec.RelabelConfigs {
				if r.TargetLabel == "" || strings.HasPrefix(r.TargetLabel, "__") {
					continue
				}
				Expect(shootTargetLabels.Has(r.TargetLabel)).To(BeTrue(), "target label %s of %s is not among the rule tests' target labels", r.TargetLabel, sc.Name)
				for _, name := range monitoring.KeptMetrics {
					Expect(controllers.labelNames(name).Has(r.TargetLabel)).To(BeFalse(), "%s has a label %s of its own, which the target label %s would rename", name, r.TargetLabel, r.TargetLabel)
				}
			}
		}
	})

	It("catch a series, a matcher and an aggregation with a label the samples lack", func() {
		recorded := shapes{"gotk_reconcile_condition": {sets.New("kind", "name", "namespace", "type", "status")}}
		file := filepath.Join(GinkgoT().TempDir(), "t.yaml")
		Expect(os.WriteFile(file, []byte(`tests:
- input_series:
  - series: 'gotk_reconcile_condition{job="j", kind="KluctlDeployment", name="n", namespace="ns", type="Ready", status="True"}'
  - series: 'gotk_reconcile_condition{job="j", kind="KluctlDeployment", name="n", namespace="ns", condition="Ready", status="True"}'
  - series: 'up{job="j", reason="x"}'
`), 0o600)).To(Succeed())
		Expect(unrealisticSeries(file, recorded, shootTargetLabels)).To(HaveLen(2))

		Expect(unknownLabels(`max by (namespace, name) (gotk_reconcile_condition{kind="KluctlDeployment",type="Ready"}) == 1`, recorded, shootTargetLabels, nil)).To(BeEmpty())
		Expect(unknownLabels(`gotk_reconcile_condition{condition="Ready"} == 1`, recorded, shootTargetLabels, nil)).To(ConsistOf("gotk_reconcile_condition{condition}"))
		Expect(unknownLabels(`max by (reason) (gotk_reconcile_condition{kind="K"})`, recorded, shootTargetLabels, nil)).To(ConsistOf(ContainSubstring("by/without (reason)")))
		Expect(unknownLabels(`gotk_reconcile_conditions{kind="K"}`, recorded, shootTargetLabels, nil)).To(ConsistOf(ContainSubstring("no recorded series")))
	})
})

// keptSeries counts the recorded series of the samples that the ScrapeConfig of component keeps
// (its metric relabelling), with those of objects other than the bootstrap's.
func keptSeries(values monitoring.Values, component string, files ...string) (kept, dropped int) {
	GinkgoHelper()
	scrapeConfigs, err := monitoring.ScrapeConfigs(shootNamespace, values)
	Expect(err).NotTo(HaveOccurred())
	var relabel []monitoringv1.RelabelConfig
	for _, sc := range scrapeConfigs {
		if sc.Name == "shoot-flux-"+component {
			relabel = sc.Spec.MetricRelabelConfigs
		}
	}
	Expect(relabel).NotTo(BeEmpty(), component)
	for _, file := range files {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred())
		for name, family := range families {
			for _, m := range family.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				names := []string{name}
				if family.GetType() == dto.MetricType_HISTOGRAM {
					names = nil
					for range m.GetHistogram().GetBucket() {
						names = append(names, name+"_bucket")
					}
					names = append(names, name+"_bucket", name+"_sum", name+"_count")
				}
				for _, n := range names {
					labels["__name__"] = n
					if keeps(relabel, labels) {
						kept++
					} else {
						dropped++
					}
				}
			}
		}
	}
	return kept, dropped
}

// keeps tells whether the metric relabelling keeps a sample.
func keeps(relabel []monitoringv1.RelabelConfig, labels map[string]string) bool {
	GinkgoHelper()
	_, keep, err := promscrape.Relabel(labels, relabel)
	Expect(err).NotTo(HaveOccurred())
	return keep
}

var _ = Describe("The shoots' Prometheus", func() {
	It("keeps a bounded number of series per shoot, none of the user's own objects", func() {
		var total int
		for _, c := range []struct {
			values    monitoring.Values
			component string
		}{
			{kluctlShoot, "source-controller"},
			{kluctlShoot, "kluctl-controller"},
			{fluxShoot, "source-controller"},
			{fluxShoot, "kustomize-controller"},
		} {
			kept, dropped := keptSeries(c.values, c.component, "samples/"+c.component+".healthy.prom")
			GinkgoWriter.Printf("%s of a %s shoot: %d series kept, %d dropped\n", c.component, c.values.Bootstrap.Mode, kept, dropped)
			Expect(kept).To(BeNumerically(">", 0))
			Expect(dropped).To(BeNumerically(">", 0))
			total += kept
		}
		// A user's object of any kind in the shoot adds no series.
		user := map[string]string{"__name__": "gotk_reconcile_condition", "kind": "KluctlDeployment", "name": "my-app", "namespace": "kluctl-system", "type": "Ready", "status": "True"}
		scrapeConfigs, err := monitoring.ScrapeConfigs(shootNamespace, kluctlShoot)
		Expect(err).NotTo(HaveOccurred())
		Expect(keeps(scrapeConfigs[1].Spec.MetricRelabelConfigs, user)).To(BeFalse())
		user["name"] = "shoot-flux-bootstrap"
		Expect(keeps(scrapeConfigs[1].Spec.MetricRelabelConfigs, user)).To(BeTrue())
		Expect(total).To(BeNumerically("<=", 200))
	})
})
