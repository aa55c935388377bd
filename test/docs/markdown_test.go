package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
	number  int
	section string
	text    string
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
		section string
		block   *codeBlock
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
			section = strings.TrimPrefix(l, "## ")
		}
		doc.lines = append(doc.lines, line{number: i + 1, section: section, text: l})
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
