// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/conversion/stackit"
)

var _ = Describe("the source template's provider, certSecretRef and verify", func() {
	It("carries the OCIRepository's, warning about a Secret no additionalSecretResources entry delivers", func() {
		cfg := decode(`
source: {ociRepository: {template: {spec: {url: "oci://ghcr.io/acme/fleet", ref: {tag: v1}, provider: aws, certSecretRef: {name: registry-ca},
  verify: {provider: cosign, secretRef: {name: cosign-keys}, matchOIDCIdentity: [{issuer: "^https://token.actions.githubusercontent.com$", subject: "^https://github.com/acme/.*$"}]}}}}}
kustomization: {template: {spec: {path: ./}}}
additionalSecretResources: [{name: ca-resource, targetName: registry-ca}]
`)
		out, warnings, errs := stackit.Convert(cfg, embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.OCI.Provider).To(Equal(ptr.To("aws")))
		Expect(out.Source.OCI.CertSecretRef).To(Equal(&v1alpha1.SecretReference{Name: "registry-ca"}))
		Expect(out.Source.OCI.Verify).To(Equal(&v1alpha1.OCIVerification{
			Provider:          "cosign",
			SecretRef:         &v1alpha1.SecretReference{Name: "cosign-keys"},
			MatchOIDCIdentity: []v1alpha1.OIDCIdentityMatch{{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/acme/.*$"}},
		}))
		Expect(warnings).To(ConsistOf("source.ociRepository.template.spec.verify.secretRef: no entry of additionalSecretResources delivers the Secret cosign-keys: " +
			"it must exist in Flux's namespace of the shoot, or the source fails until it does; deliver it with an additionalSecretResources entry whose targetName is cosign-keys"))
		Expect(stackit.FieldPath(cfg, "source.oci.provider")).To(Equal("source.ociRepository.template.spec.provider"))
		Expect(stackit.FieldPath(cfg, "source.oci.certSecretRef.name")).To(Equal("source.ociRepository.template.spec.certSecretRef.name"))
		Expect(stackit.FieldPath(cfg, "source.oci.verify.matchOIDCIdentity[0].issuer")).To(Equal("source.ociRepository.template.spec.verify.matchOIDCIdentity[0].issuer"))
	})

	It("carries the GitRepository's, with Flux's older mode head as HEAD", func() {
		cfg := decode(`
source: {template: {spec: {url: "https://dev.azure.com/acme/fleet/_git/fleet", ref: {tag: v1}, provider: azure, verify: {mode: head, secretRef: {name: pgp-keys}}}}}
kustomization: {template: {spec: {path: ./}}}
additionalSecretResourceNames: [pgp-keys]
`)
		out, warnings, errs := stackit.Convert(cfg, embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(warnings).To(BeEmpty())
		Expect(out.Source.Provider).To(Equal(ptr.To("azure")))
		Expect(out.Source.Verify).To(Equal(&v1alpha1.GitVerification{Mode: "HEAD", SecretRef: v1alpha1.SecretReference{Name: "pgp-keys"}}))
		Expect(stackit.FieldPath(cfg, "source.provider")).To(Equal("source.template.spec.provider"))
		Expect(stackit.FieldPath(cfg, "source.verify.mode")).To(Equal("source.template.spec.verify.mode"))

		By("leaving what the template does not set unset, as there")
		out, _, errs = stackit.Convert(decode(v027Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.OCI.Provider).To(BeNil())
		Expect(out.Source.OCI.CertSecretRef).To(BeNil())
		Expect(out.Source.OCI.Verify).To(BeNil())
	})

	DescribeTable("refuses what the bootstrap source still cannot honour",
		func(doc string, messages ...string) {
			Expect(convertErrors(doc)).To(ConsistOf(messages))
		},
		Entry("a GitRepository's certSecretRef, which Flux's GitRepository does not have", `
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}, certSecretRef: {name: ca}}}}
kustomization: {template: {spec: {path: ./}}}
`, `spec.providerConfig.source.template.spec.certSecretRef: Forbidden: unknown field`),
		Entry("an OCIRepository's trusted root and service account", `
source: {template: {kind: OCIRepository, spec: {url: "oci://ghcr.io/acme/fleet", serviceAccountName: puller, verify: {provider: cosign, trustedRootSecretRef: {name: root}}}}}
kustomization: {template: {spec: {path: ./}}}
`,
			`spec.providerConfig.source.template.spec.serviceAccountName: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`,
			`spec.providerConfig.source.template.spec.verify.trustedRootSecretRef: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`),
	)
})
