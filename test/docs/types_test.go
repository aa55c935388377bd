// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

var (
	jsonMarshaler  = reflect.TypeFor[json.Marshaler]()
	durationType   = reflect.TypeFor[metav1.Duration]()
	goDurationType = reflect.TypeFor[time.Duration]()
	timeType       = reflect.TypeFor[metav1.Time]()
)

// docType is the name the docs give a Go field's type.
func docType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType, t == goDurationType:
		return "duration"
	case t == timeType:
		return "string"
	case t == rawExtensionType, t.Kind() == reflect.Struct:
		return "object"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Float32, t.Kind() == reflect.Float64:
		return "number"
	case t.Kind() == reflect.Slice:
		return "[]" + docType(t.Elem())
	case t.Kind() == reflect.Map:
		return "map[string]" + docType(t.Elem())
	}
	return t.String()
}

// fieldTypes lists the doc type of every JSON path of a Go API type.
// The fields of a map's values are listed under the key "*", e.g. controllers.*.concurrent.
func fieldTypes(t reflect.Type, prefix string, out map[string]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map {
			prefix += "*."
		}
		t = t.Elem()
	}
	// A type with its own JSON form (resource.Quantity) is a value, not fields.
	if t.Kind() != reflect.Struct || t == durationType || t == rawExtensionType || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return
	}
	eachJSONField(t, func(name string, ft reflect.Type) {
		out[prefix+name] = docType(ft)
		fieldTypes(ft, prefix+name+".", out)
	})
}

// valueTypes lists the doc type of every path of a values file, from its defaults.
func valueTypes(v any, prefix string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			out[prefix+k] = yamlType(sub)
			valueTypes(sub, prefix+k+".", out)
		}
	}
}

func yamlType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "[]"
	case bool:
		return "boolean"
	case float64, int64:
		return "integer"
	}
	return "string"
}

// typeMatches tells whether a documented type names the derived one: exactly, with a remark in
// parentheses ("string (quantity)") or as one of alternatives ("object or string"); a list
// documented with its element type matches an empty default list.
func typeMatches(documented, derived string) bool {
	for _, alt := range strings.Split(documented, " or ") {
		alt, _, _ = strings.Cut(alt, " (")
		if alt == derived || (derived == "[]" && strings.HasPrefix(alt, "[]")) {
			return true
		}
	}
	return false
}

// fieldTable is a table of docs whose rows name fields or values in the first column.
type fieldTable struct {
	doc     document
	header  line
	columns []string
	rows    []line
}

func cellsOf(l string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), " | ")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// fieldTables returns the tables whose first column is a Field or a Value.
func fieldTables(docs []document) []fieldTable {
	var tables []fieldTable
	for _, d := range docs {
		var current *fieldTable
		for _, l := range d.lines {
			if !strings.HasPrefix(l.text, "|") {
				current = nil
				continue
			}
			if current == nil {
				cells := cellsOf(l.text)
				if cells[0] == "Field" || cells[0] == "Value" {
					tables = append(tables, fieldTable{doc: d, header: l, columns: cells})
					current = &tables[len(tables)-1]
				}
				continue
			}
			if !strings.HasPrefix(l.text, "|---") {
				current.rows = append(current.rows, l)
			}
		}
	}
	return tables
}

// typeProblems checks that every field table has a Type column and that each row's type is the
// type of the field or value it names: a value of the extension chart, or a field of the APIs
// whose path ends with the name (tables of a section name fields relative to it).
func typeProblems(docs []document) []string {
	GinkgoHelper()
	// The fields of each API apart: a name may end a path in both (flux: bootstrap.flux of the
	// FluxConfig, rollout.releases.flux of the ControllerConfiguration), and a table documents
	// the fields of one of them.
	var apis []map[string]string
	for _, t := range []reflect.Type{reflect.TypeFor[fluxv1alpha1.FluxConfig](), reflect.TypeFor[configv1alpha1.ControllerConfiguration]()} {
		fields := map[string]string{}
		fieldTypes(t, "", fields)
		apis = append(apis, fields)
	}
	// The values of each chart the reference documents, by values file.
	chartValues := map[string]map[string]string{}
	for file, defaults := range referenceValueFiles() {
		chartValues[file] = map[string]string{}
		valueTypes(defaults, "", chartValues[file])
	}

	var problems []string
	for _, t := range fieldTables(docs) {
		if t.columns[0] == "Value" && (t.doc.path != referenceDoc || referenceNamespace(t.header) == "") {
			problems = append(problems, t.doc.where(t.header.number)+": a table of chart values outside the reference: link "+referenceDoc+"#"+anchorOf(chartValuesSection)+" instead")
			continue
		}
		if len(t.columns) < 2 || t.columns[1] != "Type" {
			problems = append(problems, t.doc.where(t.header.number)+": no Type column")
			continue
		}
		for _, row := range t.rows {
			cells := cellsOf(row.text)
			documented := cells[1]
			for _, m := range inlineCode.FindAllStringSubmatch(cells[0], -1) {
				name := strings.ReplaceAll(strings.TrimSuffix(m[1], ".*"), "[]", "")
				// The types the name has in each API (or of the chart value) it names.
				var candidates []map[string]bool
				if t.columns[0] == "Value" {
					if v, ok := chartValues[referenceNamespace(t.header)][name]; ok {
						candidates = append(candidates, map[string]bool{v: true})
					}
				} else {
					// A table of the providerConfig reference names fields below its prefix: there the
					// field of that path is meant (bootstrap.kluctl's target, not a patch's).
					prefix := ""
					if t.doc.path == providerConfigDoc {
						prefix = tablePrefix(t.doc, t.header)
					}
					for _, fields := range apis {
						derived := map[string]bool{}
						if typ, ok := fields[prefix+"."+name]; ok && prefix != "" {
							derived[typ] = true
						} else {
							for path, typ := range fields {
								if path == name || strings.HasSuffix(path, "."+name) {
									derived[typ] = true
								}
							}
						}
						if len(derived) > 0 {
							candidates = append(candidates, derived)
						}
					}
				}
				if len(candidates) == 0 {
					problems = append(problems, t.doc.where(row.number)+": `"+name+"` names no "+strings.ToLower(t.columns[0]))
					continue
				}
				// Right if every type the name has in one API matches.
				var mismatches []string
				for _, derived := range candidates {
					var wrong []string
					for typ := range derived {
						if !typeMatches(documented, typ) {
							wrong = append(wrong, t.doc.where(row.number)+": `"+name+"` is "+typ+", documented as "+documented)
						}
					}
					if len(wrong) == 0 {
						mismatches = nil
						break
					}
					mismatches = append(mismatches, wrong...)
				}
				problems = append(problems, mismatches...)
			}
		}
	}
	sort.Strings(problems)
	return problems
}

var _ = Describe("field tables in the docs", func() {
	It("have a Type column with the type of each field and value", func() {
		tables := fieldTables(documents())
		Expect(len(tables)).To(BeNumerically(">=", 8))
		Expect(typeProblems(documents())).To(BeEmpty())
	})

	It("fail on a missing Type column and on a wrong type", func() {
		docs := []document{parseDocument("docs/x.md", "| Field | Default | Meaning |\n|---|---|---|\n| `source.url` | none | x |\n\n"+
			"| Field | Type | Default |\n|---|---|---|\n| `prune` | string | x |\n| `interval` | duration | x |\n\n"+
			"| Value | Type | Default |\n|---|---|---|\n| `replicaCount` | integer | 1 |\n"),
			parseDocument(referenceDoc, "## "+chartValuesSection+"\n\n| Value | Type | Default |\n|---|---|---|\n| `replicaCount` | boolean | 1 |\n| `image.tag` | string | x |\n\n"+
				"## "+admissionValuesSection+"\n\n### Runtime chart\n\n| Value | Type | Default |\n|---|---|---|\n| `replicaCount` | integer | 2 |\n| `webhookConfig.tls.crt` | boolean | x |\n")}
		Expect(typeProblems(docs)).To(ConsistOf(
			"docs/x.md:1: no Type column",
			"docs/x.md:7: `prune` is boolean, documented as string",
			"docs/x.md:10: a table of chart values outside the reference: link "+referenceDoc+"#chart-values instead",
			referenceDoc+":5: `replicaCount` is integer, documented as boolean",
			referenceDoc+":15: `webhookConfig.tls.crt` is string, documented as boolean",
		))
	})

	It("read a name of the providerConfig reference below its table's prefix", func() {
		// target is bootstrap.kluctl's string and a patch's object of bootstrap.flux.patches.
		docs := []document{parseDocument(providerConfigDoc, "### `bootstrap`\n\n`bootstrap.kluctl`:\n\n| Field | Type | Default |\n|---|---|---|\n| `target` | string | x |\n\n"+
			"`bootstrap.flux`:\n\n| Field | Type | Default |\n|---|---|---|\n| `patches` | string | x |\n")}
		Expect(typeProblems(docs)).To(ConsistOf(providerConfigDoc + ":13: `patches` is []object, documented as string"))
	})
})
