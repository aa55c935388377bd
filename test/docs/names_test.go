// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// The names the docs take from the code: metrics, the extension's annotations and labels, and make
// targets. A name the code does not have is a doc that tells the reader to look for nothing.

var (
	// metricName is a metric of the extension, in prose, in a table or in a query.
	metricName = regexp.MustCompile(`\b` + metrics.Namespace + `_[a-z0-9_]*[a-z0-9]\b`)
	// ownKey is an annotation or label key of the extension's own domain; the API group's version
	// (shoot-flux.extensions.gardener.cloud/v1alpha1) is no key.
	ownKey = regexp.MustCompile(`\bshoot-flux\.extensions\.gardener\.cloud/([a-z0-9][a-z0-9.-]*[a-z0-9])`)
	// apiVersion is the part after the domain that names an API version.
	apiVersion = regexp.MustCompile(`^v\d+(?:(?:alpha|beta)\d+)?$`)
	// makeCall is a command that runs make: a code span or a line of a code block, after any
	// VAR=value of the environment, with the target after any flags and VAR=value arguments.
	makeCall = regexp.MustCompile(`^\s*(?:[A-Z_]+=\S*\s+)*make((?:\s+(?:-\S+|[A-Z_]+=\S*))*)\s+([a-z][a-z0-9-]*)\b`)
	// makeTarget is a rule of the Makefile.
	makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*(?:\s+[a-z][a-z0-9-]*)*)\s*:(?:[^=]|$)`)
)

// ownKeysOfCode returns the annotation and label keys of the extension's domain that the code,
// the charts and the examples write or read.
func ownKeysOfCode() map[string]bool {
	GinkgoHelper()
	keys := map[string]bool{}
	for _, dir := range []string{"pkg", "cmd", "charts", "example"} {
		Expect(filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range ownKey.FindAllStringSubmatch(string(data), -1) {
				keys[m[1]] = true
			}
			return nil
		})).To(Succeed())
	}
	return keys
}

// makeTargets returns the targets of the Makefile.
func makeTargets() map[string]bool {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	Expect(err).NotTo(HaveOccurred())
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(string(data), -1) {
		for _, t := range strings.Fields(m[1]) {
			targets[t] = true
		}
	}
	Expect(targets).To(HaveKey("test"))
	return targets
}

// eachText calls fn with every prose line and every code block line of the docs, with where it is.
func eachText(docs []document, fn func(where, text string)) {
	for _, d := range docs {
		for _, l := range d.lines {
			fn(d.where(l.number), l.text)
		}
		for _, b := range d.blocks {
			for i, l := range b.lines {
				fn(d.where(b.startLine+1+i), l)
			}
		}
	}
}

// eachCommand calls fn with every code span and every code block line of the docs that may be a
// command, with where it is; a span after another program's possessive (the controller's make
// manifests) is that program's.
func eachCommand(docs []document, fn func(where, text string)) {
	for _, d := range docs {
		for _, s := range d.codeSpans() {
			if !foreignOwner.MatchString(s.line.text[:s.start]) {
				fn(d.where(s.line.number), s.text)
			}
		}
		for _, b := range d.blocks {
			for i, l := range b.lines {
				fn(d.where(b.startLine+1+i), l)
			}
		}
	}
}

// unknownNames returns the metrics, keys of the extension's domain and make targets the docs name
// that are not in the given sets.
func unknownNames(docs []document, metricNames []string, keys, targets map[string]bool) []string {
	var unknown []string
	eachText(docs, func(where, text string) {
		for _, m := range metricName.FindAllString(text, -1) {
			if !slices.Contains(metricNames, m) {
				unknown = append(unknown, where+": metric "+m)
			}
		}
		for _, m := range ownKey.FindAllStringSubmatch(text, -1) {
			if !apiVersion.MatchString(m[1]) && !keys[m[1]] {
				unknown = append(unknown, where+": key "+m[0])
			}
		}
	})
	eachCommand(docs, func(where, text string) {
		if m := makeCall.FindStringSubmatch(text); m != nil && !targets[m[2]] {
			unknown = append(unknown, where+": make "+m[2])
		}
	})
	return unknown
}

// knownMetrics are the extension's metrics and the metric parts of the shoots' recording rules
// (shoot:<metric>:<aggregation>).
func knownMetrics() []string {
	names := metrics.Names()
	for _, record := range monitoring.Records {
		names = append(names, strings.Split(record, ":")[1])
	}
	return names
}

var _ = Describe("names in the docs", func() {
	It("are metrics, annotation and label keys and make targets the code has", func() {
		Expect(unknownNames(documents(), knownMetrics(), ownKeysOfCode(), makeTargets())).To(BeEmpty())
	})

	It("fail on a metric, a key and a make target that do not exist, and accept those that do", func() {
		docs := []document{parseDocument("docs/x.md", "Watch `shoot_flux_reconciles_total` and `shoot_flux_operations_total`,\n"+
			"annotate `shoot-flux.extensions.gardener.cloud/rotate-now` or `shoot-flux.extensions.gardener.cloud/rotate`\n"+
			"(apiVersion `shoot-flux.extensions.gardener.cloud/v1alpha1`), then run `make tests` and `make test`\n"+
			"to make sure, as the controller's `make manifests` does.\n```sh\nmake INSTALL_DIR=x publsh\nKUBECONFIG=k make -n push\nmake bench BENCH_ARGS=-x\n```\n")}
		Expect(unknownNames(docs, metrics.Names(), ownKeysOfCode(), makeTargets())).To(ConsistOf(
			"docs/x.md:1: metric shoot_flux_reconciles_total",
			"docs/x.md:2: key shoot-flux.extensions.gardener.cloud/rotate-now",
			"docs/x.md:3: make tests",
			"docs/x.md:6: make publsh",
		))
	})
})
