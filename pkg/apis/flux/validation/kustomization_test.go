// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

var _ = Describe("the source's ignore rules and the Kustomization's substitution and patches", func() {
	var cfg *flux.FluxConfig

	BeforeEach(func() {
		cfg = &flux.FluxConfig{
			Flux:   flux.Flux{Version: "v2.9.5", Components: []string{flux.ComponentSourceController, flux.ComponentKustomizeController}, Namespace: "flux-system", Management: flux.ManagementContinuous},
			Source: &flux.Source{URL: "https://github.com/o/r", Ref: flux.GitRef{Branch: "main"}, Path: ".", Type: flux.RepositoryTypePublic},
			Bootstrap: flux.Bootstrap{
				Mode: flux.BootstrapModeFlux,
				Flux: flux.FluxBootstrap{Path: ".", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}},
			},
		}
	})

	validate := func() []string {
		return messages(ValidateFluxConfig(cfg, SupportedVersions{Flux: []string{"v2.9.5"}, Kluctl: []string{"v2.28.2"}}, nil))
	}

	It("accepts them at their bounds", func() {
		cfg.Source.Ignore = ptr.To(strings.Repeat("x", MaxIgnoreBytes))
		substitute := map[string]string{}
		for i := range MaxSubstituteVariables {
			substitute[fmt.Sprintf("V%d", i)] = strings.Repeat("v", MaxVariableValueBytes)
		}
		substitute["_"+strings.Repeat("a", MaxVariableNameLength-1)] = ""
		delete(substitute, "V0")
		from := make([]flux.SubstituteReference, MaxSubstituteFrom)
		for i := range from {
			from[i] = flux.SubstituteReference{Kind: "Secret", Name: fmt.Sprintf("vars-%d", i), Optional: true}
		}
		patches := make([]flux.Patch, MaxPatches)
		for i := range patches {
			patches[i] = flux.Patch{Patch: strings.Repeat("p", MaxPatchBytes), Target: &flux.PatchSelector{Name: strings.Repeat("n", MaxPatchSelectorLength)}}
		}
		cfg.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: substitute, SubstituteFrom: from}
		cfg.Bootstrap.Flux.Patches = patches
		Expect(validate()).To(BeEmpty())
	})

	It("accepts empty ignore rules, which ignore nothing", func() {
		cfg.Source.Ignore = ptr.To("")
		Expect(validate()).To(BeEmpty())
	})

	DescribeTable("bounds every field a tenant writes",
		func(mutate func(*flux.FluxConfig), message string) {
			mutate(cfg)
			Expect(validate()).To(ConsistOf(message))
		},
		Entry("the git source's ignore rules", func(c *flux.FluxConfig) { c.Source.Ignore = ptr.To(strings.Repeat("x", MaxIgnoreBytes+1)) },
			"source.ignore: Too long: has 4097 bytes, more than 4096"),
		Entry("the OCI source's ignore rules", func(c *flux.FluxConfig) {
			c.Source = &flux.Source{OCI: &flux.OCISource{URL: "oci://registry.example.com/org/app", Ref: flux.OCIRef{Tag: "v1"}, Path: ".", Ignore: ptr.To(strings.Repeat("x", MaxIgnoreBytes+1))}}
		}, "source.oci.ignore: Too long: has 4097 bytes, more than 4096"),
		Entry("the number of variables", func(c *flux.FluxConfig) {
			substitute := map[string]string{}
			for i := range MaxSubstituteVariables + 1 {
				substitute[fmt.Sprintf("V%d", i)] = "v"
			}
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: substitute}
		}, "bootstrap.flux.postBuild.substitute: Too many: 101: must have at most 100 items"),
		Entry("the length of a variable's name", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: map[string]string{strings.Repeat("A", MaxVariableNameLength+1): "v"}}
		}, fmt.Sprintf("bootstrap.flux.postBuild.substitute[%s...]: Too long: may not be more than 128 characters", strings.Repeat("A", MaxVariableNameLength))),
		Entry("the size of a variable's value", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: map[string]string{"CLUSTER": strings.Repeat("v", MaxVariableValueBytes+1)}}
		}, "bootstrap.flux.postBuild.substitute[CLUSTER]: Too long: has 4097 bytes, more than 4096"),
		Entry("the entries to substitute from", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{SubstituteFrom: make([]flux.SubstituteReference, MaxSubstituteFrom+1)}
		}, "bootstrap.flux.postBuild.substituteFrom: Too many: 21: must have at most 20 items"),
		Entry("the name of an entry to substitute from", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{SubstituteFrom: []flux.SubstituteReference{{Kind: "Secret", Name: strings.Repeat("a", 254)}}}
		}, "bootstrap.flux.postBuild.substituteFrom[0].name: Too long: may not be more than 253 characters"),
		Entry("the number of patches", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.Patches = make([]flux.Patch, MaxPatches+1)
		}, "bootstrap.flux.patches: Too many: 21: must have at most 20 items"),
		Entry("the size of a patch", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.Patches = []flux.Patch{{Patch: "a"}, {Patch: "b"}, {Patch: "c"}, {Patch: strings.Repeat("p", MaxPatchBytes+1)}}
		}, "bootstrap.flux.patches[3].patch: Too long: has 16385 bytes, more than 16384"),
		Entry("a field of a patch's target", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.Patches = []flux.Patch{{Patch: "a", Target: &flux.PatchSelector{Kind: "Deployment", LabelSelector: strings.Repeat("l", MaxPatchSelectorLength+1)}}}
		}, "bootstrap.flux.patches[0].target.labelSelector: Too long: has 1025 bytes, more than 1024"),
	)

	DescribeTable("refuses what the Kustomization cannot apply or would take from the shoot's identity",
		func(mutate func(*flux.FluxConfig), messages ...string) {
			mutate(cfg)
			Expect(validate()).To(ConsistOf(messages))
		},
		Entry("a variable name Flux refuses", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: map[string]string{"cluster-name": "a", "1ST": "b"}}
		},
			`bootstrap.flux.postBuild.substitute[1ST]: Invalid value: "1ST": must be a variable name of Flux: a letter or '_', then letters, digits and '_' (^[_a-zA-Z][_a-zA-Z0-9]*$)`,
			`bootstrap.flux.postBuild.substitute[cluster-name]: Invalid value: "cluster-name": must be a variable name of Flux: a letter or '_', then letters, digits and '_' (^[_a-zA-Z][_a-zA-Z0-9]*$)`),
		Entry("a variable of the shoot's identity", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{Substitute: map[string]string{"SHOOT_NAME": "a", "SHOOT_INFO_TECHNICAL_ID": "b", "SHOOT_STAGE": "ok"}}
		},
			`bootstrap.flux.postBuild.substitute[SHOOT_INFO_TECHNICAL_ID]: Forbidden: is a variable of the ConfigMap shoot-info (bootstrap.shootInfo), whose value this one would replace; name the variable differently`,
			`bootstrap.flux.postBuild.substitute[SHOOT_NAME]: Forbidden: is a variable of the ConfigMap shoot-info (bootstrap.shootInfo), whose value this one would replace; name the variable differently`),
		Entry("an entry of another kind, without a name, or the ConfigMap shoot-info", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.PostBuild = &flux.PostBuild{SubstituteFrom: []flux.SubstituteReference{{Kind: "Bucket", Name: "vars"}, {Kind: "Secret"}, {Kind: "ConfigMap", Name: "shoot-info"}}}
		},
			`bootstrap.flux.postBuild.substituteFrom[0].kind: Unsupported value: "Bucket": supported values: "ConfigMap", "Secret"`,
			`bootstrap.flux.postBuild.substituteFrom[1].name: Required value: must not be empty`,
			`bootstrap.flux.postBuild.substituteFrom[2]: Forbidden: is the ConfigMap bootstrap.shootInfo delivers, which the Kustomization substitutes from after these entries; remove it`),
		Entry("an empty patch", func(c *flux.FluxConfig) {
			c.Bootstrap.Flux.Patches = []flux.Patch{{Target: &flux.PatchSelector{Kind: "Deployment"}}}
		},
			`bootstrap.flux.patches[0].patch: Required value: must not be empty`),
		Entry("ignore rules in mode kluctl, whose KluctlDeployment has none", func(c *flux.FluxConfig) {
			c.Kluctl = flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"}
			c.Bootstrap.Mode = flux.BootstrapModeKluctl
			c.Bootstrap.Kluctl = flux.KluctlBootstrap{Context: "default", Interval: metav1.Duration{Duration: time.Minute}}
			c.Source.Ignore = ptr.To("/docs")
		},
			`source.ignore: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no ignore rules; remove it, or ignore the files in the kluctl project`),
	)

	It("names source.oci.ignore in mode kluctl", func() {
		cfg.Kluctl = flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"}
		cfg.Bootstrap.Mode = flux.BootstrapModeKluctl
		cfg.Bootstrap.Kluctl = flux.KluctlBootstrap{Context: "default", Interval: metav1.Duration{Duration: time.Minute}}
		cfg.Source = &flux.Source{OCI: &flux.OCISource{URL: "oci://registry.example.com/org/app", Ref: flux.OCIRef{Tag: "v1"}, Path: ".", Ignore: ptr.To("")}}
		errs := ValidateFluxConfig(cfg, SupportedVersions{Flux: []string{"v2.9.5"}, Kluctl: []string{"v2.28.2"}}, field.NewPath("spec"))
		Expect(messages(errs)).To(ConsistOf(`spec.source.oci.ignore: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no ignore rules; remove it, or ignore the files in the kluctl project`))
	})
})
