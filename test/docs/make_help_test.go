// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// helpLine is a rule of the Makefile with the description `make help` prints.
var helpLine = regexp.MustCompile(`^[a-z][a-z0-9-]*:[^=]*## \S`)

// undescribedTargets returns the rules of makefile whose line has no "## description".
func undescribedTargets(makefile string) []string {
	var missing []string
	for line := range strings.SplitSeq(makefile, "\n") {
		if m := makeTarget.FindStringSubmatch(line); m != nil && !helpLine.MatchString(line) {
			missing = append(missing, m[1])
		}
	}
	return missing
}

var _ = Describe("make help", func() {
	It("describes every target of the Makefile", func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
		Expect(err).NotTo(HaveOccurred())
		Expect(undescribedTargets(string(data))).To(BeEmpty())
	})

	It("fails on a target without a description", func() {
		Expect(undescribedTargets("a: b ## does a\nbare: a\n\t@true\n$(X):\n\tx\nV := 1\n")).To(ConsistOf("bare"))
	})
})

// makeTableDoc is the page whose section makeTableSection has a row for every make target.
const (
	makeTableDoc     = "docs/development/getting-started.md"
	makeTableSection = "Make targets"
)

// makeRow is the first cell of a row of that table: `make <target>`.
var makeRow = regexp.MustCompile("^\\| `make ([a-z][a-z0-9-]*)`")

// untabledTargets returns the targets of the Makefile the make-target table has no row for.
func untabledTargets(d document, targets map[string]bool) []string {
	GinkgoHelper()
	tabled := map[string]bool{}
	for _, l := range d.section(makeTableSection) {
		if m := makeRow.FindStringSubmatch(l.text); m != nil {
			tabled[m[1]] = true
		}
	}
	var missing []string
	for t := range targets {
		if !tabled[t] {
			missing = append(missing, t)
		}
	}
	slices.Sort(missing)
	return missing
}

var _ = Describe("the make-target table of "+makeTableDoc, func() {
	It("has a row for every target of the Makefile", func() {
		Expect(untabledTargets(documentNamed(documents(), makeTableDoc), makeTargets())).To(BeEmpty())
	})

	It("fails on a target without a row", func() {
		d := parseDocument(makeTableDoc, "## "+makeTableSection+"\n\n| Target | What it does |\n|---|---|\n| `make test` | tests |\n| `make help` | lists |\n\n## Next\n\n| `make demo` | elsewhere |\n")
		Expect(untabledTargets(d, map[string]bool{"test": true, "help": true, "demo": true, "test-suites": true})).To(ConsistOf("demo", "test-suites"))
	})
})
