// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const repoRoot = "../.."

// layoutDoc is the page whose "Layout" table lists the repository's directories.
const layoutDoc = "docs/development/getting-started.md"

// layoutPaths returns the paths in the first column of the layout table of layoutDoc.
func layoutPaths() []string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, layoutDoc))
	Expect(err).NotTo(HaveOccurred())
	section := string(data)
	start := strings.Index(section, "## Layout")
	Expect(start).NotTo(BeNumerically("<", 0))
	section = section[start:]
	if end := strings.Index(section[len("## Layout"):], "\n## "); end >= 0 {
		section = section[:len("## Layout")+end]
	}
	cell := regexp.MustCompile(`^\| ([^|]+) \|`)
	path := regexp.MustCompile("`([^`]+)`")
	var paths []string
	for _, line := range strings.Split(section, "\n") {
		m := cell.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, p := range path.FindAllStringSubmatch(m[1], -1) {
			paths = append(paths, strings.TrimSuffix(p[1], "/"))
		}
	}
	return paths
}

var _ = Describe("the layout table of "+layoutDoc, func() {
	It("names only paths that exist", func() {
		paths := layoutPaths()
		Expect(paths).NotTo(BeEmpty())
		for _, p := range paths {
			Expect(filepath.Join(repoRoot, p)).To(BeADirectory(), "the layout table names %s", p)
		}
	})

	It("lists every package directory under cmd, pkg and test", func() {
		listed := map[string]bool{}
		for _, p := range layoutPaths() {
			listed[p] = true
		}
		covered := func(dir string) bool {
			for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
				if listed[d] {
					return true
				}
			}
			return false
		}
		for _, top := range []string{"cmd", "pkg", "test"} {
			entries, err := os.ReadDir(filepath.Join(repoRoot, top))
			Expect(err).NotTo(HaveOccurred())
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				dir := filepath.Join(top, e.Name())
				subdirs, err := os.ReadDir(filepath.Join(repoRoot, dir))
				Expect(err).NotTo(HaveOccurred())
				// A directory that only groups packages (pkg/apis, pkg/component, ...) is covered by
				// its children.
				hasGo := false
				for _, s := range subdirs {
					hasGo = hasGo || strings.HasSuffix(s.Name(), ".go")
				}
				if hasGo {
					Expect(covered(dir)).To(BeTrue(), "%s is not in the layout table", dir)
					continue
				}
				for _, s := range subdirs {
					if s.IsDir() && s.Name() != "testdata" {
						Expect(covered(filepath.Join(dir, s.Name()))).To(BeTrue(), "%s is not in the layout table", filepath.Join(dir, s.Name()))
					}
				}
			}
		}
	})
})
