// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("REUSE check", func() {
	var root string

	write := func(name, content string) {
		path := filepath.Join(root, name)
		Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	}
	header := "// SPDX-FileCopyrightText: " + Copyright + "\n//\n// SPDX-License-Identifier: " + License + "\n\n"

	BeforeEach(func() {
		root = GinkgoT().TempDir()
		git("init", "-q")
		write("REUSE.toml", `version = 1
[[annotations]]
path = ["*.md", "docs/**/*.md"]
SPDX-FileCopyrightText = "`+Copyright+`"
SPDX-License-Identifier = "`+License+`"
`)
		write("README.md", "# readme\n")
		write("docs/a/b.md", "# page\n")
		write("pkg/ok.go", header+"package pkg\n")
	})

	check := func(fix bool) []string {
		git("add", "-A")
		problems, err := Check(root, fix)
		Expect(err).NotTo(HaveOccurred())
		return problems
	}

	It("accepts headers and annotated files", func() {
		Expect(check(false)).To(BeEmpty())
	})

	It("fails on a source file without a header, and on one with another license", func() {
		write("pkg/bare.go", "package pkg\n")
		write("hack/x.sh", "#!/usr/bin/env bash\n# SPDX-FileCopyrightText: x\n# SPDX-License-Identifier: MIT\necho\n")
		Expect(check(false)).To(ConsistOf(HavePrefix("pkg/bare.go: no SPDX header"), HavePrefix("hack/x.sh: no SPDX header")))
	})

	It("fails on a file that cannot carry a header and is not annotated", func() {
		write("docs/page.json", "{}\n")
		write("other/c.md", "# not under docs\n")
		Expect(check(false)).To(ConsistOf(HavePrefix("docs/page.json: no SPDX header possible"), HavePrefix("other/c.md: no SPDX header possible")))
	})

	It("adds the header with fix, after a shebang and before a build constraint", func() {
		write("pkg/bare.go", "//go:build tools\n\npackage pkg\n")
		write("hack/run.sh", "#!/usr/bin/env bash\necho hi\n")
		write("Makefile", "all:\n\ttrue\n")
		Expect(check(true)).To(BeEmpty())
		Expect(check(false)).To(BeEmpty())
		Expect(os.ReadFile(filepath.Join(root, "pkg/bare.go"))).To(BeEquivalentTo(header + "//go:build tools\n\npackage pkg\n"))
		Expect(os.ReadFile(filepath.Join(root, "hack/run.sh"))).To(BeEquivalentTo("#!/usr/bin/env bash\n# SPDX-FileCopyrightText: " + Copyright + "\n#\n# SPDX-License-Identifier: " + License + "\n\necho hi\n"))
		Expect(os.ReadFile(filepath.Join(root, "Makefile"))).To(HavePrefix("# SPDX-FileCopyrightText: "))
	})

	It("refuses an annotation with another license", func() {
		write("REUSE.toml", "version = 1\n[[annotations]]\npath = \"*.md\"\nSPDX-FileCopyrightText = \"x\"\nSPDX-License-Identifier = \"MIT\"\n")
		git("add", "-A")
		_, err := Check(root, false)
		Expect(err).To(MatchError(ContainSubstring(`SPDX-License-Identifier "Apache-2.0"`)))
	})

	DescribeTable("path patterns",
		func(pattern, file string, match bool) {
			Expect(GlobRegexp(pattern).MatchString(file)).To(Equal(match))
		},
		Entry(nil, "*.md", "README.md", true),
		Entry(nil, "*.md", "docs/README.md", false),
		Entry(nil, "**/*.md", "docs/a/README.md", true),
		Entry(nil, "**/testdata/**", "pkg/x/testdata/fuzz/F/1", true),
		Entry(nil, "go.sum", "go.sum", true),
		Entry(nil, "go.sum", "go.sumx", false),
	)
})
