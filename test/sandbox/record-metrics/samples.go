// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// selection picks the families and series of a sample.
type selection struct {
	// prefixes are the families kept: what the rules and the dashboard can use. The Go runtime
	// and process families would only bloat the samples.
	prefixes []string
	// excluded are families of prefixes that are left out.
	excluded []string
	// controller tells whether the series of a controller are kept (label controller, or name
	// for workqueue families); nil keeps all.
	controller func(name string, active map[string]bool) bool
}

// controllerSelection keeps the Flux and kluctl families and controller-runtime's reconcile and
// queue families of the controllers that reconciled anything: source-controller runs five
// controllers of which the bootstrap uses one.
var controllerSelection = selection{
	// kluctl's own families are kluctldeployments_* (subsystem, no namespace).
	prefixes: []string{"gotk_", "kluctl_", "kluctldeployments_", "controller_runtime_reconcile_", "workqueue_depth"},
	// They name the repository URL, a label no rule may use, and with it the git server's port of
	// the recording.
	excluded:   []string{"kluctldeployments_source_spec", "kluctldeployments_git_source_spec", "kluctldeployments_oci_source_spec"},
	controller: func(name string, active map[string]bool) bool { return active[name] },
}

// extensionSelection keeps the extension's families and the reconcile and queue families of its
// controllers. The in-process extension shares the registry with the sandbox's controllers
// (gardener-resource-manager, the kubelet stand-ins), whose series are left out.
var extensionSelection = selection{
	prefixes: []string{"shoot_flux_", "controller_runtime_reconcile_", "workqueue_depth"},
	controller: func(name string, _ map[string]bool) bool {
		// gardener's health check library names its controller after the checked kind.
		return strings.HasPrefix(name, "shoot-flux") || strings.HasPrefix(name, "healthcheck-Extension-") || name == "heartbeat"
	},
}

func get(url string) ([]byte, error) {
	httpClient := &http.Client{Timeout: 30 * time.Second}
	resp, err := httpClient.Get(url)
	if err != nil {
		return nil, fmt.Errorf("failed reading %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("failed reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: %s", url, resp.Status)
	}
	return body, nil
}

// write filters the exposition text and writes it to <component>.<state>.prom.
func (r *recorder) write(component, state string, text []byte, sel selection) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return fmt.Errorf("failed parsing the metrics of %s: %w", component, err)
	}
	active := activeControllers(families)
	names := make([]string, 0, len(families))
	for name := range families {
		if slices.ContainsFunc(sel.prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) && !slices.Contains(sel.excluded, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s in state %s, recorded by test/sandbox/record-metrics (families: %s).\n", component, state, strings.Join(sel.prefixes, ", "))
	encoder := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	dropped := map[string]bool{}
	for _, name := range names {
		mf := families[name]
		mf.Metric = slices.DeleteFunc(mf.Metric, func(m *dto.Metric) bool {
			controller, ok := controllerOf(name, m)
			if !ok || sel.controller == nil || sel.controller(controller, active) {
				return false
			}
			dropped[controller] = true
			return true
		})
		if len(mf.Metric) == 0 {
			continue
		}
		r.addLabels(mf)
		if err := encoder.Encode(mf); err != nil {
			return fmt.Errorf("failed encoding %s of %s: %w", name, component, err)
		}
	}
	file := filepath.Join(r.out, component+"."+state+".prom")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("failed writing %s: %w", file, err)
	}
	r.progress(fmt.Sprintf("wrote %s (%d lines; series of controllers left out: %s)", file, bytes.Count(out.Bytes(), []byte("\n")), strings.Join(slices.Sorted(maps.Keys(dropped)), " ")))
	return nil
}

// activeControllers are the controllers with at least one reconcile.
func activeControllers(families map[string]*dto.MetricFamily) map[string]bool {
	active := map[string]bool{}
	mf, ok := families["controller_runtime_reconcile_total"]
	if !ok {
		return active
	}
	for _, m := range mf.Metric {
		if name, ok := controllerOf(mf.GetName(), m); ok && m.GetCounter().GetValue() > 0 {
			active[name] = true
		}
	}
	return active
}

// controllerOf returns the controller a series of controller-runtime is about: label controller,
// or name for the workqueue families. The label name of the Flux families names objects.
func controllerOf(family string, m *dto.Metric) (string, bool) {
	label := "controller"
	switch {
	case strings.HasPrefix(family, "workqueue_"):
		label = "name"
	case !strings.HasPrefix(family, "controller_runtime_"):
		return "", false
	}
	for _, l := range m.Label {
		if l.GetName() == label {
			return l.GetValue(), true
		}
	}
	return "", false
}

// addLabels records the label names of a family as its series carry them in the text format:
// le for the buckets of histograms, quantile for summaries.
func (r *recorder) addLabels(mf *dto.MetricFamily) {
	names := r.labels[mf.GetName()]
	if names == nil {
		names = map[string]bool{}
		r.labels[mf.GetName()] = names
	}
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			names[l.GetName()] = true
		}
	}
	switch mf.GetType() {
	case dto.MetricType_HISTOGRAM:
		names["le"] = true
	case dto.MetricType_SUMMARY:
		names["quantile"] = true
	}
}

// writeLabels writes labels.yaml: the label names of every family over all samples.
func (r *recorder) writeLabels() error {
	labels := map[string][]string{}
	for family, names := range r.labels {
		// A family without labels is an empty list, not null.
		labels[family] = append([]string{}, slices.Sorted(maps.Keys(names))...)
	}
	data, err := yaml.Marshal(labels)
	if err != nil {
		return fmt.Errorf("failed encoding the label names: %w", err)
	}
	header := "# The label names of every family in the samples, as the exposition text has them (before the\n# target labels the ScrapeConfig adds), recorded by test/sandbox/record-metrics.\n"
	file := filepath.Join(r.out, "labels.yaml")
	if err := os.WriteFile(file, append([]byte(header), data...), 0o644); err != nil {
		return fmt.Errorf("failed writing %s: %w", file, err)
	}
	return nil
}
