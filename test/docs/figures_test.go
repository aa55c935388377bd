package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// figuresDoc is the one page that gives measured figures: every other page links to it, so that a
// figure is never given twice with different values.
const figuresDoc = "docs/performance.md"

// measurements are what a measured figure looks like: memory of the extension (RSS, heap) and the
// time a build, a test run or a demo took. Limits and defaults of the code (`32 MiB` of the render
// cache, a `10s` timeout) are no measurements; test/docs compares those with the code.
var measurements = []*regexp.Regexp{
	regexp.MustCompile(`\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:[.,]\d+)?)?\s*MiB\s+(?:RSS|of RSS|anonymous|live heap|heap)\b`),
	regexp.MustCompile(`(?i)\b(?:RSS|live heap|heap in use)\b[^.|()]{0,40}?\b\d+(?:[.,]\d+)?\s*MiB\b`),
	regexp.MustCompile(`(?i)\b(?:cold|warm|first)\b[^.|]{0,80}?\b(?:takes?|took|taking)\b[^.|]{0,20}?\b\d+(?:[.,]\d+)?\s*(?:minutes?|min|seconds?|s)\b`),
	regexp.MustCompile(`(?i)\b(?:takes?|took)\s+(?:about\s+|~\s*)?\d+(?:[.,]\d+)?(?:\s*(?:to|–|-)\s*\d+(?:[.,]\d+)?)?\s*(?:minutes?|min)\b`),
}

// figureFiles returns the text, by path, of the files outside figuresDoc that could quote a figure:
// the docs, the README, DEVELOPERS.md and the charts' values.
func figureFiles() map[string]string {
	GinkgoHelper()
	files := map[string]string{}
	paths := append(docPaths(), "DEVELOPERS.md")
	charts, err := filepath.Glob(filepath.Join(repoRoot, "charts", "*", "values.yaml"))
	Expect(err).NotTo(HaveOccurred())
	subcharts, err := filepath.Glob(filepath.Join(repoRoot, "charts", "*", "charts", "*", "values.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, p := range append(charts, subcharts...) {
		rel, err := filepath.Rel(repoRoot, p)
		Expect(err).NotTo(HaveOccurred())
		paths = append(paths, rel)
	}
	for _, p := range paths {
		if p == figuresDoc {
			continue
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, p))
		Expect(err).NotTo(HaveOccurred())
		files[p] = string(data)
	}
	return files
}

// quotedFigures returns the measurements in the files, with where they are.
func quotedFigures(files map[string]string) []string {
	var quoted []string
	for path, text := range files {
		// A sentence may wrap; comment leads of YAML are dropped.
		for i, l := range strings.Split(text, "\n") {
			// Patterns may find the same figure; the first that finds it names it.
			var taken [][]int
			for _, re := range measurements {
				for _, m := range re.FindAllStringIndex(l, -1) {
					if !slices.ContainsFunc(taken, func(t []int) bool { return m[0] < t[1] && t[0] < m[1] }) {
						taken = append(taken, m)
						quoted = append(quoted, path+":"+strconv.Itoa(i+1)+": "+l[m[0]:m[1]])
					}
				}
			}
		}
		joined := commentLead.ReplaceAllString(text, " ")
		for _, re := range measurements {
			for _, m := range re.FindAllString(joined, -1) {
				if !strings.Contains(text, m) {
					quoted = append(quoted, path+": "+m)
				}
			}
		}
	}
	return quoted
}

// duplicateFigures returns the figures figuresDoc gives in more than one row of the tables of one
// section.
func duplicateFigures(d document) []string {
	var (
		rows   = map[string]int{}
		dups   []string
		header string
		inRows bool
	)
	for _, l := range d.lines {
		if !strings.HasPrefix(l.text, "|") {
			header, inRows = "", false
			continue
		}
		cells := cellsOf(l.text)
		switch {
		case header == "":
			header = cells[0]
		case strings.HasPrefix(l.text, "|---"):
			inRows = true
		case inRows:
			k := l.section + "|" + header + "|" + cells[0]
			if first, ok := rows[k]; ok {
				dups = append(dups, d.where(l.number)+": "+cells[0]+" (also line "+strconv.Itoa(first)+")")
			} else {
				rows[k] = l.number
			}
		}
	}
	return dups
}

var _ = Describe("measured figures", func() {
	It("are given on "+figuresDoc+" only", func() {
		Expect(quotedFigures(figureFiles())).To(BeEmpty(), "give the figure on %s and link it", figuresDoc)
	})

	It("are given once each on "+figuresDoc, func() {
		Expect(duplicateFigures(documentNamed(documents(), figuresDoc))).To(BeEmpty())
	})

	It("fail on a figure quoted elsewhere or given twice, and accept limits and defaults", func() {
		Expect(quotedFigures(map[string]string{
			"README.md": "A warm `make demo` takes about 35 seconds; the first one took 14 minutes.\n",
			"charts/x/values.yaml": "# `make bench` measures 104-111 MiB RSS\n# with 500 shoots; the live heap is\n# 16 MiB.\n",
			"docs/x.md": "The render cache holds at most 32 MiB; the scan times out after `10s`; a key takes 0.8 s of CPU.\n",
		})).To(ConsistOf(
			"README.md:1: warm `make demo` takes about 35 seconds",
			"README.md:1: first one took 14 minutes",
			"charts/x/values.yaml:1: 104-111 MiB RSS",
			"charts/x/values.yaml: RSS with 500 shoots; the live heap is 16 MiB",
		))
		d := parseDocument(figuresDoc, "## Scale\n\n| Figure | Value |\n|---|---|\n| RSS at 500 shoots | 116 MiB |\n| RSS at 500 shoots | 120 MiB |\n\n"+
			"## Other\n\n| Figure | Value |\n|---|---|\n| RSS at 500 shoots | 90 MiB |\n")
		Expect(duplicateFigures(d)).To(ConsistOf(figuresDoc + ":6: RSS at 500 shoots (also line 5)"))
	})
})
