// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("ValidateConfigMap", func() {
	It("accepts no ConfigMap", func() {
		Expect(ValidateConfigMap(nil, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
	})

	It("accepts a valid ConfigMap", func() {
		cm := configMap(legacyData())
		cm.Data["config.yaml"] = "bootstrap:\n  mode: kluctl\n"
		Expect(ValidateConfigMap(cm, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
	})

	It("accepts a partial layer that relies on other layers", func() {
		Expect(ValidateConfigMap(configMap(map[string]string{"repositoryBranch": "main", "config.yaml": "kluctl:\n  enabled: false\n"}), supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
	})

	It("reports every problem of the ConfigMap", func() {
		err := ValidateConfigMap(configMap(map[string]string{
			"fluxVersion": "0.29.5",
			"config.yaml": "source:\n  ref:\n    commit: abc\n",
			"extra":       "",
		}), supported, sshkey.DefaultKnownHostsLimits())
		Expect(err).To(MatchError(configerror.ErrInvalidConfig))
		Expect(problems(err)).To(Equal([]string{
			"ConfigMap garden-foo/flux-config: extra: Forbidden: unknown key; the supported keys are config.yaml, fluxVersion, repositoryBranch, repositoryType, repositoryUrl",
			`ConfigMap garden-foo/flux-config: fluxVersion: Unsupported value: "0.29.5": ` + supportedFluxMsg,
			`ConfigMap garden-foo/flux-config: config.yaml: source.ref.commit: Invalid value: "abc": must be a full commit SHA: 40 or 64 lower-case hexadecimal characters`,
		}))
	})
})

var _ = Describe("ValidateProviderConfig", func() {
	It("accepts no providerConfig", func() {
		Expect(ValidateProviderConfig(nil, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
		Expect(ValidateProviderConfig(&runtime.RawExtension{}, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
	})

	It("accepts a partial layer that relies on other layers", func() {
		Expect(ValidateProviderConfig(raw(`{"source":{"ref":{"tag":"v1"}},"kluctl":{"enabled":false}}`), supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
	})

	It("rejects unknown fields", func() {
		Expect(ValidateProviderConfig(raw(`{"source":{"url":"ssh://git@host/r","tag":"v1"}}`), supported, sshkey.DefaultKnownHostsLimits())).To(MatchError(`Extension providerConfig: source.tag: Forbidden: unknown field`))
	})

	It("rejects invalid values", func() {
		Expect(ValidateProviderConfig(raw(`{"flux":{"namespace":"Flux"}}`), supported, sshkey.DefaultKnownHostsLimits())).To(MatchError(`Extension providerConfig: flux.namespace: Invalid value: "Flux": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`))
	})
})

var _ = Describe("ProviderConfigFieldErrors", func() {
	fldPath := field.NewPath("spec", "extensions").Index(2).Child("providerConfig")
	errorStrings := func(errs field.ErrorList) []string {
		out := make([]string, 0, len(errs))
		for _, e := range errs {
			out = append(out, e.Error())
		}
		return out
	}

	It("accepts an empty or valid providerConfig", func() {
		Expect(ProviderConfigFieldErrors(nil, supported, sshkey.DefaultKnownHostsLimits(), fldPath)).To(BeEmpty())
		Expect(ProviderConfigFieldErrors(raw(`{"source":{"url":"ssh://git@host/r"}}`), supported, sshkey.DefaultKnownHostsLimits(), fldPath)).To(BeEmpty())
	})

	It("places field errors below the providerConfig's path", func() {
		Expect(errorStrings(ProviderConfigFieldErrors(raw(`{"source":{"url":"http://h/r"},"additionalSecretResources":[{"name":""}]}`), supported, sshkey.DefaultKnownHostsLimits(), fldPath))).To(ConsistOf(
			HavePrefix("spec.extensions[2].providerConfig.source.url: Invalid value"),
			HavePrefix("spec.extensions[2].providerConfig.additionalSecretResources[0].name: Required value"),
		))
	})

	It("places unknown fields below the providerConfig's path", func() {
		Expect(errorStrings(ProviderConfigFieldErrors(raw(`{"source":{"uri":"x"}}`), supported, sshkey.DefaultKnownHostsLimits(), fldPath))).To(ConsistOf(
			"spec.extensions[2].providerConfig.source.uri: Forbidden: unknown field",
		))
	})

	It("blames a document that cannot be decoded on the providerConfig itself", func() {
		Expect(errorStrings(ProviderConfigFieldErrors(raw(`[1]`), supported, sshkey.DefaultKnownHostsLimits(), fldPath))).To(ConsistOf(
			"spec.extensions[2].providerConfig: Invalid value: must be a FluxConfig object",
		))
	})
})
