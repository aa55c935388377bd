// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
)

// alertsByMode returns the alerts the shoots' PrometheusRule has in each bootstrap mode, as the
// monitoring component builds them for a shoot with a delivered controller.
func alertsByMode() map[string]map[string]bool {
	controllers := []monitoring.Controller{{Component: "source-controller", Namespace: fluxv1alpha1.DefaultFluxNamespace}}
	out := map[string]map[string]bool{}
	for mode, bootstraps := range map[fluxapi.BootstrapMode][]*monitoring.Bootstrap{
		fluxapi.BootstrapModeNone:   {nil},
		fluxapi.BootstrapModeKluctl: {{Mode: fluxapi.BootstrapModeKluctl, Namespace: fluxv1alpha1.DefaultKluctlNamespace, DeployKey: true}},
		fluxapi.BootstrapModeFlux: {
			{Mode: fluxapi.BootstrapModeFlux, Namespace: fluxv1alpha1.DefaultFluxNamespace, DeployKey: true},
			{Mode: fluxapi.BootstrapModeFlux, Namespace: fluxv1alpha1.DefaultFluxNamespace, OCI: true},
		},
	} {
		out[string(mode)] = map[string]bool{}
		for _, b := range bootstraps {
			rule := monitoring.PrometheusRule("shoot--project--shoot", monitoring.Values{Controllers: controllers, Bootstrap: b})
			for _, g := range rule.Spec.Groups {
				for _, r := range g.Rules {
					if r.Alert != "" {
						out[string(mode)][r.Alert] = true
					}
				}
			}
		}
	}
	return out
}

var (
	// alertSpan is an alert of the shoots named in a code span, with what follows it.
	alertSpan = regexp.MustCompile("`(ShootFlux[A-Za-z]+)`")
	// modeName names a bootstrap mode: "kluctl mode", "flux-mode", "mode `none`", "bootstrap mode flux".
	modeName = regexp.MustCompile("(?i)\\bmode\\s+`?(kluctl|flux|none)\\b`?|\\b(kluctl|flux|none)[ -]mode\\b")
	// parenthetical is a remark in parentheses right after a name: "`X` (flux mode, label `kind`)".
	parenthetical = regexp.MustCompile(`^\s*\(([^)]*)\)`)
	// onlyWord makes a sentence name every alert of its mode.
	onlyWord = regexp.MustCompile(`\bonly\b`)
)

// modesIn returns the bootstrap modes a text names.
func modesIn(text string) []string {
	var modes []string
	for _, m := range modeName.FindAllStringSubmatch(text, -1) {
		mode := strings.ToLower(m[1] + m[2])
		if !slices.Contains(modes, mode) {
			modes = append(modes, mode)
		}
	}
	return modes
}

// wrongModeAlerts returns the alerts of the shoots that the docs name for a bootstrap mode in
// which the rules do not create them: an alert with a remark naming modes ("`X` (flux mode)"), an
// alert in a sentence that names one mode, and the alerts of a sentence that says "only" of one
// mode, which must be all the mode has.
func wrongModeAlerts(docs []document, byMode map[string]map[string]bool) []string {
	known := map[string]bool{}
	for _, alerts := range byMode {
		maps.Copy(known, alerts)
	}
	var wrong []string
	report := func(where, alert, mode string) {
		wrong = append(wrong, fmt.Sprintf("%s: `%s` in bootstrap mode %s, where pkg/component/monitoring creates only %s",
			where, alert, mode, strings.Join(slices.Sorted(maps.Keys(byMode[mode])), ", ")))
	}
	for _, d := range docs {
		for _, s := range sentencesOf(proseLines(d)) {
			where := d.where(s.lineAt(0))
			named := map[string]bool{}
			sentenceModes := modesIn(inlineCode.ReplaceAllStringFunc(s.text, func(c string) string {
				if alertSpan.MatchString(c) {
					return ""
				}
				return c
			}))
			for _, m := range alertSpan.FindAllStringSubmatchIndex(s.text, -1) {
				alert := s.text[m[2]:m[3]]
				if !known[alert] {
					continue
				}
				named[alert] = true
				modes := sentenceModes
				if p := parenthetical.FindStringSubmatch(s.text[m[1]:]); p != nil && len(modesIn(p[1])) > 0 {
					modes = modesIn(p[1])
				} else if len(sentenceModes) != 1 {
					continue
				}
				for _, mode := range modes {
					if !byMode[mode][alert] {
						report(d.where(s.lineAt(m[0])), alert, mode)
					}
				}
			}
			if len(sentenceModes) == 1 && onlyWord.MatchString(s.text) && len(named) > 0 && !strings.HasPrefix(strings.TrimSpace(s.text), "|") {
				mode := sentenceModes[0]
				for alert := range byMode[mode] {
					if !named[alert] {
						wrong = append(wrong, fmt.Sprintf("%s: says which alerts bootstrap mode %s has, without `%s`", where, mode, alert))
					}
				}
			}
		}
	}
	slices.Sort(wrong)
	return slices.Compact(wrong)
}

var _ = Describe("the shoots' alerts in the docs", func() {
	It("are named only for the bootstrap modes whose rules create them", func() {
		byMode := alertsByMode()
		Expect(byMode["kluctl"]).To(HaveKey(monitoring.AlertDeploymentFailing))
		Expect(byMode["flux"]).To(HaveKey(monitoring.AlertSourceFailing))
		Expect(wrongModeAlerts(documents(), byMode)).To(BeEmpty())
	})

	It("fail on an alert named for a mode that lacks it, and accept the modes that have it", func() {
		byMode := map[string]map[string]bool{
			"none":   {"ShootFluxControllerDown": true},
			"kluctl": {"ShootFluxControllerDown": true, "ShootFluxDeploymentFailing": true},
			"flux":   {"ShootFluxControllerDown": true, "ShootFluxSourceFailing": true},
		}
		docs := []document{parseDocument("docs/x.md", "| Alert | Fires when |\n|---|---|\n"+
			"| `ShootFluxDeploymentFailing` (kluctl mode) | the KluctlDeployment is not ready |\n"+
			"| `ShootFluxDeploymentFailing` (flux mode, label `kind`) | the Kustomization fails |\n\n"+
			"In bootstrap mode `none` only `ShootFluxControllerDown` is added. In flux mode `ShootFluxSourceFailing`\n"+
			"stays silent while your own `GitRepository` succeeds. In mode `flux` only `ShootFluxSourceFailing` is added.\n"+
			"`ShootFluxBootstrapFailing` is the seed's, in every mode.\n")}
		Expect(wrongModeAlerts(docs, byMode)).To(ConsistOf(
			"docs/x.md:4: `ShootFluxDeploymentFailing` in bootstrap mode flux, where pkg/component/monitoring creates only ShootFluxControllerDown, ShootFluxSourceFailing",
			"docs/x.md:7: says which alerts bootstrap mode flux has, without `ShootFluxControllerDown`",
		))
	})
})
