// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// stackitProviderConfig is a providerConfig of stackit's extension as its example/shoot.yaml writes
// it (v0.27), with the Flux release pinned to one of supported.
const stackitProviderConfig = `
apiVersion: flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  version: v2.9.5
  registry: ghcr.io/fluxcd
  namespace: flux-system
source:
  template:
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    spec:
      ref:
        branch: main
      url: https://github.com/fluxcd/flux2-kustomize-helm-example
kustomization:
  template:
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    spec:
      path: clusters/production
`

var _ = Describe("stackit's providerConfig", func() {
	It("resolves with stackit's meaning", func() {
		cfg, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(stackitProviderConfig))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Flux).To(Equal(flux.Flux{
			Version: "v2.9.5", Namespace: "flux-system", Management: flux.ManagementHandover,
			Components: []string{flux.ComponentSourceController, flux.ComponentKustomizeController, flux.ComponentHelmController, flux.ComponentNotificationController},
		}))
		Expect(cfg.Kluctl.Enabled).To(BeFalse())
		Expect(cfg.Source).To(Equal(&flux.Source{
			URL: "https://github.com/fluxcd/flux2-kustomize-helm-example", Ref: flux.GitRef{Branch: "main"}, Path: ".", Type: flux.RepositoryTypePublic,
		}))
		Expect(cfg.Bootstrap.Mode).To(Equal(flux.BootstrapModeFlux))
		Expect(cfg.Bootstrap.Flux).To(Equal(flux.FluxBootstrap{Path: "clusters/production", Prune: false, Interval: metav1.Duration{Duration: time.Minute}}))
		Expect(cfg.Bootstrap.ShootInfo).To(BeTrue())
	})

	It("reports the converted configuration and names the native equivalent", func() {
		conv := ProviderConfigConversion(raw(stackitProviderConfig), supported)
		Expect(conv).NotTo(BeNil())
		Expect(conv.Warnings[0]).To(Equal("is stackit's FluxConfig (it sets apiVersion flux.extensions.gardener.cloud/v1alpha1); it is converted into " +
			"this extension's FluxConfig, which the Extension's status.providerStatus.nativeProviderConfig shows: write that instead"))
		Expect(conv.Native).To(ContainSubstring("management: handover"))
		// The converted document is this extension's: it resolves to the same configuration.
		fromStackit, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(stackitProviderConfig))
		Expect(err).NotTo(HaveOccurred())
		native, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(conv.Native))
		Expect(err).NotTo(HaveOccurred())
		Expect(native).To(Equal(fromStackit))
		Expect(ProviderConfigConversion(raw(conv.Native), supported)).To(BeNil())
	})

	It("names the field of stackit's document in the validation's errors", func() {
		errs := ProviderConfigFieldErrors(raw(`
source:
  template:
    spec: {url: "ftp://example.com/repo", ref: {branch: main}}
kustomization:
  template:
    spec: {path: /abs}
`), supported, sshkey.DefaultKnownHostsLimits(), field.NewPath("spec", "extensions").Index(0).Child("providerConfig"))
		var fields []string
		for _, e := range errs {
			fields = append(fields, e.Field)
		}
		Expect(fields).To(ConsistOf(
			"spec.extensions[0].providerConfig.source.template.spec.url",
			"spec.extensions[0].providerConfig.kustomization.template.spec.path",
		))
	})

	It("resolves a pinned release it does not embed to the operator's default, with a warning, as stackit's example/shoot.yaml pins v2.6.1", func() {
		pinned := strings.Replace(stackitProviderConfig, "version: v2.9.5", "version: v2.6.1", 1)
		cfg, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(pinned))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Flux.Version).To(Equal(defaults.FluxVersion))
		Expect(ProviderConfigFieldErrors(raw(pinned), supported, sshkey.DefaultKnownHostsLimits(), field.NewPath("providerConfig"))).To(BeEmpty())
		Expect(ProviderConfigSelections(raw(pinned), supported, field.NewPath("providerConfig"))).To(BeEmpty(), "the admission checks no release the shoot does not get")
		conv := ProviderConfigConversion(raw(pinned), supported)
		Expect(conv.Warnings).To(ContainElement(HavePrefix("flux.version: v2.6.1 is not a Flux release this extension embeds (v2.8, v2.9)")))
		Expect(conv.Native).NotTo(ContainSubstring("v2.6.1"))
	})

	DescribeTable("bounds the template fields it carries, naming them as stackit's document writes them",
		func(doc, message string) {
			var msgs []string
			for _, e := range ProviderConfigFieldErrors(raw(doc), supported, sshkey.DefaultKnownHostsLimits(), field.NewPath("spec", "providerConfig")) {
				msgs = append(msgs, e.Error())
			}
			Expect(msgs).To(ConsistOf(message))
		},
		Entry("the GitRepository's ignore rules", stackitDoc(`{"url":"https://h/r","ref":{"tag":"v1"},"ignore":"`+strings.Repeat("x", 4097)+`"}`, `{"path":"./"}`),
			"spec.providerConfig.source.template.spec.ignore: Too long: has 4097 bytes, more than 4096"),
		Entry("the OCIRepository's ignore rules", stackitDoc(`{"url":"oci://ghcr.io/acme/fleet","ref":{"tag":"v1"},"ignore":"`+strings.Repeat("x", 4097)+`"}`, `{"path":"./"}`, `"kind":"OCIRepository",`),
			"spec.providerConfig.source.template.spec.ignore: Too long: has 4097 bytes, more than 4096"),
		Entry("the number of variables", stackitDoc(gitSpec, `{"path":"./","postBuild":{"substitute":{`+variables(101)+`}}}`),
			"spec.providerConfig.kustomization.template.spec.postBuild.substitute: Too many: 101: must have at most 100 items"),
		Entry("a variable's name", stackitDoc(gitSpec, `{"path":"./","postBuild":{"substitute":{"`+strings.Repeat("V", 129)+`":"x"}}}`),
			"spec.providerConfig.kustomization.template.spec.postBuild.substitute["+strings.Repeat("V", 128)+"...]: Too long: may not be more than 128 characters"),
		Entry("a variable's value", stackitDoc(gitSpec, `{"path":"./","postBuild":{"substitute":{"CLUSTER":"`+strings.Repeat("x", 4097)+`"}}}`),
			"spec.providerConfig.kustomization.template.spec.postBuild.substitute[CLUSTER]: Too long: has 4097 bytes, more than 4096"),
		Entry("a variable of the shoot's identity", stackitDoc(gitSpec, `{"path":"./","postBuild":{"substitute":{"SHOOT_INFO_NAME":"x"}}}`),
			"spec.providerConfig.kustomization.template.spec.postBuild.substitute[SHOOT_INFO_NAME]: Forbidden: is a variable of the ConfigMap shoot-info (bootstrap.shootInfo), whose value this one would replace; name the variable differently"),
		Entry("the entries to substitute from", stackitDoc(gitSpec, `{"path":"./","postBuild":{"substituteFrom":[`+strings.Repeat(`{"kind":"Secret","name":"v"},`, 20)+`{"kind":"Secret","name":"w"}]}}`),
			"spec.providerConfig.kustomization.template.spec.postBuild.substituteFrom: Too many: 21: must have at most 20 items"),
		Entry("the number of patches", stackitDoc(gitSpec, `{"path":"./","patches":[`+strings.Repeat(`{"patch":"p"},`, 20)+`{"patch":"p"}]}`),
			"spec.providerConfig.kustomization.template.spec.patches: Too many: 21: must have at most 20 items"),
		Entry("a patch", stackitDoc(gitSpec, `{"path":"./","patches":[{"patch":"a"},{"patch":"b"},{"patch":"c"},{"patch":"`+strings.Repeat("p", 16385)+`"}]}`),
			"spec.providerConfig.kustomization.template.spec.patches[3].patch: Too long: has 16385 bytes, more than 16384"),
		Entry("a patch's target", stackitDoc(gitSpec, `{"path":"./","patches":[{"patch":"a","target":{"name":"`+strings.Repeat("n", 1025)+`"}}]}`),
			"spec.providerConfig.kustomization.template.spec.patches[0].target.name: Too long: has 1025 bytes, more than 1024"),
	)

	DescribeTable("bounds the source template's provider, certSecretRef and verify, naming them as stackit's document writes them",
		func(doc string, messages ...string) {
			var msgs []string
			for _, e := range ProviderConfigFieldErrors(raw(doc), supported, sshkey.DefaultKnownHostsLimits(), field.NewPath("spec", "providerConfig")) {
				msgs = append(msgs, e.Error())
			}
			Expect(msgs).To(ConsistOf(messages))
		},
		Entry("the GitRepository's provider and verification", stackitDoc(`{"url":"https://h/r","ref":{"tag":"v1"},"provider":"github","verify":{"mode":"HEAD","secretRef":{"name":"Keys"}}}`, `{"path":"./"}`),
			"spec.providerConfig.source.template.spec.provider: Forbidden: needs GitHub App keys in the credentials Secret, which this extension does not deliver (it delivers identity and known_hosts, or username and password); use a deploy key or a token with secretResourceName",
			`spec.providerConfig.source.template.spec.verify.secretRef.name: Invalid value: "Keys": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		Entry("the OCIRepository's identities", stackitDoc(`{"url":"oci://ghcr.io/acme/fleet","ref":{"tag":"v1"},"verify":{"provider":"cosign","matchOIDCIdentity":[{"issuer":"`+strings.Repeat("i", 1025)+`","subject":".*"}]}}`,
			`{"path":"./"}`, `"kind":"OCIRepository",`),
			"spec.providerConfig.source.template.spec.verify.matchOIDCIdentity[0].issuer: Too long: has 1025 bytes, more than 1024"),
		Entry("the OCIRepository's certificate Secret", stackitDoc(`{"url":"oci://ghcr.io/acme/fleet","ref":{"tag":"v1"},"provider":"gcp","certSecretRef":{"name":"`+strings.Repeat("a", 254)+`"}}`,
			`{"path":"./"}`, `"kind":"OCIRepository",`),
			"spec.providerConfig.source.template.spec.certSecretRef.name: Too long: may not be more than 253 characters"),
	)

	It("refuses another kind", func() {
		_, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(`{"kind": "Shoot", "kustomization": {}}`))
		Expect(err).To(MatchError(ContainSubstring("apiVersion and kind of stackit's FluxConfig must be flux.extensions.gardener.cloud/v1alpha1 FluxConfig, got  Shoot")))
	})
})

// gitSpec is the spec of a GitRepository template.
const gitSpec = `{"url":"https://h/r","ref":{"tag":"v1"}}`

// stackitDoc is stackit's providerConfig with the source template's and the Kustomization
// template's spec; extra goes into the source template, e.g. its kind.
func stackitDoc(sourceSpec, kustomizationSpec string, extra ...string) string {
	return `{"source":{"template":{` + strings.Join(extra, "") + `"spec":` + sourceSpec + `}},"kustomization":{"template":{"spec":` + kustomizationSpec + `}}}`
}

// variables are n substitution variables as JSON object members.
func variables(n int) string {
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf(`"V%d":"x"`, i)
	}
	return strings.Join(members, ",")
}
