// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
)

// referenceDoc is the one reference of the operator's configuration: every field of the
// ControllerConfiguration and every value of the charts, each with its default. Other pages link
// to it rather than restating a value or a limit.
const referenceDoc = "docs/operations/configuration.md"

// The sections of referenceDoc whose field tables make up the reference.
const (
	chartValuesSection     = "Chart values"
	componentConfigSection = "Component configuration"
	limitsSection          = "Limits"
	admissionValuesSection = "Admission chart values"
)

// configNamespace is what the tables of the component configuration and the limits document.
const configNamespace = "ControllerConfiguration"

// extensionValues is the values file of the extension's chart.
const extensionValues = "charts/gardener-extension-shoot-flux/values.yaml"

// admissionCharts are the "### " subsections of admissionValuesSection by the values file their
// table documents.
var admissionCharts = map[string]string{
	"Umbrella chart":    "charts/gardener-extension-shoot-flux-admission/values.yaml",
	"Application chart": "charts/gardener-extension-shoot-flux-admission/charts/application/values.yaml",
	"Runtime chart":     "charts/gardener-extension-shoot-flux-admission/charts/runtime/values.yaml",
}

// referenceNamespace tells what a table of referenceDoc that starts at l documents: the
// configNamespace or a values file; "" if it is no part of the reference.
func referenceNamespace(l line) string {
	switch l.section {
	case componentConfigSection, limitsSection:
		return configNamespace
	case chartValuesSection:
		return extensionValues
	case admissionValuesSection:
		return admissionCharts[l.subsection]
	}
	return ""
}

// refRow is a row of the reference: the field or value it names, its type and its default as
// written.
type refRow struct {
	name, typ, def, where string
}

// referenceRows returns the rows of the reference by namespace and name. A name is written as a
// path (`rollout.releases.flux[].version`); "[]" marks a list and is dropped.
func referenceRows(d document) map[string]map[string]refRow {
	out := map[string]map[string]refRow{}
	for _, t := range fieldTables([]document{d}) {
		ns := referenceNamespace(t.header)
		if ns == "" {
			continue
		}
		if out[ns] == nil {
			out[ns] = map[string]refRow{}
		}
		typeCol, defaultCol := slices.Index(t.columns, "Type"), slices.Index(t.columns, "Default")
		for _, row := range t.rows {
			cells := cellsOf(row.text)
			cell := func(i int) string {
				if i < 0 || i >= len(cells) {
					return ""
				}
				return cells[i]
			}
			for _, m := range inlineCode.FindAllStringSubmatch(cells[0], -1) {
				name := strings.ReplaceAll(m[1], "[]", "")
				out[ns][name] = refRow{name: name, typ: cell(typeCol), def: cell(defaultCol), where: d.where(row.number)}
			}
		}
	}
	return out
}

// jsonField reads the JSON name of a struct field; inline for embedded and inlined structs, skip
// for fields JSON leaves out.
func jsonField(f reflect.StructField) (name string, inline, skip bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return "", false, true
	}
	if f.Anonymous || strings.Contains(opts, "inline") {
		return "", true, false
	}
	if name == "" {
		name = f.Name
	}
	return name, false, false
}

// isValue tells whether a Go type is one value in JSON rather than a struct of fields: scalars,
// maps, durations and types with their own JSON form (metav1.Time).
func isValue(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() != reflect.Struct || t == durationType || reflect.PointerTo(t).Implements(jsonMarshaler)
}

// configLeaves returns the paths of the ControllerConfiguration's fields that hold a value, not
// those that only group fields. A map (controllers) is one value: its entries' fields are the
// FluxConfig's, documented with it. apiVersion and kind are left out: the chart writes them.
func configLeaves() []string {
	var leaves []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		eachJSONField(t, func(name string, ft reflect.Type) {
			if isValue(ft) {
				leaves = append(leaves, prefix+name)
				return
			}
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			walk(ft, prefix+name+".")
		})
	}
	walk(reflect.TypeFor[configv1alpha1.ControllerConfiguration](), "")
	leaves = slices.DeleteFunc(leaves, func(p string) bool { return p == "apiVersion" || p == "kind" })
	slices.Sort(leaves)
	return leaves
}

// configDefaults returns the default of every field of the ControllerConfiguration that has one:
// what v1alpha1's defaulting sets on an empty configuration (and on a listed release, for the
// fields of list entries), and the defaults the code applies where it reads a field the
// defaulting leaves unset.
func configDefaults() map[string]any {
	defaults := map[string]any{}
	for _, cfg := range []*configv1alpha1.ControllerConfiguration{
		{},
		{Rollout: &configv1alpha1.Rollout{Releases: &configv1alpha1.Releases{
			Flux: []configv1alpha1.ReleaseLifecycle{{}}, Kluctl: []configv1alpha1.ReleaseLifecycle{{}},
		}}},
	} {
		configv1alpha1.SetObjectDefaults_ControllerConfiguration(cfg)
		collectValues(reflect.ValueOf(cfg).Elem(), "", defaults)
	}
	for path, value := range map[string]any{
		// The health check takes the whole healthCheckConfig of the configuration if it is set.
		"healthCheckConfig.syncPeriod":               healthcheck.DefaultAddOptions.HealthCheckConfig.SyncPeriod.Duration,
		"healthCheckConfig.shootRESTOptions.timeout": healthcheck.ShootRequestTimeout,
		// The host policy scans these ports if allowedPorts is empty.
		"hostPolicy.allowedPorts": hostpolicy.DefaultAllowedPorts,
	} {
		if _, ok := defaults[path]; !ok {
			defaults[path] = value
		}
	}
	return defaults
}

// collectValues adds the set values below v to out by path, as plain Go values: strings, bools,
// int64, time.Duration, []string. A list counts by its first entry.
func collectValues(v reflect.Value, prefix string, out map[string]any) {
	for i := range v.NumField() {
		name, inline, skip := jsonField(v.Type().Field(i))
		if skip || inline {
			continue
		}
		fv, path := v.Field(i), prefix+name
		if isValue(fv.Type()) {
			if value, ok := plainValue(fv); ok {
				out[path] = value
			}
			continue
		}
		for fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Slice {
			if fv.IsNil() || (fv.Kind() == reflect.Slice && fv.Len() == 0) {
				break
			}
			if fv.Kind() == reflect.Slice {
				fv = fv.Index(0)
			} else {
				fv = fv.Elem()
			}
		}
		if fv.Kind() == reflect.Struct {
			collectValues(fv, path+".", out)
		}
	}
}

// plainValue returns the value of a field as a plain Go value; ok is false if it is unset.
func plainValue(v reflect.Value) (any, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == durationType:
		return v.Interface().(metav1.Duration).Duration, true
	case v.Type() == goDurationType:
		return time.Duration(v.Int()), true
	case v.Kind() == reflect.String:
		return v.String(), true
	case v.Kind() == reflect.Bool:
		return v.Bool(), true
	case v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64:
		return v.Int(), true
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		if v.Len() == 0 {
			return nil, false
		}
		var s []string
		for i := range v.Len() {
			s = append(s, v.Index(i).String())
		}
		return s, true
	}
	return nil, false
}

// noDefault is how the reference says a field or value is unset by default.
func noDefault(cell string) bool {
	return strings.HasPrefix(cell, "none") || strings.HasPrefix(cell, "empty")
}

// statedValue is what a Default cell states first: its first code span if it starts with one,
// else its first word.
func statedValue(cell string) string {
	if m := inlineCode.FindStringSubmatchIndex(cell); m != nil && m[0] == 0 {
		return cell[m[2]:m[3]]
	}
	word, _, _ := strings.Cut(cell, " ")
	return strings.TrimRight(word, ",;:")
}

// defaultMismatch compares a Default cell with the default: "" if the cell states it.
func defaultMismatch(cell string, want any, has bool) string {
	if !has {
		if noDefault(cell) {
			return ""
		}
		return "there is none"
	}
	stated := statedValue(cell)
	var got any
	switch w := want.(type) {
	case time.Duration:
		d, err := parseQuoted(stated)
		if err != nil {
			return w.String()
		}
		got = d
	case string:
		if w == "" && noDefault(cell) {
			return ""
		}
		got = stated
	case bool:
		got, _ = strconv.ParseBool(stated)
		if stated != "true" && stated != "false" {
			got = nil
		}
	case int64:
		n, err := strconv.ParseInt(stated, 10, 64)
		if err != nil {
			return strconv.FormatInt(w, 10)
		}
		got = n
	case float64:
		n, err := strconv.ParseFloat(stated, 64)
		if err != nil {
			return strconv.FormatFloat(w, 'f', -1, 64)
		}
		got = n
	case []string:
		var spans []string
		for _, m := range inlineCode.FindAllStringSubmatch(cell, -1) {
			spans = append(spans, m[1])
		}
		got = spans
	}
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return fmt.Sprint(want)
}

// valuesOf reads a values file.
func valuesOf(path string) map[string]any {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	var values map[string]any
	Expect(yaml.Unmarshal(data, &values)).To(Succeed())
	return values
}

// valueLeaves returns the values of a values file that are one value, by path: scalars, lists
// and empty maps (free-form objects such as podLabels).
func valueLeaves(values map[string]any, prefix string, out map[string]any) {
	for k, v := range values {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			valueLeaves(m, prefix+k+".", out)
			continue
		}
		out[prefix+k] = v
	}
}

// yamlDefault turns a value of a values file into what defaultMismatch compares: a number as
// int64 if it is whole, an empty string, list or map as unset.
func yamlDefault(v any) (any, bool) {
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
		return v, true
	case string:
		return v, v != ""
	case []any:
		if len(v) == 0 {
			return nil, false
		}
		var s []string
		for _, e := range v {
			s = append(s, fmt.Sprint(e))
		}
		return s, true
	case map[string]any:
		return nil, len(v) > 0
	}
	return v, v != nil
}

// coveredByObject tells whether an ancestor of path has a row of type object, which documents
// the whole object (resources, vpa.resourcePolicy.minAllowed).
func coveredByObject(rows map[string]refRow, path string) bool {
	for p := path; strings.Contains(p, "."); {
		p = p[:strings.LastIndex(p, ".")]
		if r, ok := rows[p]; ok && strings.HasPrefix(r.typ, "object") {
			return true
		}
	}
	return false
}

// hasRowFor tells whether rows has a row for path or for a field below it.
func hasRowFor(rows map[string]refRow, path string) bool {
	for name := range rows {
		if name == path || strings.HasPrefix(name, path+".") {
			return true
		}
	}
	return false
}

// referenceProblems returns what the reference lacks or states wrongly: a field of the
// ControllerConfiguration or a value of a chart without a row, a row that names nothing, and a
// default that differs from the code's (the defaulting of v1alpha1 on an empty configuration) or
// from the values file's. The chart's config.* values are the ControllerConfiguration, so their
// rows are those of the component configuration, and a config value the values file sets (not
// empty) must be the code's default.
func referenceProblems(rows map[string]map[string]refRow, leaves []string, defaults map[string]any, valueFiles map[string]map[string]any) []string {
	var problems []string
	config := rows[configNamespace]
	for _, path := range leaves {
		r, ok := config[path]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no row for the field `%s` in %q or %q", referenceDoc, path, componentConfigSection, limitsSection))
			continue
		}
		want, has := defaults[path]
		if m := defaultMismatch(r.def, want, has); m != "" {
			problems = append(problems, fmt.Sprintf("%s: `%s` default %q, the code's: %s", r.where, path, r.def, m))
		}
	}
	for name, r := range config {
		if !slices.Contains(leaves, name) && !slices.ContainsFunc(leaves, func(l string) bool { return strings.HasPrefix(l, name+".") }) {
			problems = append(problems, fmt.Sprintf("%s: `%s` is no field of the ControllerConfiguration", r.where, name))
		}
	}
	for _, file := range slices.Sorted(maps.Keys(valueFiles)) {
		values := map[string]any{}
		valueLeaves(valueFiles[file], "", values)
		chart := rows[file]
		for _, path := range slices.Sorted(maps.Keys(values)) {
			want, has := yamlDefault(values[path])
			if field, isConfig := strings.CutPrefix(path, "config."); isConfig && file == extensionValues {
				if !hasRowFor(config, field) {
					problems = append(problems, fmt.Sprintf("%s: %s sets `%s`, which no row of %q names", referenceDoc, file, path, componentConfigSection))
				}
				// The chart leaves 0 out as it does "": the limits' "0 keeps the default".
				if code, ok := defaults[field]; has && want != int64(0) && ok && fmt.Sprint(want) != fmt.Sprint(code) {
					problems = append(problems, fmt.Sprintf("%s: `%s: %v` is not the code's default %v", file, path, want, code))
				}
				continue
			}
			r, ok := chart[path]
			if !ok {
				if !coveredByObject(chart, path) {
					problems = append(problems, fmt.Sprintf("%s: no row for the value `%s` of %s", referenceDoc, path, file))
				}
				continue
			}
			if m := defaultMismatch(r.def, want, has); m != "" {
				problems = append(problems, fmt.Sprintf("%s: `%s` default %q, %s: %s", r.where, path, r.def, file, m))
			}
		}
		tree := mapTree(valueFiles[file])
		for name, r := range chart {
			if !tree.has(strings.Split(name, ".")) {
				problems = append(problems, fmt.Sprintf("%s: `%s` is no value of %s", r.where, name, file))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// referenceValueFiles reads the values files the reference documents.
func referenceValueFiles() map[string]map[string]any {
	GinkgoHelper()
	files := map[string]map[string]any{extensionValues: valuesOf(extensionValues)}
	for _, f := range admissionCharts {
		files[f] = valuesOf(f)
	}
	return files
}

var _ = Describe("the configuration reference, "+referenceDoc, func() {
	It("has a row for every field of the ControllerConfiguration and every chart value, with the code's and the chart's defaults", func() {
		rows := referenceRows(documentNamed(documents(), referenceDoc))
		Expect(rows).To(HaveKey(configNamespace))
		Expect(rows).To(HaveKey(extensionValues))
		for _, f := range admissionCharts {
			Expect(rows).To(HaveKey(f))
		}
		Expect(referenceProblems(rows, configLeaves(), configDefaults(), referenceValueFiles())).To(BeEmpty())
	})

	It("computes the defaults from the code: the defaulting of an empty configuration and where the code reads a field", func() {
		defaults := configDefaults()
		Expect(defaults).To(HaveKeyWithValue("timeouts.managedResourceApplied", 2*time.Minute))
		Expect(defaults).To(HaveKeyWithValue("limits.hostPatternMaxWildcards", int64(3)))
		Expect(defaults).To(HaveKeyWithValue("rollout.window", "maintenance"))
		Expect(defaults).To(HaveKeyWithValue("rollout.releases.flux.classification", "supported"))
		Expect(defaults).To(HaveKeyWithValue("monitoring.shoot.enabled", true))
		Expect(defaults).To(HaveKeyWithValue("healthCheckConfig.syncPeriod", time.Minute))
		Expect(defaults).To(HaveKeyWithValue("healthCheckConfig.shootRESTOptions.timeout", 10*time.Second))
		Expect(defaults).NotTo(HaveKey("registry"))
		Expect(configLeaves()).To(ContainElements("limits.privateKeyMaxBits", "rollout.releases.kluctl.expirationDate", "healthCheckConfig.shootRESTOptions.qps", "controllers"))
	})

	It("fails on a missing field or value, a row naming nothing and a default stated differently", func() {
		d := parseDocument(referenceDoc, "## "+componentConfigSection+"\n\n| Field | Type | Default | Meaning |\n|---|---|---|---|\n"+
			"| `timeouts.deletion` | duration | `10m` | x |\n| `rollout.window` | string | `maintenance` | x |\n| `registry` | string | `docker.io` | x |\n| `sshKey.scop` | string | none | x |\n\n"+
			"## "+chartValuesSection+"\n\n| Value | Type | Default | Meaning |\n|---|---|---|---|\n"+
			"| `replicaCount` | integer | 2 | x |\n| `resources` | object | requests | x |\n| `image.tga` | string | empty | x |\n")
		rows := referenceRows(d)
		leaves := []string{"timeouts.deletion", "rollout.window", "registry", "limits.privateKeyMaxBits"}
		defaults := map[string]any{"timeouts.deletion": 5 * time.Minute, "rollout.window": "maintenance", "limits.privateKeyMaxBits": int64(16384)}
		values := map[string]map[string]any{extensionValues: {
			"replicaCount": float64(1), "resources": map[string]any{"requests": map[string]any{"cpu": "50m"}}, "tmpSizeLimit": "32Mi",
			"config": map[string]any{"rollout": map[string]any{"window": "immediate"}, "knownHosts": ""},
		}}
		Expect(referenceProblems(rows, leaves, defaults, values)).To(ConsistOf(
			referenceDoc+": no row for the field `limits.privateKeyMaxBits` in \"Component configuration\" or \"Limits\"",
			referenceDoc+":5: `timeouts.deletion` default \"`10m`\", the code's: 5m0s",
			referenceDoc+":7: `registry` default \"`docker.io`\", the code's: there is none",
			referenceDoc+":8: `sshKey.scop` is no field of the ControllerConfiguration",
			referenceDoc+": "+extensionValues+" sets `config.knownHosts`, which no row of \"Component configuration\" names",
			extensionValues+": `config.rollout.window: immediate` is not the code's default maintenance",
			referenceDoc+":14: `replicaCount` default \"2\", "+extensionValues+": 1",
			referenceDoc+": no row for the value `tmpSizeLimit` of "+extensionValues,
			referenceDoc+":16: `image.tga` is no value of "+extensionValues,
		))
	})
})
