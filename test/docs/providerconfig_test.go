// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"reflect"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// providerConfigDoc is the reference of the FluxConfig that project admins and shoot owners write.
const providerConfigDoc = "docs/usage/configuration.md"

// tablePrefix is the FluxConfig path a table of providerConfigDoc documents fields of: the last
// "`path`:" line before it in its subsection, else the subsection's heading "### `path`".
func tablePrefix(d document, header line) string {
	prefix := strings.ReplaceAll(strings.Trim(header.subsection, "` "), "*.", "")
	for _, l := range d.lines {
		if l.number >= header.number {
			break
		}
		if l.subsection != header.subsection {
			continue
		}
		if t := strings.TrimSpace(l.text); strings.HasPrefix(t, "`") && strings.HasSuffix(t, "`:") {
			prefix = strings.Trim(t, "`:")
		}
	}
	return prefix
}

// undocumentedFields returns the FluxConfig fields without a row in the field tables of
// providerConfigDoc; a row documents its path below the table's prefix.
func undocumentedFields(docs []document, fields []string) []string {
	documented, sections := map[string]bool{}, map[string]bool{}
	for _, t := range fieldTables(docs) {
		if t.doc.path != providerConfigDoc || t.columns[0] != "Field" {
			continue
		}
		prefix := tablePrefix(t.doc, t.header)
		// The table documents its prefix's object itself, not what the table leaves out.
		sections[prefix] = true
		for _, row := range t.rows {
			for _, m := range inlineCode.FindAllStringSubmatch(cellsOf(row.text)[0], -1) {
				name := strings.ReplaceAll(strings.TrimSuffix(m[1], ".*"), "[]", "")
				if prefix == "" {
					documented[name] = true
				} else {
					documented[prefix+"."+name] = true
				}
			}
		}
	}
	var missing []string
	for _, f := range fields {
		// A row documents its field and what the field holds (an object's keys, a map's values).
		covered := sections[strings.ReplaceAll(f, "*.", "")]
		for p := strings.ReplaceAll(f, "*.", ""); p != "" && !covered; {
			covered = documented[p]
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
			if sections[p] {
				// The object's keys have a table of their own: the field needs its row there.
				break
			}
		}
		if !covered {
			missing = append(missing, f)
		}
	}
	slices.Sort(missing)
	return missing
}

// providerConfigFields are the paths of the FluxConfig a user writes, without apiVersion and kind.
func providerConfigFields() []string {
	types := map[string]string{}
	fieldTypes(reflect.TypeFor[fluxv1alpha1.FluxConfig](), "", types)
	var fields []string
	for path, typ := range types {
		if path == "apiVersion" || path == "kind" || typ == "object" {
			continue
		}
		fields = append(fields, path)
	}
	return fields
}

var _ = Describe("the providerConfig reference, "+providerConfigDoc, func() {
	It("has a row for every field of the FluxConfig", func() {
		Expect(undocumentedFields(documents(), providerConfigFields())).To(BeEmpty())
	})

	It("fails on a field without a row, and counts a row for what its field holds", func() {
		docs := []document{parseDocument(providerConfigDoc, "## Fields\n\n### `source`\n\n"+
			"| Field | Type | Default | Meaning |\n|---|---|---|---|\n| `url` | string | none | x |\n| `ref` | object | none | x |\n| `oci` | object | none | x |\n\n"+
			"`source.oci`:\n\n| Field | Type | Default | Meaning |\n|---|---|---|---|\n| `url` | string | none | x |\n\n"+
			"### `controllers`\n\n| Field | Type | Default | Meaning |\n|---|---|---|---|\n| `resources` | object | none | x |\n")}
		Expect(undocumentedFields(docs, []string{"source.url", "source.ref.tag", "source.path", "source.oci.url", "source.oci.ref.tag",
			"controllers", "controllers.*.resources.limits", "controllers.*.concurrent", "url"})).To(ConsistOf(
			"controllers.*.concurrent", "source.oci.ref.tag", "source.path", "url"))
	})
})
