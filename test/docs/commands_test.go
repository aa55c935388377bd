// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// command is a command a page gives: a code span, or a line of a code block with the lines it
// continues on (a trailing backslash).
type command struct {
	where string
	text  string
	// context is what the page says around it: the paragraph of a code span; for a block, the
	// paragraph before the block and the block's exports before the command.
	context string
}

// commands returns the commands of a document.
func commands(d document) []command {
	var out []command
	byNumber := map[int]string{}
	for _, l := range d.lines {
		byNumber[l.number] = l.text
	}
	// paragraphAround returns the non-empty prose lines around line n, n included.
	paragraphAround := func(n int) string {
		var parts []string
		for i := n; byNumber[i] != "" && !strings.HasPrefix(byNumber[i], "#"); i-- {
			parts = append([]string{byNumber[i]}, parts...)
		}
		for i := n + 1; byNumber[i] != "" && !strings.HasPrefix(byNumber[i], "#"); i++ {
			parts = append(parts, byNumber[i])
		}
		return strings.Join(parts, " ")
	}
	for _, s := range d.codeSpans() {
		out = append(out, command{where: d.where(s.line.number), text: s.text, context: paragraphAround(s.line.number)})
	}
	for _, b := range d.blocks {
		context := paragraphAround(b.startLine - 1)
		if context == "" {
			context = paragraphAround(b.startLine - 2)
		}
		for i := 0; i < len(b.lines); i++ {
			start, text := i, strings.TrimSpace(b.lines[i])
			for strings.HasSuffix(text, `\`) && i+1 < len(b.lines) {
				i++
				text = strings.TrimSpace(strings.TrimSuffix(text, `\`)) + " " + strings.TrimSpace(b.lines[i])
			}
			out = append(out, command{where: d.where(b.startLine + 1 + start), text: text, context: context})
			// What a line exports holds for the lines after it.
			if strings.HasPrefix(text, "export ") {
				context += "\n" + text
			}
		}
	}
	return out
}

// ---- kubectl auth can-i against the garden RBAC ----

// gardenRBAC is the extension's ClusterRole in the garden.
const gardenRBAC = "example/garden-rbac.yaml"

var (
	// canI is `kubectl ... auth can-i <verb> <resource>`.
	canI = regexp.MustCompile(`\bkubectl\b.*?\bauth can-i (\S+) (\S+)`)
	// gardenIdentity tells a can-i that asks about the garden: a project namespace, or an identity
	// in a seed's namespace of the garden.
	gardenIdentity = regexp.MustCompile(`-n garden-|--namespace[= ]garden-|system:serviceaccount:seed-`)
)

// grantedByNameOnly returns the "verb resource" pairs the garden ClusterRole grants only for
// named objects (resourceNames), for which `can-i <verb> <resource>` says no.
func grantedByNameOnly() map[string]bool {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, gardenRBAC))
	Expect(err).NotTo(HaveOccurred())
	named, unnamed := map[string]bool{}, map[string]bool{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); errors.Is(err, io.EOF) {
			break
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					if len(r.ResourceNames) > 0 {
						named[verb+" "+res] = true
					} else {
						unnamed[verb+" "+res] = true
					}
				}
			}
		}
	}
	for k := range unnamed {
		delete(named, k)
	}
	Expect(named).NotTo(BeEmpty(), "%s grants nothing by name", gardenRBAC)
	return named
}

// plural is the resource of a kubectl argument: kubectl takes secret and secrets alike.
func plural(resource string) string {
	if strings.HasSuffix(resource, "s") {
		return resource
	}
	return resource + "s"
}

// canIByName returns the `kubectl auth can-i` of the docs that ask the garden about a resource the
// garden RBAC grants only by name: RBAC answers no, so the command must name the object
// (<resource>/<name>).
func canIByName(docs []document, byName map[string]bool) []string {
	var wrong []string
	for _, d := range docs {
		for _, c := range commands(d) {
			m := canI.FindStringSubmatch(c.text)
			if m == nil || strings.Contains(m[2], "/") || !gardenIdentity.MatchString(c.text) {
				continue
			}
			if byName[m[1]+" "+plural(m[2])] {
				wrong = append(wrong, fmt.Sprintf("%s: can-i %s %s: %s grants it only by name, ask for %s/<name>", c.where, m[1], m[2], gardenRBAC, m[2]))
			}
		}
	}
	return wrong
}

var _ = Describe("kubectl auth can-i in the docs", func() {
	It("asks for the object by name where the garden RBAC grants only named objects", func() {
		Expect(canIByName(documents(), grantedByNameOnly())).To(BeEmpty())
	})

	It("fails on a can-i of a resource granted by name only, and accepts the named object and other grants", func() {
		byName := grantedByNameOnly()
		Expect(byName).To(HaveKey("get configmaps"))
		Expect(byName).NotTo(HaveKey("create secrets"))
		docs := []document{parseDocument("docs/x.md", "```sh\n"+
			"kubectl auth can-i get configmaps -n garden-<project> --as system:serviceaccount:seed-<seed>:shoot-flux   # garden\n"+
			"kubectl auth can-i get configmaps/flux-config -n garden-<project> --as system:serviceaccount:seed-<seed>:shoot-flux\n"+
			"kubectl --kubeconfig $OUT auth can-i create secrets -n garden-myproject\n"+
			"kubectl auth can-i get configmaps -n shoot--p--s\n```\n"+
			"Then `kubectl --kubeconfig $OUT auth can-i update secret -n garden-myproject` says no.\n")}
		Expect(canIByName(docs, byName)).To(ConsistOf(
			"docs/x.md:2: can-i get configmaps: "+gardenRBAC+" grants it only by name, ask for configmaps/<name>",
			"docs/x.md:7: can-i update secret: "+gardenRBAC+" grants it only by name, ask for secret/<name>",
		))
	})
})

// ---- environment variables a command needs ----

// envNeed is an environment variable a command needs.
type envNeed struct {
	// command matches the commands that need it.
	command *regexp.Regexp
	env     string
	// why names the code that needs it.
	why string
}

var (
	// requiredEnv is how a test suite stops without an environment variable.
	requiredEnv = regexp.MustCompile(`Expect\(os\.Getenv\("([A-Z_]+)"\)\)\.NotTo\(BeEmpty\(\)`)
	// envAssignment reads an environment variable into a variable, which the suite may require.
	envAssignment = regexp.MustCompile(`(\w+) = os\.Getenv\("([A-Z_]+)"\)`)
	// startsAPIServer starts an envtest API server, which requires cluster.AssetsEnv
	// (cluster.RequireAssets): cluster.Start and cluster.StartSeedAndShoot, and gardener.StartGarden
	// and sandbox.Start on them.
	startsAPIServer = regexp.MustCompile(`\b(?:cluster\.Start(?:SeedAndShoot)?|gardener\.StartGarden|sandbox\.Start)\(`)
	// exportedEnv is a variable a script exports.
	exportedEnv = regexp.MustCompile(`(?m)^\s*export ([A-Z_]+)=`)
)

// suiteEnvNeeds returns the environment variables each test package under test/ requires (its
// specs stop with an Expect that the variable is not empty, or start an API server), as needs of
// `go test ./test/<pkg>`.
func suiteEnvNeeds() []envNeed {
	GinkgoHelper()
	var needs []envNeed
	files, err := filepath.Glob(filepath.Join(repoRoot, "test", "*", "*_test.go"))
	Expect(err).NotTo(HaveOccurred())
	// The suites one level down (test/envtest/<controller>).
	nested, err := filepath.Glob(filepath.Join(repoRoot, "test", "*", "*", "*_test.go"))
	Expect(err).NotTo(HaveOccurred())
	files = append(files, nested...)
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		text := string(data)
		var envs []string
		for _, m := range requiredEnv.FindAllStringSubmatch(text, -1) {
			envs = append(envs, m[1])
		}
		for _, m := range envAssignment.FindAllStringSubmatch(text, -1) {
			if strings.Contains(text, "Expect("+m[1]+").NotTo(BeEmpty()") {
				envs = append(envs, m[2])
			}
		}
		if startsAPIServer.MatchString(text) {
			envs = append(envs, cluster.AssetsEnv)
		}
		pkg, err := filepath.Rel(filepath.Join(repoRoot, "test"), filepath.Dir(f))
		Expect(err).NotTo(HaveOccurred())
		pkg = filepath.ToSlash(pkg)
		// A nested suite is also run by the pattern of its parent (./test/envtest/...).
		pattern := regexp.QuoteMeta(pkg) + `/?`
		if parent := path.Dir(pkg); parent != "." {
			pattern = "(?:" + pattern + "|" + regexp.QuoteMeta(parent) + `/\.\.\.)`
		}
		for _, env := range envs {
			if seen[pkg+" "+env] {
				continue
			}
			seen[pkg+" "+env] = true
			rel, _ := filepath.Rel(repoRoot, f)
			needs = append(needs, envNeed{
				command: regexp.MustCompile(`\bgo test\b.*\s\./test/` + pattern + `(?:\s|$)`),
				env:     env,
				why:     rel,
			})
		}
	}
	return needs
}

// startScript runs the extension locally; what it sets for a real seed, a command that runs the
// extension against one needs too.
const startScript = "hack/start.sh"

// realSeedEnvNeeds returns the environment variables hack/start.sh exports in its branch for a real
// seed, as needs of a command that runs the extension with that branch's flag (reconciling only
// annotated Extensions, which a real seed needs).
func realSeedEnvNeeds() []envNeed {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, startScript))
	Expect(err).NotTo(HaveOccurred())
	const realSeedFlag = "--ignore-operation-annotation=false"
	text := string(data)
	start := strings.Index(text, "args=("+realSeedFlag)
	Expect(start).To(BeNumerically(">=", 0), "%s has no branch for a real seed with %s", startScript, realSeedFlag)
	branch := text[start:]
	branch = branch[:strings.Index(branch, "\nfi")]
	var needs []envNeed
	for _, m := range exportedEnv.FindAllStringSubmatch(branch, -1) {
		needs = append(needs, envNeed{
			command: regexp.MustCompile(`(?:dlv debug|go run|bin/gardener-extension-shoot-flux)\b.*\s\./cmd/gardener-extension-shoot-flux\s.*` + regexp.QuoteMeta(realSeedFlag) + `|bin/gardener-extension-shoot-flux\s.*` + regexp.QuoteMeta(realSeedFlag)),
			env:     m[1],
			why:     startScript + " for a real seed",
		})
	}
	Expect(needs).NotTo(BeEmpty(), "%s exports nothing for a real seed", startScript)
	return needs
}

// setsEnv tells whether a command or what the page says before it sets or names the variable.
func setsEnv(c command, env string) bool {
	named := regexp.MustCompile(`\b` + env + `\b`)
	return named.MatchString(c.text) || named.MatchString(c.context)
}

// unsetEnv returns the commands of the docs that need an environment variable neither they nor
// the page around them set.
func unsetEnv(docs []document, needs []envNeed) []string {
	var unset []string
	for _, d := range docs {
		for _, c := range commands(d) {
			for _, n := range needs {
				if n.command.MatchString(c.text) && !setsEnv(c, n.env) {
					unset = append(unset, fmt.Sprintf("%s: %q needs %s (%s)", c.where, c.text, n.env, n.why))
				}
			}
		}
	}
	slices.Sort(unset)
	return slices.Compact(unset)
}

var _ = Describe("commands in the docs", func() {
	It("set the environment variables the code needs: the test suites' and a real seed's", func() {
		needs := append(suiteEnvNeeds(), realSeedEnvNeeds()...)
		var envs []string
		for _, n := range needs {
			envs = append(envs, n.env)
		}
		Expect(envs).To(ContainElements("PROMTOOL", "KUBEBUILDER_ASSETS", "GARDENER_SHOOT_CLIENT"))
		Expect(unsetEnv(documents(), needs)).To(BeEmpty())
	})

	It("fail on go test of a nested suite or its parent's pattern without its variables", func() {
		docs := []document{parseDocument("docs/x.md", "```sh\n"+
			"go test ./test/envtest/projectconfig\n"+
			"go test ./test/envtest/...\n"+
			"KUBEBUILDER_ASSETS=$(hack/build-envtest.sh) go test ./test/envtest/extension\n```\n")}
		Expect(unsetEnv(docs, suiteEnvNeeds())).To(ConsistOf(
			`docs/x.md:2: "go test ./test/envtest/projectconfig" needs KUBEBUILDER_ASSETS (test/envtest/projectconfig/projectconfig_suite_test.go)`,
			`docs/x.md:3: "go test ./test/envtest/..." needs KUBEBUILDER_ASSETS (test/envtest/extension/extension_suite_test.go)`,
			`docs/x.md:3: "go test ./test/envtest/..." needs KUBEBUILDER_ASSETS (test/envtest/healthcheck/healthcheck_suite_test.go)`,
			`docs/x.md:3: "go test ./test/envtest/..." needs KUBEBUILDER_ASSETS (test/envtest/projectconfig/projectconfig_suite_test.go)`,
		))
	})

	It("fail on go test of a suite that starts an API server without KUBEBUILDER_ASSETS", func() {
		docs := []document{parseDocument("docs/x.md", "```sh\n"+
			"go test ./test/storedversions ./test/manifests ./test/charts\n"+
			"go test ./test/admission ./test/gitserver\n```\n")}
		Expect(unsetEnv(docs, suiteEnvNeeds())).To(ConsistOf(
			`docs/x.md:2: "go test ./test/storedversions ./test/manifests ./test/charts" needs KUBEBUILDER_ASSETS (test/charts/charts_suite_test.go)`,
			`docs/x.md:2: "go test ./test/storedversions ./test/manifests ./test/charts" needs KUBEBUILDER_ASSETS (test/manifests/manifests_suite_test.go)`,
			`docs/x.md:2: "go test ./test/storedversions ./test/manifests ./test/charts" needs KUBEBUILDER_ASSETS (test/storedversions/storedversions_suite_test.go)`,
			`docs/x.md:3: "go test ./test/admission ./test/gitserver" needs KUBEBUILDER_ASSETS (test/admission/admission_suite_test.go)`,
			`docs/x.md:3: "go test ./test/admission ./test/gitserver" needs KUBEBUILDER_ASSETS (test/gitserver/sourcecontroller_test.go)`,
		))
	})

	It("fail on go test of ./test/promrules without PROMTOOL and dlv against a real seed without GARDENER_SHOOT_CLIENT", func() {
		needs := append(suiteEnvNeeds(), realSeedEnvNeeds()...)
		docs := []document{parseDocument("docs/x.md", "```sh\n"+
			"go test ./test/promrules -run TestPromRules -v -ginkgo.focus=bounds\n"+
			"PROMTOOL=$(hack/build-promtool.sh) go test ./test/promrules -run TestPromRules\n"+
			"dlv debug ./cmd/gardener-extension-shoot-flux -- \\\n  --kubeconfig=$HOME/seed.kubeconfig \\\n  --ignore-operation-annotation=false\n"+
			"GARDENER_SHOOT_CLIENT=external dlv debug ./cmd/gardener-extension-shoot-flux -- --ignore-operation-annotation=false\n"+
			"dlv debug ./cmd/gardener-extension-shoot-flux -- --kubeconfig=dev/kubeconfig.yaml --ignore-operation-annotation=true\n```\n\n"+
			"With `PROMTOOL` set to the output of `hack/build-promtool.sh`, `go test ./test/promrules` runs the rules.\n")}
		Expect(unsetEnv(docs, needs)).To(ConsistOf(
			`docs/x.md:2: "go test ./test/promrules -run TestPromRules -v -ginkgo.focus=bounds" needs PROMTOOL (test/promrules/promrules_suite_test.go)`,
			`docs/x.md:4: "dlv debug ./cmd/gardener-extension-shoot-flux -- --kubeconfig=$HOME/seed.kubeconfig --ignore-operation-annotation=false" needs GARDENER_SHOOT_CLIENT (hack/start.sh for a real seed)`,
		))
	})
})
