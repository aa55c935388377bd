// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("the source's provider, certSecretRef and verify", func() {
	const (
		gitProject = `
source:
  url: https://github.com/acme/fleet
  ref: {tag: v1}
  provider: azure
  verify: {mode: Tag, secretRef: {name: pgp-keys}}
bootstrap: {mode: flux}
`
		ociProject = `
source:
  oci:
    url: oci://registry.example.com/acme/fleet
    provider: aws
    certSecretRef: {name: registry-ca}
    verify:
      secretRef: {name: cosign-keys}
      matchOIDCIdentity: [{issuer: "^https://token.actions.githubusercontent.com$", subject: "^https://github.com/acme/.*$"}]
bootstrap: {mode: flux}
`
	)
	resolve := func(cm map[string]string, providerConfig string) (*flux.FluxConfig, error) {
		var raws = raw(providerConfig)
		if providerConfig == "" {
			raws = nil
		}
		return Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), configMap(cm), raws)
	}

	It("decodes them", func() {
		cfg, err := resolve(map[string]string{"config.yaml": gitProject}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.Provider).To(Equal("azure"))
		Expect(cfg.Source.Verify).To(Equal(&flux.GitVerification{Mode: "Tag", SecretRef: flux.SecretReference{Name: "pgp-keys"}}))

		cfg, err = resolve(map[string]string{"config.yaml": ociProject}, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.OCI.Provider).To(Equal("aws"))
		Expect(cfg.Source.OCI.CertSecretRef).To(Equal(&flux.SecretReference{Name: "registry-ca"}))
		Expect(cfg.Source.OCI.Verify).To(Equal(&flux.OCIVerification{
			SecretRef:         &flux.SecretReference{Name: "cosign-keys"},
			MatchOIDCIdentity: []flux.OIDCIdentityMatch{{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/acme/.*$"}},
		}))
	})

	It("replaces a lower layer's verification as a whole, and keeps what a layer leaves unset", func() {
		cfg, err := resolve(map[string]string{"config.yaml": gitProject}, `{"source":{"verify":{"secretRef":{"name":"ssh-keys"}}}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.Verify).To(Equal(&flux.GitVerification{SecretRef: flux.SecretReference{Name: "ssh-keys"}}), "the project's mode Tag is not kept")
		Expect(cfg.Source.Provider).To(Equal("azure"))

		cfg, err = resolve(map[string]string{"config.yaml": ociProject}, `{"source":{"oci":{"provider":"generic","verify":{"provider":"notation","secretRef":{"name":"notation"}}}}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.OCI.Provider).To(Equal("generic"))
		Expect(cfg.Source.OCI.CertSecretRef).To(Equal(&flux.SecretReference{Name: "registry-ca"}))
		Expect(cfg.Source.OCI.Verify).To(Equal(&flux.OCIVerification{Provider: "notation", SecretRef: &flux.SecretReference{Name: "notation"}}),
			"the project's identities are not kept")

		By("dropping the git source's with the git source")
		cfg, err = resolve(map[string]string{"config.yaml": gitProject}, `{"source":{"oci":{"url":"oci://registry.example.com/acme/fleet"}}}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source.Provider).To(BeEmpty())
		Expect(cfg.Source.Verify).To(BeNil())
	})

	It("names the layer and the field of a bound or an enum", func() {
		_, err := resolve(map[string]string{"config.yaml": `{"source":{"provider":"github"}}`},
			`{"source":{"oci":{"url":"oci://registry.example.com/acme/fleet","certSecretRef":{"name":""},"verify":{"matchOIDCIdentity":[`+
				strings.Repeat(`{"issuer":"i","subject":"s"},`, 10)+`{"issuer":"i","subject":"s"}]}}}}`)
		Expect(problems(err)).To(ConsistOf(
			"ConfigMap garden-foo/flux-config: config.yaml: source.provider: Forbidden: needs GitHub App keys in the credentials Secret, which this extension does not deliver (it delivers identity and known_hosts, or username and password); use a deploy key or a token with secretResourceName",
			"Extension providerConfig: source.oci.certSecretRef.name: Required value: must not be empty",
			"Extension providerConfig: source.oci.verify.matchOIDCIdentity: Too many: 11: must have at most 10 items",
		))
	})

	It("refuses the git fields next to source.oci, without a URL and in mode kluctl", func() {
		_, err := resolve(nil, `{"source":{"provider":"azure","oci":{"url":"oci://registry.example.com/acme/fleet"}}}`)
		Expect(problems(err)).To(ConsistOf("Extension providerConfig: source.provider: Forbidden: is a git source field and must not be set together with source.oci"))
		_, err = resolve(nil, `{"source":{"verify":{"secretRef":{"name":"keys"}}}}`)
		Expect(problems(err)).To(ConsistOf("effective configuration: source.url: Required value: source.verify set but no configuration layer sets the repository URL"))
		_, err = resolve(nil, `{"source":{"oci":{"url":"oci://registry.example.com/acme/fleet","certSecretRef":{"name":"ca"}}}}`)
		Expect(problems(err)).To(ConsistOf("effective configuration: source.oci.certSecretRef: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no CA or client certificate Secret; remove it"))
	})
})
