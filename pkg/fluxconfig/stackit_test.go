// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
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

	It("refuses another kind", func() {
		_, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(`{"kind": "Shoot", "kustomization": {}}`))
		Expect(err).To(MatchError(ContainSubstring("apiVersion and kind of stackit's FluxConfig must be flux.extensions.gardener.cloud/v1alpha1 FluxConfig, got  Shoot")))
	})
})
