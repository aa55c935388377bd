// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command reuse checks that every file git tracks carries licensing information as the REUSE
// specification (https://reuse.software/spec-3.3/) asks: a source file an SPDX header of its own,
// any other file an annotation in REUSE.toml. No reuse tool can be installed here (it comes from
// PyPI), so this one checks the subset of the specification the repository uses. -fix adds the
// header to source files that lack it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

const (
	// Copyright and License are the SPDX header's values, for source files and REUSE.toml alike.
	Copyright = "The gardener-extension-shoot-flux authors"
	License   = "Apache-2.0"
	// headerLines is how far into a file the header is looked for: after a shebang at most.
	headerLines = 6
)

func main() {
	fix := flag.Bool("fix", false, "add the SPDX header to source files that lack it")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	problems, err := Check(root, *fix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reuse:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "reuse:", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "reuse: %d files without licensing information (add the header with `go run ./hack/reuse -fix`, or annotate them in REUSE.toml)\n", len(problems))
		os.Exit(1)
	}
}

// Check returns a line for every file tracked in root's git work tree that has no licensing
// information. With fix, it first adds the header to the source files that lack it.
func Check(root string, fix bool) ([]string, error) {
	files, err := trackedFiles(root)
	if err != nil {
		return nil, err
	}
	annotations, err := readAnnotations(filepath.Join(root, "REUSE.toml"))
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, file := range files {
		// The specification exempts its own metadata and the license texts.
		if file == "REUSE.toml" || file == "LICENSE" || strings.HasPrefix(file, "LICENSES/") {
			continue
		}
		comment, isSource := commentOf(file)
		if !isSource {
			if !annotations.covers(file) {
				problems = append(problems, file+": no SPDX header possible and no annotation in REUSE.toml")
			}
			continue
		}
		path := filepath.Join(root, file)
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("failed reading %s: %w", file, err)
		}
		if HasHeader(content) {
			continue
		}
		if !fix {
			problems = append(problems, file+": no SPDX header (SPDX-FileCopyrightText and SPDX-License-Identifier: "+License+")")
			continue
		}
		if err := os.WriteFile(path, AddHeader(content, comment), 0o644); err != nil {
			return nil, fmt.Errorf("failed writing %s: %w", file, err)
		}
	}
	return problems, nil
}

func trackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("failed listing the tracked files of %s: %w", root, err)
	}
	var files []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f == "" {
			continue
		}
		// A file deleted in the work tree but not yet in the index is no longer ours to check.
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

// commentOf returns the line comment of a source file that carries the header itself.
func commentOf(file string) (string, bool) {
	base := filepath.Base(file)
	switch {
	case strings.HasSuffix(base, ".go"):
		return "//", true
	case strings.HasSuffix(base, ".sh"), base == "Makefile", base == "Dockerfile", file == ".ci/run":
		return "#", true
	}
	return "", false
}

// HasHeader tells whether content starts with both SPDX tags, Apache-2.0 as the license.
func HasHeader(content []byte) bool {
	lines := bytes.SplitN(content, []byte("\n"), headerLines+1)
	var copyright, license bool
	for _, l := range lines[:min(len(lines), headerLines)] {
		copyright = copyright || bytes.Contains(l, []byte("SPDX-FileCopyrightText: "))
		license = license || bytes.Contains(l, []byte("SPDX-License-Identifier: "+License))
	}
	return copyright && license
}

// AddHeader returns content with the header in comment's syntax at its top, after a shebang.
func AddHeader(content []byte, comment string) []byte {
	header := fmt.Sprintf("%[1]s SPDX-FileCopyrightText: %[2]s\n%[1]s\n%[1]s SPDX-License-Identifier: %[3]s\n\n", comment, Copyright, License)
	if bytes.HasPrefix(content, []byte("#!")) {
		shebang, rest, _ := bytes.Cut(content, []byte("\n"))
		return slices.Concat(shebang, []byte("\n"+header), rest)
	}
	return slices.Concat([]byte(header), content)
}

// annotations are the path patterns of REUSE.toml's annotations with this repository's license.
type annotations []*regexp.Regexp

func readAnnotations(path string) (annotations, error) {
	var doc struct {
		Version     int `toml:"version"`
		Annotations []struct {
			Path      any    `toml:"path"`
			Copyright string `toml:"SPDX-FileCopyrightText"`
			License   string `toml:"SPDX-License-Identifier"`
		} `toml:"annotations"`
	}
	if _, err := toml.DecodeFile(path, &doc); err != nil {
		return nil, fmt.Errorf("failed reading %s: %w", path, err)
	}
	if doc.Version != 1 {
		return nil, fmt.Errorf("%s: version %d, want 1", path, doc.Version)
	}
	var result annotations
	for i, a := range doc.Annotations {
		if a.Copyright == "" || a.License != License {
			return nil, fmt.Errorf("%s: annotations[%d] needs SPDX-FileCopyrightText and SPDX-License-Identifier %q", path, i, License)
		}
		var patterns []string
		switch p := a.Path.(type) {
		case string:
			patterns = []string{p}
		case []any:
			for _, e := range p {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s: annotations[%d].path holds a non-string", path, i)
				}
				patterns = append(patterns, s)
			}
		default:
			return nil, fmt.Errorf("%s: annotations[%d].path must be a string or a list of strings", path, i)
		}
		for _, p := range patterns {
			result = append(result, GlobRegexp(p))
		}
	}
	return result, nil
}

func (a annotations) covers(file string) bool {
	for _, re := range a {
		if re.MatchString(file) {
			return true
		}
	}
	return false
}

// GlobRegexp translates a REUSE.toml path pattern: `*` matches within a path segment, `**`
// across segments.
func GlobRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch {
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case pattern[i] == '*':
			b.WriteString("[^/]*")
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
