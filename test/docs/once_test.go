// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
)

// Facts the docs give once: a table that more than one page has is a table whose copies drift
// apart. Each has its owner page; the others link to it.

// publishRefsDoc owns the table of the refs `make publish` and `make push` push.
const publishRefsDoc = "docs/operations/installation.md"

// limitFields are the JSON names of the limits of the ControllerConfiguration.
func limitFields() []string {
	var names []string
	eachJSONField(reflect.TypeFor[configv1alpha1.Limits](), func(name string, _ reflect.Type) { names = append(names, name) })
	return names
}

// tableRows returns the rows of the tables of a document, each table by the number of its first line.
func tableRows(d document) map[int][]line {
	tables := map[int][]line{}
	start := 0
	for _, l := range d.lines {
		if !strings.HasPrefix(l.text, "|") {
			start = 0
			continue
		}
		if start == 0 {
			start = l.number
		}
		tables[start] = append(tables[start], l)
	}
	return tables
}

// countRows returns how many rows match.
func countRows(rows []line, match func(string) bool) int {
	n := 0
	for _, r := range rows {
		if match(r.text) {
			n++
		}
	}
	return n
}

// duplicatedTables returns the tables of published refs outside publishRefsDoc and the tables of
// limits outside referenceDoc: a table with two or more rows naming a published ref, or three or
// more rows naming a limit.
func duplicatedTables(docs []document, limits []string) []string {
	limitName := regexp.MustCompile("`(?:limits\\.)?(?:" + strings.Join(limits, "|") + ")`")
	var dups []string
	for _, d := range docs {
		for start, rows := range tableRows(d) {
			if d.path != publishRefsDoc && countRows(rows, refPattern.MatchString) >= 2 {
				dups = append(dups, fmt.Sprintf("%s: a table of the published refs, which %s has: link it", d.where(start), publishRefsDoc))
			}
			if d.path != referenceDoc && countRows(rows, limitName.MatchString) >= 3 {
				dups = append(dups, fmt.Sprintf("%s: a table of limits, which %s has: link it", d.where(start), referenceDoc+"#limits"))
			}
		}
	}
	slices.Sort(dups)
	return dups
}

// restatedLimits returns the sentences outside referenceDoc that name a limit with a number
// outside code spans: the value of a limit is given in the reference only. Error messages in code
// spans quote what the user sees and may hold the number.
func restatedLimits(docs []document, limits []string) []string {
	limitName := regexp.MustCompile("`(?:limits\\.)?(?:" + strings.Join(limits, "|") + ")`")
	number := regexp.MustCompile(`\b\d[\d,.]*\b`)
	// limitValue gives limits without naming their fields: "limits (64 KiB, 1000 lines)".
	limitValue := regexp.MustCompile(`(?i)\blimits?\s*(?:\(|:|of)\s*(\d[\d,.]*)`)
	// limitUnit gives a limit by what it counts, without the word: "at most 16 wildcards per pattern".
	limitUnit := regexp.MustCompile(`(?i)\b(\d[\d,.]*)\s*(?:wildcards?|(?:characters|lines|wildcards) per (?:pattern|line))\b`)
	var restated []string
	for _, d := range docs {
		if d.path == referenceDoc {
			continue
		}
		for _, s := range sentencesOf(proseLines(d)) {
			// Numbers in links' targets and in code spans are no values.
			prose := link.ReplaceAllString(s.prose, "")
			v := limitValue.FindStringSubmatch(prose)
			if v == nil && d.path != figuresDoc {
				// performance.md measures the matcher with more wildcards than the limit.
				v = limitUnit.FindStringSubmatch(prose)
			}
			if v != nil {
				restated = append(restated, fmt.Sprintf("%s: %q restates a limit (%s): link %s#limits", d.where(s.lineAt(0)), strings.TrimSpace(s.text), v[1], referenceDoc))
				continue
			}
			if !limitName.MatchString(s.text) {
				continue
			}
			if m := number.FindString(prose); m != "" {
				restated = append(restated, fmt.Sprintf("%s: %q restates a limit (%s): link %s#limits", d.where(s.lineAt(0)), strings.TrimSpace(s.text), m, referenceDoc))
			}
		}
	}
	return restated
}

var _ = Describe("facts the docs give once", func() {
	It("have one table: the published refs on "+publishRefsDoc+", the limits on "+referenceDoc, func() {
		Expect(duplicatedTables(documents(), limitFields())).To(BeEmpty())
	})

	It("give the value of a limit on "+referenceDoc+" only", func() {
		Expect(restatedLimits(documents(), limitFields())).To(BeEmpty())
	})

	It("fail on a second table of refs or limits and on a limit restated, and accept links and error messages", func() {
		limits := limitFields()
		Expect(limits).To(ContainElements("privateKeyMaxBytes", "reservedWorkersPercent"))
		docs := []document{
			parseDocument("docs/development/getting-started.md", "| Artifact | Ref |\n|---|---|\n"+
				"| extension image | `$(REGISTRY)/extensions/gardener-extension-shoot-flux:<VERSION>` |\n"+
				"| admission image | `$(REGISTRY)/extensions/gardener-extension-shoot-flux-admission:<VERSION>` |\n\n"+
				"| Limit | Default |\n|---|---|\n| `knownHostsMaxBytes` | 65536 |\n| `knownHostsMaxLines` | 1000 |\n| `limits.hostPatternMaxLength` | 300 |\n"),
			parseDocument("docs/usage/credentials.md", "The private key is bounded: 16 KiB of PEM (`privateKeyMaxBytes`).\n"+
				"Host patterns and limits (64 KiB, 1000 lines, 300 characters and 16 wildcards per pattern): see [Host patterns](#host-patterns).\n"+
				"It is bounded by `limits.privateKeyMaxBits` ([Limits](../operations/configuration.md#limits)), e.g.\n"+
				"`private key is 20480 bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)`.\n"+
				"A pattern holds at most 16 wildcards.\n"),
			parseDocument(publishRefsDoc, "| Artifact | Ref |\n|---|---|\n| extension image | `<registry>/extensions/gardener-extension-shoot-flux:<version>` |\n"+
				"| admission image | `<registry>/extensions/gardener-extension-shoot-flux-admission:<version>` |\n"),
		}
		Expect(duplicatedTables(docs, limits)).To(ConsistOf(
			"docs/development/getting-started.md:1: a table of the published refs, which "+publishRefsDoc+" has: link it",
			"docs/development/getting-started.md:6: a table of limits, which "+referenceDoc+"#limits has: link it",
		))
		Expect(restatedLimits(docs, limits)).To(ConsistOf(
			"docs/development/getting-started.md:8: \"| `knownHostsMaxBytes` | 65536 |\" restates a limit (65536): link "+referenceDoc+"#limits",
			"docs/development/getting-started.md:9: \"| `knownHostsMaxLines` | 1000 |\" restates a limit (1000): link "+referenceDoc+"#limits",
			"docs/development/getting-started.md:10: \"| `limits.hostPatternMaxLength` | 300 |\" restates a limit (300): link "+referenceDoc+"#limits",
			`docs/usage/credentials.md:1: "The private key is bounded: 16 KiB of PEM (`+"`privateKeyMaxBytes`"+`)." restates a limit (16): link `+referenceDoc+"#limits",
			`docs/usage/credentials.md:2: "Host patterns and limits (64 KiB, 1000 lines, 300 characters and 16 wildcards per pattern): see [Host patterns](#host-patterns)." restates a limit (64): link `+referenceDoc+"#limits",
			`docs/usage/credentials.md:5: "A pattern holds at most 16 wildcards." restates a limit (16): link `+referenceDoc+"#limits",
		))
	})
})
