// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

var _ = Describe("the source's provider, certSecretRef and verify", func() {
	var cfg *flux.FluxConfig

	BeforeEach(func() {
		cfg = &flux.FluxConfig{
			Flux:   flux.Flux{Version: "v2.9.5", Components: []string{flux.ComponentSourceController, flux.ComponentKustomizeController}, Namespace: "flux-system", Management: flux.ManagementContinuous},
			Source: &flux.Source{URL: "https://github.com/o/r", Ref: flux.GitRef{Tag: "v1"}, Path: ".", Type: flux.RepositoryTypePublic},
			Bootstrap: flux.Bootstrap{
				Mode: flux.BootstrapModeFlux,
				Flux: flux.FluxBootstrap{Path: ".", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}},
			},
		}
	})
	oci := func(c *flux.FluxConfig) *flux.OCISource {
		c.Source = &flux.Source{OCI: &flux.OCISource{URL: "oci://registry.example.com/org/app", Ref: flux.OCIRef{Tag: "v1"}, Path: "."}}
		return c.Source.OCI
	}
	identities := func(n int) []flux.OIDCIdentityMatch {
		out := make([]flux.OIDCIdentityMatch, n)
		for i := range out {
			out[i] = flux.OIDCIdentityMatch{Issuer: "^https://issuer$", Subject: "^repo:acme/.*$"}
		}
		return out
	}
	validate := func() []string {
		return messages(ValidateFluxConfig(cfg, SupportedVersions{Flux: []string{"v2.7.5", "v2.9.5"}, Kluctl: []string{"v2.28.2"}}, nil))
	}

	It("accepts each provider of Flux's enums the source can use, and every field at its bounds", func() {
		for _, p := range []string{"generic", "aws", "azure"} {
			cfg.Source.Provider = p
			Expect(validate()).To(BeEmpty(), p)
		}
		for _, mode := range []string{"", "HEAD", "Tag", "TagAndHEAD"} {
			cfg.Source.Verify = &flux.GitVerification{Mode: mode, SecretRef: flux.SecretReference{Name: "pgp-keys"}}
			Expect(validate()).To(BeEmpty(), mode)
		}
		o := oci(cfg)
		for _, p := range []string{"generic", "aws", "azure", "gcp"} {
			o.Provider = p
			Expect(validate()).To(BeEmpty(), p)
		}
		o.CertSecretRef = &flux.SecretReference{Name: strings.Repeat("a", 253)}
		o.Verify = &flux.OCIVerification{Provider: "cosign", MatchOIDCIdentity: identities(MaxOIDCIdentities)}
		o.Verify.MatchOIDCIdentity[9] = flux.OIDCIdentityMatch{Issuer: strings.Repeat("i", MaxOIDCIdentityPatternLength), Subject: strings.Repeat("s", MaxOIDCIdentityPatternLength)}
		Expect(validate()).To(BeEmpty())
		o.Verify = &flux.OCIVerification{Provider: "notation", SecretRef: &flux.SecretReference{Name: "notation-policy"}}
		Expect(validate()).To(BeEmpty())
	})

	DescribeTable("refuses what source-controller would refuse or cannot do, naming the field",
		func(mutate func(*flux.FluxConfig), messages ...string) {
			mutate(cfg)
			Expect(validate()).To(ConsistOf(messages))
		},
		Entry("a git provider outside the enum", func(c *flux.FluxConfig) { c.Source.Provider = "gcp" },
			`source.provider: Unsupported value: "gcp": supported values: "generic", "aws", "azure"`),
		Entry("the GitHub App provider, whose keys the credentials Secret does not carry", func(c *flux.FluxConfig) { c.Source.Provider = "github" },
			`source.provider: Forbidden: needs GitHub App keys in the credentials Secret, which this extension does not deliver (it delivers identity and known_hosts, or username and password); use a deploy key or a token with secretResourceName`),
		Entry("AWS CodeCommit on a Flux release whose GitRepository does not know it", func(c *flux.FluxConfig) {
			c.Flux.Version = "v2.7"
			c.Source.Provider = "aws"
		}, `source.provider: Invalid value: "aws": needs Flux v2.9.0 or later, whose GitRepository knows AWS CodeCommit; flux.version selects v2.7.5`),
		Entry("an OCI provider outside the enum", func(c *flux.FluxConfig) { oci(c).Provider = "github" },
			`source.oci.provider: Unsupported value: "github": supported values: "generic", "aws", "azure", "gcp"`),
		Entry("a certificate Secret's name", func(c *flux.FluxConfig) { oci(c).CertSecretRef = &flux.SecretReference{Name: "Registry_CA"} },
			`source.oci.certSecretRef.name: Invalid value: "Registry_CA": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		Entry("a certificate Secret's long name, unprinted", func(c *flux.FluxConfig) { oci(c).CertSecretRef = &flux.SecretReference{Name: strings.Repeat("a", 254)} },
			`source.oci.certSecretRef.name: Too long: may not be more than 253 characters`),
		Entry("a git verification without keys, or of another mode", func(c *flux.FluxConfig) {
			c.Source.Verify = &flux.GitVerification{Mode: "head"}
		},
			`source.verify.mode: Unsupported value: "head": supported values: "HEAD", "Tag", "TagAndHEAD"`,
			`source.verify.secretRef.name: Required value: must not be empty`),
		Entry("a tag's verification where a branch is checked out", func(c *flux.FluxConfig) {
			c.Source.Ref = flux.GitRef{Branch: "main"}
			c.Source.Verify = &flux.GitVerification{Mode: "Tag", SecretRef: flux.SecretReference{Name: "pgp-keys"}}
		}, `source.verify.mode: Invalid value: "Tag": verifies a tag and needs source.ref.tag or source.ref.semver`),
		Entry("another verification provider", func(c *flux.FluxConfig) { oci(c).Verify = &flux.OCIVerification{Provider: "gpg"} },
			`source.oci.verify.provider: Unsupported value: "gpg": supported values: "cosign", "notation"`),
		Entry("notation without its Secret, and with identities", func(c *flux.FluxConfig) {
			oci(c).Verify = &flux.OCIVerification{Provider: "notation", MatchOIDCIdentity: identities(1)}
		},
			`source.oci.verify.secretRef: Required value: notation needs a Secret with its trust policy and certificates`,
			`source.oci.verify.matchOIDCIdentity: Forbidden: matches the identities of keyless cosign signatures; remove it for notation`),
		Entry("too many identities", func(c *flux.FluxConfig) {
			oci(c).Verify = &flux.OCIVerification{MatchOIDCIdentity: identities(MaxOIDCIdentities + 1)}
		},
			`source.oci.verify.matchOIDCIdentity: Too many: 11: must have at most 10 items`),
		Entry("an identity's patterns: missing, too long, or no regular expression", func(c *flux.FluxConfig) {
			oci(c).Verify = &flux.OCIVerification{SecretRef: &flux.SecretReference{Name: "keys"}, MatchOIDCIdentity: []flux.OIDCIdentityMatch{
				{Subject: strings.Repeat("s", MaxOIDCIdentityPatternLength+1)}, {Issuer: "(", Subject: ".*"},
			}}
		},
			`source.oci.verify.matchOIDCIdentity[0].issuer: Required value: must be a Go regular expression`,
			`source.oci.verify.matchOIDCIdentity[0].subject: Too long: has 1025 bytes, more than 1024`,
			"source.oci.verify.matchOIDCIdentity[1].issuer: Invalid value: \"(\": must be a Go regular expression: error parsing regexp: missing closing ): `(`"),
		Entry("the git fields next to source.oci", func(c *flux.FluxConfig) {
			c.Source.Provider = "azure"
			c.Source.Verify = &flux.GitVerification{SecretRef: flux.SecretReference{Name: "keys"}}
			c.Source.OCI = &flux.OCISource{URL: "oci://registry.example.com/org/app", Ref: flux.OCIRef{Tag: "v1"}, Path: "."}
		},
			`source.url: Forbidden: is a git source field and must not be set together with source.oci`,
			`source.ref: Forbidden: is a git source field and must not be set together with source.oci`,
			`source.path: Forbidden: is a git source field and must not be set together with source.oci`,
			`source.type: Forbidden: is a git source field and must not be set together with source.oci`,
			`source.provider: Forbidden: is a git source field and must not be set together with source.oci`,
			`source.verify: Forbidden: is a git source field and must not be set together with source.oci`),
	)

	Context("in mode kluctl, whose KluctlDeployment's source is a URL, a ref and a path", func() {
		BeforeEach(func() {
			cfg.Kluctl = flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"}
			cfg.Bootstrap.Mode = flux.BootstrapModeKluctl
			cfg.Bootstrap.Kluctl = flux.KluctlBootstrap{Context: "default", Interval: metav1.Duration{Duration: time.Minute}}
		})

		It("refuses the git source's provider and verification", func() {
			cfg.Source.Provider = "generic"
			cfg.Source.Verify = &flux.GitVerification{SecretRef: flux.SecretReference{Name: "pgp-keys"}}
			Expect(validate()).To(ConsistOf(
				`source.provider: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no authentication provider; remove it, kluctl pulls with the credentials of secretResourceName`,
				`source.verify: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no signature verification; remove it`))
		})

		It("refuses the OCI source's provider, certificate Secret and verification", func() {
			o := oci(cfg)
			o.Provider, o.CertSecretRef, o.Verify = "aws", &flux.SecretReference{Name: "registry-ca"}, &flux.OCIVerification{}
			Expect(validate()).To(ConsistOf(
				`source.oci.provider: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no authentication provider; remove it, kluctl pulls with the credentials of secretResourceName`,
				`source.oci.certSecretRef: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no CA or client certificate Secret; remove it`,
				`source.oci.verify: Forbidden: needs bootstrap.mode flux: the KluctlDeployment of mode kluctl has no signature verification; remove it`))
		})
	})
})
