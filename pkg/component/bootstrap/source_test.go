// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
)

var _ = Describe("The source's provider, certSecretRef and verify", func() {
	const (
		gitRepository = "GitRepository/flux-system/shoot-flux-bootstrap"
		ociRepository = "OCIRepository/flux-system/shoot-flux-bootstrap"
		gitURL        = "https://git.example.com/org/repo"
		ociURL        = "oci://registry.example.com/fleet/apps"
	)
	spec := func(objs map[string]map[string]any, key string) map[string]any {
		GinkgoHelper()
		Expect(objs).To(HaveKey(key))
		return objs[key]["spec"].(map[string]any)
	}
	ociConfig := func(oci fluxapi.OCISource) *fluxapi.FluxConfig {
		cfg := config(fluxapi.BootstrapModeFlux)
		oci.URL, oci.Ref, oci.Path = ociURL, fluxapi.OCIRef{Tag: "v1"}, "."
		cfg.Source = &fluxapi.Source{OCI: &oci}
		return cfg
	}

	It("renders none of them unless set", func() {
		git := spec(objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: gitURL}), gitRepository)
		Expect(git).NotTo(HaveKey("provider"))
		Expect(git).NotTo(HaveKey("verify"))
		oci := spec(objects(Values{Config: ociConfig(fluxapi.OCISource{}), URL: ociURL}), ociRepository)
		Expect(oci).NotTo(HaveKey("provider"))
		Expect(oci).NotTo(HaveKey("certSecretRef"))
		Expect(oci).NotTo(HaveKey("verify"))
	})

	It("renders the GitRepository's provider and verification, leaving an unset mode to the CRD's default", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		cfg.Source.Provider = "azure"
		cfg.Source.Verify = &fluxapi.GitVerification{Mode: "TagAndHEAD", SecretRef: fluxapi.SecretReference{Name: "pgp-keys"}}
		git := spec(objects(Values{Config: cfg, URL: gitURL}), gitRepository)
		Expect(git).To(HaveKeyWithValue("provider", "azure"))
		Expect(git).To(HaveKeyWithValue("verify", map[string]any{"mode": "TagAndHEAD", "secretRef": map[string]any{"name": "pgp-keys"}}))

		cfg.Source.Verify.Mode = ""
		Expect(spec(objects(Values{Config: cfg, URL: gitURL}), gitRepository)).To(HaveKeyWithValue("verify", map[string]any{"secretRef": map[string]any{"name": "pgp-keys"}}))
	})

	It("renders the OCIRepository's provider, certificate Secret and verification", func() {
		cfg := ociConfig(fluxapi.OCISource{
			Provider:      "gcp",
			CertSecretRef: &fluxapi.SecretReference{Name: "registry-ca"},
			Verify: &fluxapi.OCIVerification{Provider: "cosign", MatchOIDCIdentity: []fluxapi.OIDCIdentityMatch{
				{Issuer: "^https://token.actions.githubusercontent.com$", Subject: "^https://github.com/acme/.*$"},
			}},
		})
		oci := spec(objects(Values{Config: cfg, URL: ociURL}), ociRepository)
		Expect(oci).To(HaveKeyWithValue("provider", "gcp"))
		Expect(oci).To(HaveKeyWithValue("certSecretRef", map[string]any{"name": "registry-ca"}))
		Expect(oci).To(HaveKeyWithValue("verify", map[string]any{"provider": "cosign", "matchOIDCIdentity": []any{
			map[string]any{"issuer": "^https://token.actions.githubusercontent.com$", "subject": "^https://github.com/acme/.*$"},
		}}))

		By("rendering cosign for an unset verification provider, which the CRD's enum needs")
		cfg = ociConfig(fluxapi.OCISource{Verify: &fluxapi.OCIVerification{SecretRef: &fluxapi.SecretReference{Name: "cosign-keys"}}})
		Expect(spec(objects(Values{Config: cfg, URL: ociURL}), ociRepository)).To(HaveKeyWithValue("verify",
			map[string]any{"provider": "cosign", "secretRef": map[string]any{"name": "cosign-keys"}}))
	})
})
