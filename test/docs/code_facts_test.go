// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	configvalidation "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
)

// ---- Secret names ----

// secretConstants returns the string constants of pkg/constants whose identifier ends in
// SecretName, by value: the Secrets whose names the code owns.
func secretConstants() map[string]string {
	GinkgoHelper()
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "pkg", "constants", "constants.go"), nil, 0)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasSuffix(name.Name, "SecretName") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				Expect(err).NotTo(HaveOccurred())
				out[value] = name.Name
			}
		}
	}
	Expect(out).NotTo(BeEmpty(), "pkg/constants has no *SecretName constants")
	return out
}

var (
	// reservedSentence is where reservedDoc lists the reserved Secret names.
	reservedSentence = regexp.MustCompile(`the Secrets the extension writes itself, (.+?), are reserved`)
	// extensionName is a name the extension gives an object: shoot-flux-<words>.
	extensionName = regexp.MustCompile(`^shoot-flux-[a-z0-9]+(-[a-z0-9]+)*$`)
	// secretContext tells that a code span names a Secret: "Secret `x`", "`Secret x`", "`x` Secret".
	secretContext = regexp.MustCompile(`(?i)secrets? (the |a |its )?$`)
)

// reservedInDocs returns the Secret names the sentence on reserved names lists; nil if it is missing.
func reservedInDocs(d document) []string {
	var text []string
	for _, l := range d.lines {
		text = append(text, l.text)
	}
	m := reservedSentence.FindStringSubmatch(strings.Join(text, " "))
	if m == nil {
		return nil
	}
	var names []string
	for _, c := range inlineCode.FindAllStringSubmatch(m[1], -1) {
		names = append(names, c[1])
	}
	return names
}

// namedSecrets returns the extension's Secret names the docs name, with where: code spans
// `Secret shoot-flux-...` and spans `shoot-flux-...` next to the word Secret.
func namedSecrets(docs []document) map[string][]string {
	named := map[string][]string{}
	for _, d := range docs {
		for _, s := range d.codeSpans() {
			name, isSecret := strings.CutPrefix(s.text, "Secret ")
			if !isSecret {
				before := s.line.text[:s.start]
				after := strings.ToLower(s.line.text[s.end:])
				isSecret = secretContext.MatchString(before) || strings.HasPrefix(after, " secret")
			}
			if isSecret && extensionName.MatchString(name) {
				named[name] = append(named[name], d.where(s.line.number))
			}
		}
	}
	return named
}

// unknownSecrets returns the Secrets the docs name that the code has no constant for.
func unknownSecrets(docs []document, owned map[string]string) []string {
	var unknown []string
	for name, where := range namedSecrets(docs) {
		if _, ok := owned[name]; !ok {
			unknown = append(unknown, where[0]+": Secret "+name)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// reservedDoc is the page that lists the reserved Secret names, at additionalSecretResources.
const reservedDoc = "docs/usage/configuration.md"

var _ = Describe("Secret names in the docs", func() {
	It("list exactly the reserved Secret names of the code", func() {
		usage := documentNamed(documents(), reservedDoc)
		listed := reservedInDocs(usage)
		Expect(listed).NotTo(BeEmpty(), "%s no longer lists the reserved Secret names (%q)", reservedDoc, reservedSentence)
		Expect(listed).To(ConsistOf(constants.ReservedSecretNames))
	})

	It("name only Secrets the code has a constant for, and every such constant", func() {
		docs := documents()
		owned := secretConstants()
		Expect(unknownSecrets(docs, owned)).To(BeEmpty())
		named := namedSecrets(docs)
		for value, constant := range owned {
			Expect(named).To(HaveKey(value), "pkg/constants.%s (%s) is named nowhere in the docs", constant, value)
		}
	})
})

// ---- section references outside the docs ----

var (
	// docRef is a reference to a section of a doc from a comment: docs/usage.md#controllers.
	docRef = regexp.MustCompile(`((?:docs/)?[A-Za-z0-9_./-]+\.md)#([a-z0-9_-]+)`)
	// quotedSection is the other way comments name a section: docs/usage.md, "Controller settings".
	quotedSection = regexp.MustCompile(`(docs/[A-Za-z0-9_./-]+\.md),?\s+(?:#\s*)?(?:section\s+)?"([^"]+)"`)
	// commentLead is what continues a comment on the next line: "# " in YAML and shell, "// " in Go.
	commentLead = regexp.MustCompile(`\n[ \t]*(?:#|//)?[ \t]*`)
)

// sourceFiles returns the text of the files outside docs/ that may point into the docs: charts,
// examples, scripts, code and the Makefile, keyed by their path in the repository. test/docs is
// left out: its specs quote broken references on purpose.
func sourceFiles() map[string]string {
	GinkgoHelper()
	files := map[string]string{}
	for _, dir := range []string{"charts", "example", "hack", "cmd", "pkg", "test", ".ci"} {
		root := filepath.Join(repoRoot, dir)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		Expect(filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, path)
			if e.IsDir() {
				if rel == filepath.Join("test", "docs") || rel == filepath.Join("hack", "tools") || strings.HasPrefix(e.Name(), ".") && rel != ".ci" {
					return filepath.SkipDir
				}
				return nil
			}
			switch filepath.Ext(path) {
			case ".go", ".yaml", ".yml", ".sh", ".tpl", ".txt", "":
			default:
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[rel] = string(data)
			return nil
		})).To(Succeed())
	}
	for _, f := range []string{"Makefile", "Dockerfile", "DEVELOPERS.md"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		Expect(err).NotTo(HaveOccurred())
		files[f] = string(data)
	}
	return files
}

// hasHeading tells whether a markdown file has a heading with exactly this text.
func hasHeading(file, text string) bool {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		return false
	}
	for _, m := range heading.FindAllStringSubmatch(string(data), -1) {
		if strings.TrimSpace(m[1]) == text {
			return true
		}
	}
	return false
}

// brokenSectionRefs returns the references to doc sections in the given files whose file or
// section does not exist. A reference without "docs/" is relative to the file's directory.
func brokenSectionRefs(files map[string]string) []string {
	GinkgoHelper()
	var broken []string
	resolve := func(from, target string) string {
		if strings.HasPrefix(target, "docs/") {
			return target
		}
		return filepath.Join(filepath.Dir(from), target)
	}
	for path, text := range files {
		joined := commentLead.ReplaceAllString(text, " ")
		for _, m := range docRef.FindAllStringSubmatch(joined, -1) {
			if strings.Contains(m[1], "://") {
				continue
			}
			file := resolve(path, m[1])
			if _, err := os.Stat(filepath.Join(repoRoot, file)); err != nil {
				// A name like flux.md in a path of another site is not ours to check.
				if strings.HasPrefix(m[1], "docs/") {
					broken = append(broken, path+": "+m[0]+" (no such file)")
				}
				continue
			}
			if !hasAnchor(file, m[2]) {
				broken = append(broken, path+": "+m[0]+" (no heading)")
			}
		}
		for _, m := range quotedSection.FindAllStringSubmatch(joined, -1) {
			if !hasHeading(m[1], m[2]) {
				broken = append(broken, path+": "+m[1]+` "`+m[2]+`" (no heading)`)
			}
		}
	}
	slices.Sort(broken)
	return broken
}

var _ = Describe("section references outside the docs", func() {
	It("point to headings that exist, from charts, examples, scripts and code", func() {
		Expect(brokenSectionRefs(sourceFiles())).To(BeEmpty())
	})
})

// ---- defaults quoted in the docs ----

// quotedDefault is a place where the docs quote a default or limit of the code: in file, every
// match of pattern has one submatch per value, each a duration as the docs write it.
type quotedDefault struct {
	file    string
	pattern string
	values  []time.Duration
}

// quotedDefaults are the defaults and limits the docs quote. An entry whose pattern no longer
// matches fails, so rewording a sentence means updating its entry here.
func quotedDefaults() []quotedDefault {
	GinkgoHelper()
	cfg, err := loader.Defaults()
	Expect(err).NotTo(HaveOccurred())
	t := cfg.Timeouts
	kluctlInterval, fluxInterval := bootstrapIntervals()
	resync := extension.DefaultAddOptions.Resync
	syncPeriod := healthcheck.DefaultAddOptions.HealthCheckConfig.SyncPeriod.Duration
	progressing := healthcheck.BootstrapProgressingThreshold

	return []quotedDefault{
		// The operator's configuration: docs/operations/configuration.md's table, the chart's values, and prose.
		{"docs/operations/configuration.md", "`timeouts.managedResourceApplied` \\| duration \\| `(\\w+)` \\|[^|]*at most `(\\w+)`", []time.Duration{t.ManagedResourceApplied.Duration, configvalidation.MaxManagedResourceAppliedTimeout}},
		{"docs/operations/configuration.md", "`timeouts.deletion` \\| duration \\| `(\\w+)` \\|[^|]*at most `(\\w+)`", []time.Duration{t.Deletion.Duration, configvalidation.MaxDeletionTimeout}},
		{"docs/operations/configuration.md", "`timeouts.hostKeyScan` \\| duration \\| `(\\w+)` \\|[^|]*at most `(\\w+)`", []time.Duration{t.HostKeyScan.Duration, configvalidation.MaxHostKeyScanTimeout}},
		{"docs/operations/configuration.md", "`timeouts.bootstrapFinalizers` \\| duration \\| `(\\w+)` \\|[^|]*at most `(\\w+)`", []time.Duration{t.BootstrapFinalizers.Duration, configvalidation.MaxBootstrapFinalizersTimeout}},
		{"charts/gardener-extension-shoot-flux/values.yaml", `managedResourceApplied bounds [^(]*\(default (\w+), at most (\w+)\)`, []time.Duration{t.ManagedResourceApplied.Duration, configvalidation.MaxManagedResourceAppliedTimeout}},
		{"charts/gardener-extension-shoot-flux/values.yaml", `deletion bounds [^(]*\(default (\w+), at most (\w+)\)`, []time.Duration{t.Deletion.Duration, configvalidation.MaxDeletionTimeout}},
		{"charts/gardener-extension-shoot-flux/values.yaml", `hostKeyScan bounds [^(]*\(default (\w+), at most (\w+)\)`, []time.Duration{t.HostKeyScan.Duration, configvalidation.MaxHostKeyScanTimeout}},
		{"charts/gardener-extension-shoot-flux/values.yaml", `bootstrapFinalizers is how long [^(]*\(default (\w+), at most (\w+)\)`, []time.Duration{t.BootstrapFinalizers.Duration, configvalidation.MaxBootstrapFinalizersTimeout}},
		{"docs/usage/status.md", `within the operator's timeout \((\d+ \w+) by default\)`, []time.Duration{t.ManagedResourceApplied.Duration}},
		{"docs/usage/deletion.md", "\\(up to (\\d+ \\w+), the operator's `timeouts.bootstrapFinalizers`\\)", []time.Duration{t.BootstrapFinalizers.Duration}},
		{"docs/usage/credentials.md", "`timeouts.hostKeyScan` \\((\\w+) by default\\)", []time.Duration{t.HostKeyScan.Duration}},
		{"docs/development/architecture.md", "`timeouts.deletion` \\((\\w+)\\)", []time.Duration{t.Deletion.Duration}},
		// The periodic resync of every Extension.
		{"docs/usage/project-configmap.md", `periodic resync \(every (\d+ \w+)\)`, []time.Duration{resync}},
		{"docs/usage/versions.md", `the periodic resync \((\d+ \w+) by default\)`, []time.Duration{resync}},
		{"docs/development/architecture.md", `and every (\d+ \w+) after the last`, []time.Duration{resync}},
		{"docs/operations/upgrades.md", `at least every (\d+ \w+) \(the resync\)`, []time.Duration{resync}},
		{"docs/usage/deploy-keys.md", `periodic resync, every (\d+ \w+)\)`, []time.Duration{resync}},
		// The BootstrapReady health check.
		{"docs/usage/status.md", `every (minute) unless the operator changed the period`, []time.Duration{syncPeriod}},
		{"docs/development/architecture.md", `It runs every (minute) by default`, []time.Duration{syncPeriod}},
		{"docs/usage/status.md", "turns `False` after (\\d+ \\w+)", []time.Duration{progressing}},
		{"docs/development/architecture.md", "`Progressing` for up to (\\d+ \\w+), then `False`", []time.Duration{progressing}},
		// The periods of gardener-resource-manager's controllers in the sandbox.
		{"docs/development/sandbox.md", "`sandbox.ResourceManagerSyncPeriod` \\((\\w+);", []time.Duration{sandbox.ResourceManagerSyncPeriod}},
		{"docs/development/sandbox.md", "`sandbox.SharedResourceManagerSyncPeriod`, (\\w+)\\)", []time.Duration{sandbox.SharedResourceManagerSyncPeriod}},
		{"docs/development/sandbox.md", "`sandbox.ResourceManagerHealthSyncPeriod` \\((\\w+),", []time.Duration{sandbox.ResourceManagerHealthSyncPeriod}},
		{"docs/development/sandbox.md", "`sandbox.SharedResourceManagerHealthSyncPeriod`, (\\w+)\\)", []time.Duration{sandbox.SharedResourceManagerHealthSyncPeriod}},
		{"docs/development/sandbox.md", "`sandbox.ResourceManagerGarbageCollectionPeriod` \\((\\w+);", []time.Duration{sandbox.ResourceManagerGarbageCollectionPeriod}},
		{"docs/development/sandbox.md", "`sandbox.ResourceManagerGarbageCollectionMinimumAge` \\((\\w+);", []time.Duration{sandbox.ResourceManagerGarbageCollectionMinimumAge}},
		// The intervals of the bootstrap objects.
		{"docs/usage/configuration.md", "\\| `interval` \\| duration \\| `(\\w+)` \\| Reconciliation interval\\.", []time.Duration{kluctlInterval}},
		{"docs/usage/configuration.md", "\\| `interval` \\| duration \\| `(\\w+)` \\| Interval of the `GitRepository`", []time.Duration{fluxInterval}},
		{"docs/usage/quick-start.md", "fetches and applies every `(\\w+)` \\(`bootstrap.flux.interval`\\)", []time.Duration{fluxInterval}},
		{"docs/usage/deploy-keys.md", "mode `kluctl`: `(\\w+)` by default, mode\\s+`flux`: `(\\w+)`", []time.Duration{kluctlInterval, fluxInterval}},
		{"docs/development/architecture.md", "\\| default interval \\| `(\\w+)` \\(`bootstrap.kluctl.interval`\\) \\| `(\\w+)` \\(`bootstrap.flux.interval`", []time.Duration{kluctlInterval, fluxInterval}},
	}
}

// bootstrapIntervals returns the default intervals of the KluctlDeployment and the Kustomization.
func bootstrapIntervals() (kluctl, flux time.Duration) {
	GinkgoHelper()
	defaults := fluxconfig.Defaults{FluxVersion: manifests.FluxVersions()[0], KluctlVersion: manifests.KluctlVersions()[0]}
	for _, mode := range []string{"kluctl", "flux"} {
		raw := fmt.Sprintf(`{"flux":{"components":["source-controller","kustomize-controller"]},"source":{"url":"https://github.com/example/fleet"},"bootstrap":{"mode":%q}}`, mode)
		cfg, err := fluxconfig.Resolve(defaults, manifests.SupportedVersions(), sshkey.DefaultKnownHostsLimits(), nil, &runtime.RawExtension{Raw: []byte(raw)})
		Expect(err).NotTo(HaveOccurred())
		if mode == "kluctl" {
			kluctl = cfg.Bootstrap.Kluctl.Interval.Duration
		} else {
			flux = cfg.Bootstrap.Flux.Interval.Duration
		}
	}
	return kluctl, flux
}

var spelledNumbers = map[string]string{"a": "1", "one": "1", "two": "2", "five": "5", "ten": "10"}

// parseQuoted reads a duration as the docs write it: `5m`, `10s`, `30 s`, "2 minutes", "minute".
func parseQuoted(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(strings.ReplaceAll(s, " ", "")); err == nil {
		return d, nil
	}
	n, unit, found := strings.Cut(s, " ")
	if !found {
		n, unit = "1", s
	}
	if spelled, ok := spelledNumbers[n]; ok {
		n = spelled
	}
	count, err := strconv.Atoi(n)
	if err != nil {
		return 0, fmt.Errorf("%q is no duration", s)
	}
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"second", time.Second}, {"minute", time.Minute}, {"hour", time.Hour}} {
		if unit == u.name || unit == u.name+"s" {
			return time.Duration(count) * u.d, nil
		}
	}
	return 0, fmt.Errorf("%q is no duration", s)
}

// wrongDefaults returns the quoted defaults that differ from the code, and the entries whose
// pattern no longer matches their file's text.
func wrongDefaults(texts map[string]string, quoted []quotedDefault) []string {
	var wrong []string
	for _, q := range quoted {
		re := regexp.MustCompile(q.pattern)
		matches := re.FindAllStringSubmatch(commentLead.ReplaceAllString(texts[q.file], " "), -1)
		if len(matches) == 0 {
			wrong = append(wrong, fmt.Sprintf("%s no longer says %q: update the entry in test/docs", q.file, q.pattern))
			continue
		}
		for _, m := range matches {
			for i, want := range q.values {
				got, err := parseQuoted(m[i+1])
				switch {
				case err != nil:
					wrong = append(wrong, fmt.Sprintf("%s: %q: %v", q.file, m[0], err))
				case got != want:
					wrong = append(wrong, fmt.Sprintf("%s: %q says %s, the code %s", q.file, m[0], got, want))
				}
			}
		}
	}
	return wrong
}

// quotedFiles reads the files the quoted defaults are in.
func quotedFiles(quoted []quotedDefault) map[string]string {
	GinkgoHelper()
	texts := map[string]string{}
	for _, q := range quoted {
		data, err := os.ReadFile(filepath.Join(repoRoot, q.file))
		Expect(err).NotTo(HaveOccurred())
		texts[q.file] = string(data)
	}
	return texts
}

var _ = Describe("defaults quoted in the docs", func() {
	It("are the code's defaults and limits", func() {
		quoted := quotedDefaults()
		Expect(wrongDefaults(quotedFiles(quoted), quoted)).To(BeEmpty())
	})
})

var _ = Describe("the checks against the code", func() {
	It("find a reserved Secret name missing from the list, a Secret without constant, a broken section reference and a wrong default", func() {
		usage := parseDocument("docs/usage.md", "The names of\nthe Secrets the extension writes itself, `shoot-flux-git-credentials` and\n`shoot-flux-sops`, are reserved.\n"+
			"The shoot gets the Secret `shoot-flux-oci-credential` and a `Secret shoot-flux-sops`.\n")
		Expect(reservedInDocs(usage)).To(Equal([]string{"shoot-flux-git-credentials", "shoot-flux-sops"}))
		Expect(reservedInDocs(usage)).NotTo(ConsistOf(constants.ReservedSecretNames))
		Expect(unknownSecrets([]document{usage}, secretConstants())).To(ConsistOf("docs/usage.md:4: Secret shoot-flux-oci-credential"))

		Expect(brokenSectionRefs(map[string]string{
			"charts/x/values.yaml": "# see docs/usage/configuration.md#controller-settings and docs/usage/configuration.md,\n  # \"Controller settings\", docs/usage/configuration.md#controllers",
		})).To(ConsistOf(
			"charts/x/values.yaml: docs/usage/configuration.md#controller-settings (no heading)",
			`charts/x/values.yaml: docs/usage/configuration.md "Controller settings" (no heading)`,
		))

		quoted := []quotedDefault{
			{"docs/x.md", `timeout \((\d+ \w+) by default\)`, []time.Duration{2 * time.Minute}},
			{"docs/y.md", `every (\w+) after`, []time.Duration{time.Minute}},
		}
		Expect(wrongDefaults(map[string]string{"docs/x.md": "the timeout (3 minutes by default)", "docs/y.md": "every minute"}, quoted)).To(ConsistOf(
			`docs/x.md: "timeout (3 minutes by default)" says 3m0s, the code 2m0s`,
			`docs/y.md no longer says "every (\\w+) after": update the entry in test/docs`,
		))
	})

	It("accept what matches the code", func() {
		usage := parseDocument("docs/usage.md", "the Secrets the extension writes itself, `shoot-flux-git-credentials`, `shoot-flux-oci-credentials`,\n"+
			"`shoot-flux-sops` and `shoot-flux-image-pull`, are reserved. The Secret `shoot-flux-deploy-keys`.\n")
		Expect(reservedInDocs(usage)).To(ConsistOf(constants.ReservedSecretNames))
		Expect(unknownSecrets([]document{usage}, secretConstants())).To(BeEmpty())
		Expect(brokenSectionRefs(map[string]string{"example/x.yaml": "# see docs/usage/configuration.md#controllers and\n# docs/usage/configuration.md, \"Precedence\""})).To(BeEmpty())
		Expect(wrongDefaults(map[string]string{"docs/x.md": "the timeout (2 minutes by default), every 10s, `5m`"}, []quotedDefault{
			{"docs/x.md", `timeout \((\d+ \w+) by default\), every (\w+), ` + "`(\\w+)`", []time.Duration{2 * time.Minute, 10 * time.Second, 5 * time.Minute}},
		})).To(BeEmpty())
	})
})

var _ = Describe("memory figures in the docs", func() {
	It("give the bench's 500-shoot RSS that the hostile-tenant specs compare against", func() {
		data, err := os.ReadFile(filepath.Join(repoRoot, figuresDoc))
		Expect(err).NotTo(HaveOccurred())
		m := regexp.MustCompile("\\| extension RSS at 500 shoots, `-mark-applied` \\| (\\d+)–(\\d+) MiB \\|").FindStringSubmatch(string(data))
		Expect(m).NotTo(BeNil(), "%s no longer gives the RSS with 500 shoots: update test/docs", figuresDoc)
		Expect(m[2]).To(Equal(strconv.Itoa(sandbox.BenchRSS500Shoots>>20)), "%s and sandbox.BenchRSS500Shoots differ", figuresDoc)
	})
})

// ---- gardener-apiserver's disabled admission plugins ----

// disabledPluginsDoc is the page whose section disabledPluginsSection has a table of the admission
// plugins of gardener-apiserver that the sandbox's garden disables.
const (
	disabledPluginsDoc     = "docs/development/sandbox.md"
	disabledPluginsSection = "gardener-apiserver in the garden"
)

// disabledPluginRow is a row of that table: the plugin as code, and the reason.
var disabledPluginRow = regexp.MustCompile("^\\| `([A-Za-z]+)` \\| (.*) \\|$")

// disabledPluginsInDocs returns the plugins the table lists, with their reasons.
func disabledPluginsInDocs(d document) map[string]string {
	GinkgoHelper()
	listed := map[string]string{}
	for _, l := range d.section(disabledPluginsSection) {
		if m := disabledPluginRow.FindStringSubmatch(l.text); m != nil {
			listed[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return listed
}

// disabledPluginsMismatch returns how the listed plugins differ from the disabled ones: a plugin
// disabled but not listed, listed but not disabled, or listed without a reason.
func disabledPluginsMismatch(listed, disabled map[string]string) []string {
	var out []string
	for _, plugin := range slices.Sorted(maps.Keys(disabled)) {
		if _, ok := listed[plugin]; !ok {
			out = append(out, plugin+" is disabled but not listed")
		}
	}
	for _, plugin := range slices.Sorted(maps.Keys(listed)) {
		if _, ok := disabled[plugin]; !ok {
			out = append(out, plugin+" is listed but not disabled")
		}
		if listed[plugin] == "" {
			out = append(out, plugin+" is listed without a reason")
		}
	}
	return out
}

var _ = Describe("gardener-apiserver's disabled admission plugins in the docs", func() {
	It("are exactly gardener.DisabledAdmissionPlugins, each with its reason", func() {
		listed := disabledPluginsInDocs(documentNamed(documents(), disabledPluginsDoc))
		Expect(disabledPluginsMismatch(listed, gardener.DisabledAdmissionPlugins)).To(BeEmpty(),
			"the table of %s, %q, and gardener.DisabledAdmissionPlugins (test/sandbox/gardener/apiserver.go) differ", disabledPluginsDoc, disabledPluginsSection)
	})

	It("find a plugin missing from the table, one too many and one without a reason", func() {
		d := parseDocument("docs/development.md", "## "+disabledPluginsSection+"\n\n| Disabled plugin | Why |\n|---|---|\n"+
			"| `ShootDNS` | no default domain |\n| `ShootQuotaValidator` |  |\n| `Bastion` | no bastions |\n\n## Next\n\n| `ShootMutator` | elsewhere |\n")
		listed := disabledPluginsInDocs(d)
		Expect(listed).To(Equal(map[string]string{"ShootDNS": "no default domain", "ShootQuotaValidator": "", "Bastion": "no bastions"}))
		Expect(disabledPluginsMismatch(listed, map[string]string{"ShootDNS": "x", "ShootQuotaValidator": "y", "ShootMutator": "z"})).To(ConsistOf(
			"ShootMutator is disabled but not listed",
			"Bastion is listed but not disabled",
			"ShootQuotaValidator is listed without a reason",
		))
		Expect(disabledPluginsMismatch(map[string]string{"ShootDNS": "no default domain"}, map[string]string{"ShootDNS": "x"})).To(BeEmpty())
	})
})
