// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package promscrape does what the shoot's Prometheus does with a ScrapeConfig of the extension:
// the relabelling of the targets, the metric relabelling of the scraped samples and the limits
// (targetLimit, sampleLimit, labelLimit, labelValueLengthLimit), as Prometheus documents them
// (configuration.md, relabel_config and scrape_config). Prometheus' own packages would raise this
// module's k8s.io requirements, so the specs use this instead; it refuses what it does not know.
package promscrape

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Relabel applies relabel configs to a copy of labels as Prometheus does: regexes are anchored,
// source labels joined by the separator (";"), the action defaults to replace, the replacement to
// "$1". It returns false when a keep or drop action drops the label set.
func Relabel(labels map[string]string, configs []monitoringv1.RelabelConfig) (map[string]string, bool, error) {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	for _, r := range configs {
		regex, err := compile(r.Regex)
		if err != nil {
			return nil, false, err
		}
		values := make([]string, 0, len(r.SourceLabels))
		for _, l := range r.SourceLabels {
			values = append(values, out[string(l)])
		}
		separator := ";"
		if r.Separator != nil {
			separator = *r.Separator
		}
		joined := strings.Join(values, separator)
		replacement := "$1"
		if r.Replacement != nil {
			replacement = *r.Replacement
		}
		switch strings.ToLower(cmp.Or(r.Action, "replace")) {
		case "keep":
			if !regex.MatchString(joined) {
				return nil, false, nil
			}
		case "drop":
			if regex.MatchString(joined) {
				return nil, false, nil
			}
		case "replace":
			m := regex.FindStringSubmatchIndex(joined)
			if m == nil {
				continue
			}
			target := string(regex.ExpandString(nil, r.TargetLabel, joined, m))
			if value := string(regex.ExpandString(nil, replacement, joined, m)); value != "" {
				out[target] = value
			} else {
				delete(out, target)
			}
		case "labelmap":
			for k, v := range maps.Clone(out) {
				if m := regex.FindStringSubmatchIndex(k); m != nil {
					out[string(regex.ExpandString(nil, replacement, k, m))] = v
				}
			}
		case "labelkeep":
			for k := range out {
				if !regex.MatchString(k) {
					delete(out, k)
				}
			}
		case "labeldrop":
			for k := range out {
				if regex.MatchString(k) {
					delete(out, k)
				}
			}
		default:
			return nil, false, fmt.Errorf("relabel action %q is not supported", r.Action)
		}
	}
	return out, true, nil
}

// regexes caches the compiled regexes: a spec relabels thousands of samples with a few.
var regexes sync.Map

func compile(expr string) (*regexp.Regexp, error) {
	if re, ok := regexes.Load(expr); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(`^(?:` + cmp.Or(expr, "(.*)") + `)$`)
	if err != nil {
		return nil, fmt.Errorf("invalid regex %q: %w", expr, err)
	}
	regexes.Store(expr, re)
	return re, nil
}

// Target is a discovered target: its meta labels (__address__, __metrics_path__,
// __meta_kubernetes_*) and the exposition text it serves.
type Target struct {
	Labels     map[string]string
	Exposition []byte
}

// Result is what the shoot's Prometheus stores of one scrape of every target of a ScrapeConfig.
type Result struct {
	// Series are the stored series, each a label set with __name__.
	Series []map[string]string
	// Up is the value of up by target (the target's labels without the meta labels, as text).
	Up map[string]int
	// Failures tell why a target's scrape failed: the limit it exceeded.
	Failures []string
	// DroppedTargets counts the targets the relabelling dropped.
	DroppedTargets int
}

// Scrape applies spec to the targets: the relabelling, the target limit (more targets than it fail
// all), then per target the metric relabelling and the sample, label and label value length limits
// (a target that exceeds one stores nothing).
func Scrape(spec monitoringv1alpha1.ScrapeConfigSpec, targets []Target) (Result, error) {
	result := Result{Up: map[string]int{}}
	type kept struct {
		labels     map[string]string
		exposition []byte
	}
	var scraped []kept
	for _, t := range targets {
		labels, keep, err := Relabel(t.Labels, spec.RelabelConfigs)
		if err != nil {
			return result, err
		}
		if !keep {
			result.DroppedTargets++
			continue
		}
		own := map[string]string{}
		for k, v := range labels {
			if !strings.HasPrefix(k, "__") {
				own[k] = v
			}
		}
		if _, ok := own["instance"]; !ok {
			own["instance"] = labels["__address__"]
		}
		scraped = append(scraped, kept{labels: own, exposition: t.Exposition})
	}
	if limit := spec.TargetLimit; limit != nil && *limit > 0 && int64(len(scraped)) > *limit {
		for _, t := range scraped {
			result.Up[key(t.labels)] = 0
		}
		result.Failures = append(result.Failures, fmt.Sprintf("%d targets exceed the target limit %d", len(scraped), *limit))
		return result, nil
	}
	for _, t := range scraped {
		series, err := samples(t.exposition)
		if err != nil {
			return result, err
		}
		var stored []map[string]string
		failure := ""
		for _, s := range series {
			ls := maps.Clone(t.labels)
			for k, v := range s {
				if _, clash := t.labels[k]; clash && (spec.HonorLabels == nil || !*spec.HonorLabels) {
					ls["exported_"+k] = v
					continue
				}
				ls[k] = v
			}
			ls, keep, err := Relabel(ls, spec.MetricRelabelConfigs)
			if err != nil {
				return result, err
			}
			if !keep {
				continue
			}
			if limit := spec.LabelLimit; limit != nil && *limit > 0 && int64(len(ls)) > *limit {
				failure = fmt.Sprintf("a sample of %s has %d labels, more than the label limit %d", ls["__name__"], len(ls), *limit)
				break
			}
			if limit := spec.LabelValueLengthLimit; limit != nil && *limit > 0 {
				for k, v := range ls {
					if int64(len(v)) > *limit {
						failure = fmt.Sprintf("the value of label %s of %s is %d long, longer than the label value length limit %d", k, ls["__name__"], len(v), *limit)
						break
					}
				}
				if failure != "" {
					break
				}
			}
			stored = append(stored, ls)
		}
		if limit := spec.SampleLimit; failure == "" && limit != nil && *limit > 0 && int64(len(stored)) > *limit {
			failure = fmt.Sprintf("%d samples exceed the sample limit %d", len(stored), *limit)
		}
		if failure != "" {
			result.Up[key(t.labels)] = 0
			result.Failures = append(result.Failures, key(t.labels)+": "+failure)
			continue
		}
		result.Up[key(t.labels)] = 1
		result.Series = append(result.Series, stored...)
	}
	return result, nil
}

// samples returns the samples of an exposition text, each a label set with __name__: a histogram
// as its buckets (le), _sum and _count.
func samples(exposition []byte) ([]map[string]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(exposition))
	if err != nil {
		return nil, fmt.Errorf("failed parsing the exposition: %w", err)
	}
	var out []map[string]string
	for name, family := range families {
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			with := func(n string, extra ...string) map[string]string {
				ls := maps.Clone(labels)
				ls["__name__"] = n
				for i := 0; i+1 < len(extra); i += 2 {
					ls[extra[i]] = extra[i+1]
				}
				return ls
			}
			switch family.GetType() {
			case dto.MetricType_HISTOGRAM:
				inf := false
				for _, b := range m.GetHistogram().GetBucket() {
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					out = append(out, with(name+"_bucket", "le", model.FloatString(b.GetUpperBound()).String()))
				}
				if !inf {
					out = append(out, with(name+"_bucket", "le", "+Inf"))
				}
				out = append(out, with(name+"_sum"), with(name+"_count"))
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					out = append(out, with(name, "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)))
				}
				out = append(out, with(name+"_sum"), with(name+"_count"))
			default:
				out = append(out, with(name))
			}
		}
	}
	return out, nil
}

// key names a target by its labels.
func key(labels map[string]string) string {
	return toLabelSet(labels).String()
}

func toLabelSet(labels map[string]string) model.LabelSet {
	ls := model.LabelSet{}
	for k, v := range labels {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	return ls
}

// PodTarget is what Prometheus' kubernetes service discovery (role pod) finds of a pod serving
// exposition from a container and port of the given names: a controller's pod, or a shoot
// owner's pod named like it.
func PodTarget(namespace, pod, container, port string, exposition []byte) Target {
	return Target{Labels: map[string]string{
		"__address__":                                 "10.0.0.1:8080",
		"__metrics_path__":                            "/metrics",
		"__meta_kubernetes_namespace":                 namespace,
		"__meta_kubernetes_pod_name":                  pod,
		"__meta_kubernetes_pod_node_name":             "worker-a",
		"__meta_kubernetes_pod_container_name":        container,
		"__meta_kubernetes_pod_container_port_name":   port,
		"__meta_kubernetes_pod_container_port_number": "8080",
	}, Exposition: exposition}
}

// Crafted is an exposition a shoot owner's pod serves to inflate the shoot's Prometheus: about n
// series spread over metrics, with tenant-chosen controller values, extra labels, many kinds and
// long label values, all naming the bootstrap object so that a keep rule on the object lets them by.
func Crafted(n int, metrics []string, bootstrapName, bootstrapNamespace string) []byte {
	var b strings.Builder
	for _, name := range metrics {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for i := range n / len(metrics) {
			switch i % 4 {
			case 0:
				fmt.Fprintf(&b, "%s{controller=\"tenant-%d\",result=\"success\"} 1\n", name, i)
			case 1:
				fmt.Fprintf(&b, "%s{controller=\"gitrepository\",result=\"success\",extra_%d=\"x\"} 1\n", name, i)
			case 2:
				fmt.Fprintf(&b, "%s{name=%q,namespace=%q,kind=\"K%d\",status=\"True\",type=\"Ready\"} 1\n", name, bootstrapName, bootstrapNamespace, i)
			default:
				fmt.Fprintf(&b, "%s{name=%q,namespace=%q,kind=\"K\",status=%q} 1\n", name, bootstrapName, bootstrapNamespace, strings.Repeat("v", 300)+strconv.Itoa(i))
			}
		}
	}
	return []byte(b.String())
}
