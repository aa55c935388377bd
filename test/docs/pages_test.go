package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

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
