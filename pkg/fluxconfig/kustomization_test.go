// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("the source's ignore rules and the Kustomization's substitution and patches", func() {
	const project = `
source:
  url: https://github.com/acme/fleet
  ignore: |
    /*
    !/deploy
bootstrap:
  mode: flux
  flux:
    postBuild:
      substitute: {CLUSTER: prod, REGION: eu}
      substituteFrom: [{kind: ConfigMap, name: vars}, {kind: Secret, name: secrets, optional: true}]
    patches:
    - patch: |
        - op: replace
          path: /spec/replicas
          value: 2
      target: {kind: Deployment, name: "app-.*", labelSelector: tier=web}
`
	resolve := func(cm map[string]string, providerConfig string) (*flux.FluxConfig, error) {
		var raws = raw(providerConfig)
		if providerConfig == "" {
			raws = nil
		}
		return Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), configMap(cm), raws)
	}

	It("decodes them", func() {
		cfg, err := resolve(map[string]string{"config.yaml": project}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.Ignore).To(Equal(ptr.To("/*\n!/deploy\n")))
		Expect(cfg.Bootstrap.Flux.PostBuild).To(Equal(&flux.PostBuild{
			Substitute:     map[string]string{"CLUSTER": "prod", "REGION": "eu"},
			SubstituteFrom: []flux.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "secrets", Optional: true}},
		}))
		Expect(cfg.Bootstrap.Flux.Patches).To(Equal([]flux.Patch{{
			Patch:  "- op: replace\n  path: /spec/replicas\n  value: 2\n",
			Target: &flux.PatchSelector{Kind: "Deployment", Name: "app-.*", LabelSelector: "tier=web"},
		}}))
	})

	It("decodes source.oci.ignore", func() {
		cfg, err := resolve(nil, `{"source":{"oci":{"url":"oci://registry.example.com/org/app","ignore":""}},"bootstrap":{"mode":"flux"}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.OCI.Ignore).To(Equal(ptr.To("")), "empty rules ignore nothing, unlike unset ones")
		Expect(cfg.Source.Ignore).To(BeNil())
	})

	It("replaces the variables, the entries and the patches of lower layers as a whole, and keeps what a layer leaves unset", func() {
		cfg, err := resolve(map[string]string{"config.yaml": project},
			`{"bootstrap":{"flux":{"postBuild":{"substitute":{"CLUSTER":"dev"}},"patches":[]}}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Bootstrap.Flux.PostBuild.Substitute).To(Equal(map[string]string{"CLUSTER": "dev"}), "REGION is not kept")
		Expect(cfg.Bootstrap.Flux.PostBuild.SubstituteFrom).To(HaveLen(2), "the shoot's layer does not set them")
		Expect(cfg.Bootstrap.Flux.Patches).To(BeEmpty(), "an empty list removes the project's patches")
		Expect(cfg.Source.Ignore).To(Equal(ptr.To("/*\n!/deploy\n")))

		By("dropping the git source's ignore rules with the git source")
		cfg, err = resolve(map[string]string{"config.yaml": project}, `{"source":{"oci":{"url":"oci://registry.example.com/org/app"}}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.Ignore).To(BeNil())
		Expect(cfg.Source.OCI.Ignore).To(BeNil())
	})

	It("names the layer and the field of a bound", func() {
		patches := strings.Repeat(`{"patch":"a"},`, 20) + `{"patch":"b"}`
		_, err := resolve(nil, fmt.Sprintf(`{"source":{"url":"https://github.com/acme/fleet","ignore":%q},"bootstrap":{"mode":"flux","flux":{"patches":[%s]}}}`,
			strings.Repeat("x", 4097), patches))
		Expect(problems(err)).To(ConsistOf(
			"Extension providerConfig: source.ignore: Too long: has 4097 bytes, more than 4096",
			"Extension providerConfig: bootstrap.flux.patches: Too many: 21: must have at most 20 items",
		))
		_, err = resolve(map[string]string{"config.yaml": `{"bootstrap":{"flux":{"postBuild":{"substitute":{"SHOOT_NAME":"x"}}}}}`}, "")
		Expect(problems(err)).To(ConsistOf(
			"ConfigMap garden-foo/flux-config: config.yaml: bootstrap.flux.postBuild.substitute[SHOOT_NAME]: Forbidden: is a variable of the ConfigMap shoot-info (bootstrap.shootInfo), whose value this one would replace; name the variable differently",
		))
	})

	It("refuses ignore rules of a git source next to source.oci, and without a URL", func() {
		_, err := resolve(nil, `{"source":{"ignore":"/x","oci":{"url":"oci://registry.example.com/org/app"}}}`)
		Expect(problems(err)).To(ConsistOf("Extension providerConfig: source.ignore: Forbidden: is a git source field and must not be set together with source.oci"))
		_, err = resolve(nil, `{"source":{"ignore":"/x"}}`)
		Expect(problems(err)).To(ConsistOf("effective configuration: source.url: Required value: source.ignore set but no configuration layer sets the repository URL"))
	})

	It("refuses ignore rules in mode kluctl", func() {
		_, err := resolve(nil, `{"source":{"url":"https://github.com/acme/fleet","ignore":"/x"}}`)
		Expect(problems(err)).To(ConsistOf("effective configuration: source.ignore: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no ignore rules; remove it, or ignore the files in the kluctl project"))
	})
})
