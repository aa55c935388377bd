// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

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
	"github.com/spf13/pflag"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// document is a markdown file split into what the checks look at.
type document struct {
	// path is relative to the repository root.
	path string
	// lines are the lines outside fenced code blocks, with the section each is in.
	lines []line
	// blocks are the fenced code blocks.
	blocks []codeBlock
}

type line struct {
	number int
	// section is the "## " heading the line is under, subsection the "### " heading within it.
	section, subsection string
	text                string
}

type codeBlock struct {
	startLine int
	section   string
	lines     []string
}

// inlineCode matches a code span; docs never nest backticks.
var inlineCode = regexp.MustCompile("`([^`]+)`")

// documents returns the hand-written documentation: every markdown file below docs/ (not the
// generated API reference in docs/api-reference) and the README.
func documents() []document {
	GinkgoHelper()
	paths := docPaths()
	Expect(len(paths)).To(BeNumerically(">", 5))

	var docs []document
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(repoRoot, p))
		Expect(err).NotTo(HaveOccurred())
		docs = append(docs, parseDocument(p, string(data)))
	}
	return docs
}

// generatedDocs is the directory of the generated API reference.
const generatedDocs = "docs/api-reference"

// docPaths returns the paths, relative to the repository root, of the hand-written docs and the
// README.
func docPaths() []string {
	GinkgoHelper()
	var paths []string
	Expect(filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		if e.IsDir() && rel == generatedDocs {
			return filepath.SkipDir
		}
		if !e.IsDir() && strings.HasSuffix(path, ".md") {
			paths = append(paths, rel)
		}
		return nil
	})).To(Succeed())
	return append(paths, "README.md")
}

func parseDocument(path, text string) document {
	doc := document{path: path}
	var (
		section, subsection string
		block               *codeBlock
	)
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if block == nil {
				block = &codeBlock{startLine: i + 1, section: section}
			} else {
				doc.blocks = append(doc.blocks, *block)
				block = nil
			}
			continue
		}
		if block != nil {
			block.lines = append(block.lines, l)
			continue
		}
		if strings.HasPrefix(l, "## ") {
			section, subsection = strings.TrimPrefix(l, "## "), ""
		}
		if strings.HasPrefix(l, "### ") {
			subsection = strings.TrimPrefix(l, "### ")
		}
		doc.lines = append(doc.lines, line{number: i + 1, section: section, subsection: subsection, text: l})
	}
	return doc
}

// codeSpans returns the inline code spans of the prose with the line they are on.
func (d document) codeSpans() []span {
	var spans []span
	for _, l := range d.lines {
		for _, m := range inlineCode.FindAllStringSubmatchIndex(l.text, -1) {
			spans = append(spans, span{line: l, text: l.text[m[2]:m[3]], start: m[0], end: m[1]})
		}
	}
	return spans
}

type span struct {
	line       line
	text       string
	start, end int
}

// where names the place of a span in failure messages.
func (d document) where(n int) string {
	return d.path + ":" + strconv.Itoa(n)
}

// section returns the lines of the "## " section with the given heading, failing if there is none.
func (d document) section(heading string) []line {
	GinkgoHelper()
	var out []line
	for _, l := range d.lines {
		if l.section == heading {
			out = append(out, l)
		}
	}
	Expect(out).NotTo(BeEmpty(), "%s has no section %q", d.path, heading)
	return out
}

func documentNamed(docs []document, path string) document {
	GinkgoHelper()
	for _, d := range docs {
		if d.path == path {
			return d
		}
	}
	Fail("no document " + path)
	return document{}
}

// maxPageLines is the length a hand-written page may have: a page over it covers more than one
// topic and is split.
const maxPageLines = 400

// frontMatter is the front matter the Gardener documentation site reads: a title and a description.
var frontMatter = regexp.MustCompile(`\A---\ntitle: \S[^\n]*\ndescription: \S[^\n]*\n---\n`)

// pageProblems returns the pages of docs/ (the generated API reference included) without the
// front matter, and the hand-written ones longer than maxPageLines.
func pageProblems(pages map[string]string) []string {
	var problems []string
	for path, text := range pages {
		if !frontMatter.MatchString(text) {
			problems = append(problems, path+": no front matter (title, description)")
		}
		if n := strings.Count(text, "\n"); n > maxPageLines && !strings.HasPrefix(path, generatedDocs+"/") {
			problems = append(problems, path+": "+strconv.Itoa(n)+" lines")
		}
	}
	return problems
}

// docsPages reads every markdown file below docs/.
func docsPages() map[string]string {
	GinkgoHelper()
	pages := map[string]string{}
	Expect(filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		pages[rel] = string(data)
		return err
	})).To(Succeed())
	return pages
}

// binaryBlockFlags returns the flags the code block that starts with the binary's name lists.
func binaryBlockFlags(docs []document, binary string) map[string]bool {
	listed := map[string]bool{}
	for _, d := range docs {
		for _, b := range d.blocks {
			if len(b.lines) == 0 || !strings.HasPrefix(strings.TrimSpace(b.lines[0]), binary+" ") {
				continue
			}
			for _, l := range b.lines[1:] {
				for _, m := range longFlag.FindAllStringSubmatch(l, -1) {
					listed[m[1]] = true
				}
			}
		}
	}
	return listed
}

// unlistedFlags returns the flags of a flag set that the listing lacks.
func unlistedFlags(fs *pflag.FlagSet, listed map[string]bool) []string {
	var missing []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !listed[f.Name] {
			missing = append(missing, "--"+f.Name)
		}
	})
	return missing
}

var _ = Describe("the pages of docs/", func() {
	It("carry the Gardener front matter, and the hand-written ones are at most 400 lines", func() {
		Expect(pageProblems(docsPages())).To(BeEmpty())
	})

	It("list every flag of the admission binary", func() {
		admission := constants.ExtensionName + "-admission"
		listed := binaryBlockFlags(documents(), admission)
		Expect(listed).NotTo(BeEmpty(), "no code block starts with %s", admission)
		Expect(unlistedFlags(binaryFlags()[admission], listed)).To(BeEmpty())
	})

	It("fail on a page without front matter, a long page, and a flag the listing lacks", func() {
		long := "---\ntitle: T\ndescription: D\n---\n" + strings.Repeat("x\n", maxPageLines)
		Expect(pageProblems(map[string]string{
			"docs/a.md":                  "# A\n",
			"docs/b.md":                  long,
			"docs/api-reference/flux.md": long,
			"docs/c.md":                  "---\ntitle: C\ndescription: the page C\n---\n\n# C\n",
		})).To(ConsistOf("docs/a.md: no front matter (title, description)", "docs/b.md: 404 lines"))

		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.Int("limits-known-hosts-max-bytes", 1, "")
		fs.Int("webhook-config-server-port", 1, "")
		docs := []document{parseDocument("docs/x.md", "```text\nx [flags]\n  --webhook-config-server-port   port\n```\n")}
		Expect(unlistedFlags(fs, binaryBlockFlags(docs, "x"))).To(ConsistOf("--limits-known-hosts-max-bytes"))
	})
})

// figuresDoc is the one page that gives measured figures: every other page links to it, so that a
// figure is never given twice with different values.
const figuresDoc = "docs/performance.md"

// A measured figure is a figure (a number with a unit of time or size) in a sentence that reads
// as a measurement: one that says what something took or measured, where or how (warm, cold, on
// this machine), of what (CPU, RSS, heap), or that gives an amount as approximate (about, ~). A
// figure in a code span (`10s`, `32Mi`) or qualified as a configured value (by default, at most,
// a limit of, times out after, every; the 2 MiB response limit) is a default or a limit of the code, which test/docs
// compares with the code instead, not a measurement.
var (
	figure         = regexp.MustCompile(`(?:~\s*)?\b\d+(?:[.,]\d+)*(?:\s*(?:[–-]|to)\s*\d+(?:[.,]\d+)*)?\s*(?:µs|ms|s|secs?|seconds?|min|mins|minutes?|h|hours?|bytes|KiB|MiB|GiB|KB|MB|GB)\b`)
	measurementCue = regexp.MustCompile(`(?i)\b(?:took|takes?|taking|measured|measures?|warm|cold|wall|elapsed|CPU|RSS|heap|about|roughly|around|approximately)\b|~|on this machine|on the CI`)
	configuredBy   = regexp.MustCompile(`(?i)(?:\bdefaults?(?: to| of)?|by default|at most|at least|\blimit(?: of)?|\bbound(?:ed)?(?: by| to| at| of)?|times? out after|timeout(?: of)?|\bevery|\bbudget(?: of)?|maximum(?: of)?|minimum(?: of)?)\s*[(:]?\s*(?:the |a |an )?$`)
	defaultAfter   = regexp.MustCompile(`^\s*(?:by default|\(default|(?:\w+ )?(?:limit|bound|cap|timeout)\b)`)
	// listItem starts an item of a list, which is read apart from the lines before it.
	listItem = regexp.MustCompile(`^(?:[-*]|\d+\.) `)
	// sentenceEnd ends a sentence; a table row is read as one.
	sentenceEnd = regexp.MustCompile(`[.!?;](?:\s+|$)`)
	// yamlComment is a comment line of a values file.
	yamlComment = regexp.MustCompile(`^\s*#\s?(.*)$`)
)

// textLine is a line of prose with its number.
type textLine struct {
	number int
	text   string
}

// paragraphs groups lines into what is read as one piece of prose: a paragraph, a list item or a
// table row. An empty line or a heading ends one.
func paragraphs(lines []textLine) [][]textLine {
	var (
		out [][]textLine
		cur []textLine
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur = nil
	}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			flush()
		case strings.HasPrefix(t, "|"):
			flush()
			out = append(out, []textLine{l})
		case listItem.MatchString(t):
			flush()
			cur = []textLine{l}
		default:
			cur = append(cur, l)
		}
	}
	flush()
	return out
}

// sentence is a sentence of prose (a table row is read as one) with the lines it is on.
type sentence struct {
	// text is the sentence; prose is the same with its code spans blanked.
	text, prose string
	// numbers are the numbers of the lines the sentence is joined from, starts where each begins
	// in text.
	numbers, starts []int
}

// lineAt returns the number of the line the sentence's i-th byte is on.
func (s sentence) lineAt(i int) int {
	n, found := slices.BinarySearch(s.starts, i)
	if !found {
		n--
	}
	return s.numbers[max(n, 0)]
}

// sentencesOf splits prose lines into sentences. Sentences end at the ends outside code spans.
func sentencesOf(lines []textLine) []sentence {
	var out []sentence
	for _, p := range paragraphs(lines) {
		var (
			joined strings.Builder
			starts []int
		)
		for i, l := range p {
			if i > 0 {
				joined.WriteString(" ")
			}
			starts = append(starts, joined.Len())
			joined.WriteString(l.text)
		}
		text := joined.String()
		prose := inlineCode.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
		begin := 0
		for _, end := range append(sentenceEnd.FindAllStringIndex(prose, -1), []int{len(prose), len(prose)}) {
			if begin >= end[1] {
				continue
			}
			st := sentence{text: text[begin:end[1]], prose: prose[begin:end[1]]}
			for i, off := range starts {
				if off < end[1] && (i+1 == len(starts) || starts[i+1] > begin) {
					st.numbers = append(st.numbers, p[i].number)
					st.starts = append(st.starts, max(off-begin, 0))
				}
			}
			out = append(out, st)
			begin = end[1]
		}
	}
	return out
}

// proseLines returns the lines of a document's prose (outside code blocks).
func proseLines(d document) []textLine {
	var lines []textLine
	for _, l := range d.lines {
		lines = append(lines, textLine{l.number, l.text})
	}
	return lines
}

// measuredFigures returns the measured figures of the prose lines, with where they are.
func measuredFigures(path string, lines []textLine) []string {
	var found []string
	for _, s := range sentencesOf(lines) {
		if !measurementCue.MatchString(s.prose) {
			continue
		}
		for _, m := range figure.FindAllStringIndex(s.prose, -1) {
			if configuredBy.MatchString(s.prose[:m[0]]) || defaultAfter.MatchString(s.prose[m[1]:]) {
				continue
			}
			found = append(found, path+":"+strconv.Itoa(s.lineAt(m[0]))+": "+strings.TrimSpace(s.prose[m[0]:m[1]]))
		}
	}
	return found
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

// quotedFigures returns the measured figures in the files, with where they are: in the prose of
// markdown files, in the comments of values files.
func quotedFigures(files map[string]string) []string {
	var quoted []string
	for path, text := range files {
		var lines []textLine
		if strings.HasSuffix(path, ".md") {
			lines = proseLines(parseDocument(path, text))
		} else {
			for i, l := range strings.Split(text, "\n") {
				// A line that is no comment ends the comment's paragraph.
				comment := ""
				if m := yamlComment.FindStringSubmatch(l); m != nil {
					comment = m[1]
				}
				lines = append(lines, textLine{i + 1, comment})
			}
		}
		quoted = append(quoted, measuredFigures(path, lines)...)
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

	It("fail on a figure quoted elsewhere, in any word order, or given twice, and accept limits and defaults", func() {
		Expect(quotedFigures(map[string]string{
			"README.md": "A warm `make demo` takes about 35 seconds; the first one took 14 minutes.\n" +
				"The demo runs in about 35 s warm. Warm, it is\n35 s. It takes 12 minutes. CI: 31 min on this machine.\n",
			"charts/x/values.yaml": "# `make bench` measures 104-111 MiB RSS\n# with 500 shoots; the live heap is\n# 16 MiB.\nkey: 1\n# ~250 MiB\n",
			"docs/x.md": "The render cache holds at most 32 MiB; the scan times out after `10s`; a key takes 0.8 s of CPU.\n\n" +
				"| `timeouts.hostKeyScan` | duration | `10s` | bound of the scan, at most `1m` |\n| warm demo | 35 s |\n\n" +
				"The timeout is 2 minutes by default, the resync every 5 minutes, a cached render about 470 KiB.\n" +
				"- The alert fires after 15 minutes.\n",
		})).To(ConsistOf(
			"README.md:1: 35 seconds",
			"README.md:1: 14 minutes",
			"README.md:2: 35 s",
			"README.md:3: 35 s",
			"README.md:3: 12 minutes",
			"README.md:3: 31 min",
			"charts/x/values.yaml:1: 104-111 MiB",
			"charts/x/values.yaml:3: 16 MiB",
			"charts/x/values.yaml:5: ~250 MiB",
			"docs/x.md:1: 0.8 s",
			"docs/x.md:4: 35 s",
			"docs/x.md:6: 470 KiB",
		))
		d := parseDocument(figuresDoc, "## Scale\n\n| Figure | Value |\n|---|---|\n| RSS at 500 shoots | 116 MiB |\n| RSS at 500 shoots | 120 MiB |\n\n"+
			"## Other\n\n| Figure | Value |\n|---|---|\n| RSS at 500 shoots | 90 MiB |\n")
		Expect(duplicateFigures(d)).To(ConsistOf(figuresDoc + ":6: RSS at 500 shoots (also line 5)"))
	})
})
