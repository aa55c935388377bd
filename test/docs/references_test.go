// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	admissionapp "github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux-admission/app"
	controllerapp "github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux/app"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// keyTree is the set of dotted paths of a values file or an API type: a key maps to its children;
// a nil tree below a key means any path continues (a free-form map, an arbitrary JSON document).
type keyTree map[string]keyTree

// wildcard marks a key below which every path exists.
var wildcard = keyTree{"*": nil}

func (t keyTree) has(path []string) bool {
	if len(path) == 0 || path[0] == "*" {
		return true
	}
	if _, ok := t["*"]; ok {
		return true
	}
	child, ok := t[path[0]]
	if !ok {
		return false
	}
	if len(path) == 1 {
		return true
	}
	return child != nil && child.has(path[1:])
}

// valuesTree reads a values.yaml; an empty map in it ({}) is free-form.
func valuesTree(path string) keyTree {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	var values map[string]any
	Expect(yaml.Unmarshal(data, &values)).To(Succeed())
	return mapTree(values)
}

func mapTree(m map[string]any) keyTree {
	if len(m) == 0 {
		return wildcard
	}
	t := keyTree{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			t[k] = mapTree(sub)
		} else {
			t[k] = keyTree{}
		}
	}
	return t
}

var (
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	marshalerType    = reflect.TypeFor[json.Marshaler]()
)

// typeTree lists the JSON paths of a Go API type.
func typeTree(t reflect.Type) keyTree {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch {
	case t == rawExtensionType, t.Kind() == reflect.Map, t.Kind() == reflect.Interface:
		return wildcard
	case t.Kind() != reflect.Struct, reflect.PointerTo(t).Implements(marshalerType):
		return keyTree{}
	}
	tree := keyTree{}
	eachJSONField(t, func(name string, ft reflect.Type) {
		tree[name] = typeTree(ft)
	})
	return tree
}

// eachJSONField calls fn with the JSON name and type of every field of the struct type t, the
// fields of inlined structs included.
func eachJSONField(t reflect.Type, fn func(name string, ft reflect.Type)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous || strings.Contains(opts, "inline") {
			eachJSONField(f.Type, fn)
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, f.Type)
	}
}

// namespaces are the places a dotted path in the docs can name: the values of every chart (the
// admission umbrella chart with its subcharts' values under their aliases) and the fields of the
// APIs a user or operator writes.
func namespaces() map[string]keyTree {
	GinkgoHelper()
	admission := "charts/gardener-extension-shoot-flux-admission"
	umbrella := valuesTree(admission + "/values.yaml")
	for alias, t := range map[string]keyTree{
		"application": valuesTree(admission + "/charts/application/values.yaml"),
		"runtime":     valuesTree(admission + "/charts/runtime/values.yaml"),
	} {
		for k, v := range t {
			umbrella[alias][k] = v
		}
	}
	return map[string]keyTree{
		"values of the extension chart":             valuesTree("charts/gardener-extension-shoot-flux/values.yaml"),
		"values of the admission chart":             umbrella,
		"values of the admission application chart": valuesTree(admission + "/charts/application/values.yaml"),
		"values of the admission runtime chart":     valuesTree(admission + "/charts/runtime/values.yaml"),
		"FluxConfig":                                typeTree(reflect.TypeFor[fluxv1alpha1.FluxConfig]()),
		"FluxStatus":                                typeTree(reflect.TypeFor[fluxv1alpha1.FluxStatus]()),
		"ControllerConfiguration":                   typeTree(reflect.TypeFor[configv1alpha1.ControllerConfiguration]()),
	}
}

var (
	// dottedPath is what a value or field reference looks like: `image.tag`, `config.*`.
	// A segment starting with a capital is a Go identifier: `bootstrap.ShootInfoFromCluster`.
	dottedPath = regexp.MustCompile(`^[a-z][A-Za-z0-9]*(\.[a-z][A-Za-z0-9]*)*(\.\*)?$`)
	// fileSuffixes end names that are files, not paths: `config.yaml`, `identity.pub`.
	// API groups and host names end like domains: `flux.extensions.gardener.cloud`.
	fileSuffixes = []string{".yaml", ".yml", ".json", ".md", ".go", ".sh", ".pub", ".asc", ".agekey", ".kubeconfig", ".tgz", ".cloud", ".io", ".com"}
)

// foreignPaths are fields of other APIs that share a first segment with this repository's, by the
// page allowed to name them: the migration notes quote stackit's FluxConfig (pkg/conversion/stackit).
var foreignPaths = map[string]map[string]bool{
	"docs/usage/migration.md": {
		"source.template": true, "source.template.spec.url": true, "flux.registry": true,
		"source.gitRepository": true, "source.ociRepository": true, "flux.componentsExtra": true,
		"source.gitRepository.template": true, "source.ociRepository.template": true,
	},
}

// unresolvedPaths returns the dotted paths of the docs that start like a path of one of the
// namespaces but exist in none of them, with where they are.
func unresolvedPaths(docs []document) []string {
	GinkgoHelper()
	ns := namespaces()
	var unresolved []string
	for _, d := range docs {
		for _, s := range d.codeSpans() {
			// `a.b, c.d` lists several.
			for _, ref := range strings.Split(s.text, ", ") {
				if !dottedPath.MatchString(ref) || !strings.Contains(ref, ".") || hasAnySuffix(ref, fileSuffixes) || foreignPaths[d.path][ref] {
					continue
				}
				path := strings.Split(ref, ".")
				claimed, found := false, false
				for _, t := range ns {
					if _, ok := t[path[0]]; ok {
						claimed = true
						found = found || t.has(path)
					}
				}
				if claimed && !found {
					unresolved = append(unresolved, d.where(s.line.number)+": `"+ref+"`")
				}
			}
		}
	}
	return unresolved
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, suffix := range suffixes {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// binaryFlags are the flag sets of the two binaries, built the way their main functions build them.
func binaryFlags() map[string]*pflag.FlagSet {
	return map[string]*pflag.FlagSet{
		constants.ExtensionName:                controllerapp.NewControllerCommand().Flags(),
		constants.ExtensionName + "-admission": admissionapp.NewAdmissionCommand().Flags(),
	}
}

// foreignFlagSections are the sections that name flags of other programs (the Flux and kluctl
// controllers the sandbox runs, the git hosts' CLIs); a flag of this repository's binaries is never
// named there.
var foreignFlagSections = map[string]bool{
	"Flux and kluctl controllers in the sandbox's shoots": true,
	"2. Register it read-only":                            true,
}

var longFlag = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)

// unknownFlags returns the --flags of the docs that neither binary has: those in inline code (a
// flag of either binary) and those in a code block that starts with a binary's name (a flag of
// that binary).
func unknownFlags(docs []document) []string {
	GinkgoHelper()
	sets := binaryFlags()
	known := func(name string, binaries ...string) bool {
		for _, b := range binaries {
			if sets[b].Lookup(name) != nil {
				return true
			}
		}
		return false
	}
	var unknown []string
	for _, d := range docs {
		for _, s := range d.codeSpans() {
			if foreignFlagSections[s.line.section] || !strings.HasPrefix(s.text, "--") {
				continue
			}
			for _, m := range longFlag.FindAllStringSubmatch(s.text, -1) {
				if !known(m[1], constants.ExtensionName, constants.ExtensionName+"-admission") {
					unknown = append(unknown, d.where(s.line.number)+": --"+m[1])
				}
			}
		}
		for _, b := range d.blocks {
			if len(b.lines) == 0 {
				continue
			}
			binary, _, _ := strings.Cut(strings.TrimSpace(b.lines[0]), " ")
			if _, ok := sets[binary]; !ok {
				continue
			}
			for i, l := range b.lines {
				for _, m := range longFlag.FindAllStringSubmatch(l, -1) {
					if !known(m[1], binary) {
						unknown = append(unknown, d.where(b.startLine+1+i)+": --"+m[1]+" of "+binary)
					}
				}
			}
		}
	}
	return unknown
}

var (
	// repoPath is a path into this repository: it starts with a top-level directory.
	repoPath = regexp.MustCompile(`(?:^|[\s(\x60="'])((?:cmd|pkg|test|hack|charts|example|docs|imagevector)/[A-Za-z0-9_./<>*-]*)`)
	// foreignLink is a code span that is the text of a link to another site.
	foreignLink = regexp.MustCompile(`^\]\(https?://`)
	// foreignOwner precedes a path of another repository: gardener's `hack/...`.
	foreignOwner = regexp.MustCompile(`(?:gardener's|flux2's|kluctl's|controller's|upstream) $`)
	// goIdentifier ends a package path with one of its identifiers: `pkg/fluxconfig.Resolve`.
	goIdentifier = regexp.MustCompile(`\.[A-Z][A-Za-z0-9]*$`)
)

// ignoredDirs are the directories .gitignore lists: make targets create them (`hack/tools/bin`).
func ignoredDirs() []string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, ".gitignore"))
	Expect(err).NotTo(HaveOccurred())
	var dirs []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") {
			dirs = append(dirs, strings.Trim(l, "/"))
		}
	}
	return dirs
}

// missingPaths returns the repository paths the docs name that do not exist. A path with a
// placeholder (`pkg/manifests/flux/<version>/`) must exist up to the placeholder.
func missingPaths(docs []document) []string {
	GinkgoHelper()
	var missing []string
	ignored := ignoredDirs()
	check := func(where, p string) {
		p = goIdentifier.ReplaceAllString(strings.TrimRight(p, ".,:;)"), "")
		if i := strings.IndexAny(p, "<*"); i >= 0 {
			p = p[:strings.LastIndex(p[:i], "/")+1]
		}
		for _, dir := range ignored {
			if p == dir || strings.HasPrefix(p, dir+"/") {
				return
			}
		}
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			missing = append(missing, where+": "+p)
		}
	}
	for _, d := range docs {
		for _, l := range d.lines {
			for _, m := range repoPath.FindAllStringSubmatchIndex(l.text, -1) {
				before, after := l.text[:m[2]], l.text[m[3]:]
				if foreignOwner.MatchString(strings.TrimSuffix(before, "`")) || foreignLink.MatchString(strings.TrimPrefix(after, "`")) ||
					strings.HasSuffix(before, "/") {
					continue
				}
				check(d.where(l.number), l.text[m[2]:m[3]])
			}
		}
		for _, b := range d.blocks {
			for i, l := range b.lines {
				for _, m := range repoPath.FindAllStringSubmatch(l, -1) {
					check(d.where(b.startLine+1+i), m[1])
				}
			}
		}
	}
	return missing
}

// link is a relative markdown link: [text](target#anchor).
var link = regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)

// brokenLinks returns relative links to files that do not exist or to headings they do not have.
func brokenLinks(docs []document) []string {
	GinkgoHelper()
	var broken []string
	for _, d := range docs {
		for _, l := range d.lines {
			for _, m := range link.FindAllStringSubmatch(l.text, -1) {
				target, anchor := m[1], strings.TrimPrefix(m[2], "#")
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file := d.path
				if target != "" {
					file = filepath.Join(filepath.Dir(d.path), target)
				}
				info, err := os.Stat(filepath.Join(repoRoot, file))
				if err != nil {
					broken = append(broken, d.where(l.number)+": "+m[0])
					continue
				}
				if anchor != "" && !info.IsDir() && !hasAnchor(file, anchor) {
					broken = append(broken, d.where(l.number)+": "+m[0]+" (no heading)")
				}
			}
		}
	}
	return broken
}

var (
	heading   = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	htmlID    = regexp.MustCompile(`id="([^"]+)"`)
	slugStrip = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchorOf is GitHub's slug anchor of a heading.
func anchorOf(heading string) string {
	return strings.ReplaceAll(slugStrip.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// hasAnchor tells whether a markdown file has a heading with GitHub's slug anchor (or an HTML id).
func hasAnchor(file, anchor string) bool {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	Expect(err).NotTo(HaveOccurred())
	for _, m := range heading.FindAllStringSubmatch(string(data), -1) {
		if anchorOf(m[1]) == anchor {
			return true
		}
	}
	for _, m := range htmlID.FindAllStringSubmatch(string(data), -1) {
		if m[1] == anchor {
			return true
		}
	}
	return false
}

var _ = Describe("references in the docs", func() {
	var docs []document
	BeforeEach(func() {
		docs = documents()
	})

	It("name only chart values and API fields that exist", func() {
		Expect(unresolvedPaths(docs)).To(BeEmpty())
	})

	It("name only flags the binaries have", func() {
		Expect(unknownFlags(docs)).To(BeEmpty())
	})

	It("name only repository paths that exist", func() {
		Expect(missingPaths(docs)).To(BeEmpty())
	})

	It("link only to files and headings that exist", func() {
		Expect(brokenLinks(docs)).To(BeEmpty())
	})
})

var _ = Describe("the reference checks", func() {
	doc := func(text string) []document {
		return []document{parseDocument("docs/x.md", text)}
	}

	It("find a chart value, an API field, a flag, a path and a link that do not exist", func() {
		docs := doc("Set `image.tga` and `config.sshKey.scop`, `source.urll`, run with `--max-concurent-reconciles`,\n" +
			"see `example/garden-rbca.yaml` and [usage](usage/configuration.md#no-such-heading).\n" +
			"```text\ngardener-extension-shoot-flux-admission [flags]\n  --webhook-config-server-prot   port\n```\n")
		Expect(unresolvedPaths(docs)).To(ConsistOf(
			"docs/x.md:1: `image.tga`", "docs/x.md:1: `config.sshKey.scop`", "docs/x.md:1: `source.urll`"))
		Expect(unknownFlags(docs)).To(ConsistOf(
			"docs/x.md:1: --max-concurent-reconciles",
			"docs/x.md:5: --webhook-config-server-prot of gardener-extension-shoot-flux-admission"))
		Expect(missingPaths(docs)).To(ConsistOf("docs/x.md:2: example/garden-rbca.yaml"))
		Expect(brokenLinks(docs)).To(ConsistOf("docs/x.md:2: ](usage/configuration.md#no-such-heading) (no heading)"))
	})

	It("accept what exists", func() {
		docs := doc("Set `image.tag`, `config.sshKey.scope`, `source.url`, `bootstrap.kluctl.args.shoot`, `config.*`,\n" +
			"`--max-concurrent-reconciles`, see `example/garden-rbac.yaml`, `pkg/manifests/flux/<version>/` and\n" +
			"[usage](usage/configuration.md#precedence).\n")
		Expect(unresolvedPaths(docs)).To(BeEmpty())
		Expect(unknownFlags(docs)).To(BeEmpty())
		Expect(missingPaths(docs)).To(BeEmpty())
		Expect(brokenLinks(docs)).To(BeEmpty())
	})
})

// positional is a reference to something on the same page by where it is: "the limits above",
// "the table below".
var positional = regexp.MustCompile(`(?i)\b(limits?|tables?|examples?|lists?|sections?)\s+(above|below)\b`)

// missingPositional returns the references by position to things the page does not have there:
// limits (a heading or a table row naming a limit), a table, an example (a code block), a list
// or a section (a heading) above or below the line.
func missingPositional(docs []document, limits []string) []string {
	limitRow := regexp.MustCompile("^\\|.*`(?:limits\\.)?(?:" + strings.Join(limits, "|") + ")`")
	isHeading := func(t string) bool { return strings.HasPrefix(t, "#") }
	var missing []string
	for _, d := range docs {
		for _, l := range d.lines {
			for _, m := range positional.FindAllStringSubmatch(l.text, -1) {
				noun, below := strings.TrimSuffix(strings.ToLower(m[1]), "s"), strings.EqualFold(m[2], "below")
				there := func(n int) bool { return n != l.number && (n > l.number) == below }
				found := false
				for _, o := range d.lines {
					if !there(o.number) {
						continue
					}
					t := strings.TrimSpace(o.text)
					switch noun {
					case "limit":
						found = found || (isHeading(t) && strings.Contains(strings.ToLower(t), "limit")) || limitRow.MatchString(t)
					case "table":
						found = found || strings.HasPrefix(t, "|")
					case "list":
						found = found || listItem.MatchString(t)
					case "section":
						found = found || isHeading(t)
					}
				}
				if noun == "example" {
					for _, b := range d.blocks {
						found = found || there(b.startLine)
					}
				}
				if !found {
					missing = append(missing, fmt.Sprintf("%s: %q: the page has none %s", d.where(l.number), m[0], strings.ToLower(m[2])))
				}
			}
		}
	}
	return missing
}

var _ = Describe("references by position in the docs", func() {
	It("point to what the page has there", func() {
		Expect(missingPositional(documents(), limitFields())).To(BeEmpty())
	})

	It("fail on limits, a table or an example that is not where the text says", func() {
		docs := []document{parseDocument("docs/x.md", "Settings, within the limits above.\n\nSee the table below and the example above.\n\n"+
			"| `limits.kluctlArgsMaxBytes` | 16384 |\n\nWithin the limits above, the example below:\n\n```yaml\nx: 1\n```\n")}
		Expect(missingPositional(docs, limitFields())).To(ConsistOf(
			`docs/x.md:1: "limits above": the page has none above`,
			`docs/x.md:3: "example above": the page has none above`,
		))
	})
})
