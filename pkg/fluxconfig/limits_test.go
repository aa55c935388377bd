// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"

	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

var _ = Describe("Limits", func() {
	var limits config.Limits

	BeforeEach(func() {
		limits = configv1alpha1.DefaultLimits()
	})

	// kluctlArgs is a config.yaml/providerConfig with kluctl args of n bytes as compact JSON.
	kluctlArgs := func(n int) string {
		// {"a":"<x...>"} is 8 bytes besides the value.
		return fmt.Sprintf(`{"source":{"url":"https://example.com/repo"},"bootstrap":{"kluctl":{"args":{"a":"%s"}}}}`, strings.Repeat("x", n-8))
	}
	// controllers is a document with valid controller settings of at least n bytes as compact
	// JSON, and their size.
	controllers := func(n int) (string, int) {
		nodeSelector := map[string]string{}
		settings := map[string]any{"defaults": map[string]any{"nodeSelector": nodeSelector}}
		// An entry "k00000":"v", has 13 bytes; the rest is added one by one.
		for i := range max(0, (n-40)/13) {
			nodeSelector[fmt.Sprintf("k%05d", i)] = "v"
		}
		for i := len(nodeSelector); ; i++ {
			data, err := json.Marshal(settings)
			Expect(err).NotTo(HaveOccurred())
			if len(data) >= n {
				return `{"controllers":` + string(data) + `}`, len(data)
			}
			nodeSelector[fmt.Sprintf("k%05d", i)] = "v"
		}
	}
	secretResources := func(n int) string {
		var entries []string
		for i := range n {
			entries = append(entries, fmt.Sprintf(`{"name":"s%d"}`, i))
		}
		return `{"additionalSecretResources":[` + strings.Join(entries, ",") + `]}`
	}

	Describe("Resolve", func() {
		resolve := func(data map[string]string, providerConfig string) error {
			d := defaults
			d.Limits = limits
			var cm = configMap(data)
			if data == nil {
				cm = nil
			}
			_, err := Resolve(d, supported, sshkey.DefaultKnownHostsLimits(), cm, raw(providerConfig))
			return err
		}

		It("accepts every input at its limit", func() {
			doc, size := controllers(100)
			limits.ControllersMaxBytes = int32(size)
			limits.KluctlArgsMaxBytes = 100
			Expect(resolve(nil, kluctlArgs(100))).To(Succeed())
			Expect(resolve(map[string]string{"config.yaml": doc}, "")).To(Succeed())
		})

		It("refuses a config.yaml over the limit without decoding it, naming the key", func() {
			limits.ProjectConfigMaxBytes = 1000
			// Not even YAML: an oversized document is refused for its size alone.
			err := resolve(map[string]string{"config.yaml": "{" + strings.Repeat("x", 1000)}, "")
			Expect(problems(err)).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: config.yaml: Too long: has 1001 bytes, more than the operator's limit of 1000 bytes (limits.projectConfigMaxBytes)`))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
		})

		It("refuses a ConfigMap whose data is over the limit, binaryData included", func() {
			limits.ProjectConfigMapMaxBytes = 1000
			cm := configMap(map[string]string{"repositoryUrl": "https://example.com/repo"})
			cm.BinaryData = map[string][]byte{"blob": make([]byte, 1000)}
			d := defaults
			d.Limits = limits
			_, err := Resolve(d, supported, sshkey.DefaultKnownHostsLimits(), cm, nil)
			Expect(problems(err)).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: data: Too long: the keys and values of data and binaryData have 1041 bytes, more than the operator's limit of 1000 bytes (limits.projectConfigMapMaxBytes)`))
		})

		It("refuses kluctl args over the limit in config.yaml and in the providerConfig, naming each", func() {
			limits.KluctlArgsMaxBytes = 100
			err := resolve(map[string]string{"config.yaml": kluctlArgs(101)}, kluctlArgs(200))
			Expect(problems(err)).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: config.yaml: bootstrap.kluctl.args: Too long: has 101 bytes as JSON, more than the operator's limit of 100 bytes (limits.kluctlArgsMaxBytes)`,
				`Extension providerConfig: bootstrap.kluctl.args: Too long: has 200 bytes as JSON, more than the operator's limit of 100 bytes (limits.kluctlArgsMaxBytes)`,
			))
		})

		It("refuses a providerConfig over its size limit before decoding it", func() {
			limits.ProviderConfigMaxBytes = 100
			// Not even YAML: an oversized document is not decoded, so its syntax is never reported.
			doc := "flux: [" + strings.Repeat("x", 100)
			Expect(problems(resolve(nil, doc))).To(ConsistOf(
				`Extension providerConfig: spec.providerConfig: Too long: has 107 bytes, more than the operator's limit of 100 bytes (limits.providerConfigMaxBytes)`))
			Expect(ProviderConfigLimitErrors(&runtime.RawExtension{Raw: []byte(doc)}, limits, field.NewPath("spec", "extensions").Index(0).Child("providerConfig")).ToAggregate()).To(MatchError(
				`spec.extensions[0].providerConfig: Too long: has 107 bytes, more than the operator's limit of 100 bytes (limits.providerConfigMaxBytes)`))
			// The limit itself is allowed.
			limits.ProviderConfigMaxBytes = int32(len(kluctlArgs(60)))
			Expect(resolve(nil, kluctlArgs(60))).To(Succeed())
		})

		It("measures YAML and indented JSON as compact JSON", func() {
			limits.KluctlArgsMaxBytes = 100
			yamlDoc := "bootstrap:\n  kluctl:\n    args:\n      a:      " + strings.Repeat("x", 92) + "\n"
			Expect(resolve(map[string]string{"config.yaml": yamlDoc}, "")).To(Succeed())
			indented := "{\n  \"bootstrap\": {\n    \"kluctl\": {\n      \"args\": {\n        \"a\":    \"" + strings.Repeat("x", 93) + "\"\n      }\n    }\n  }\n}"
			Expect(problems(resolve(nil, indented))).To(ConsistOf(
				`Extension providerConfig: bootstrap.kluctl.args: Too long: has 101 bytes as JSON, more than the operator's limit of 100 bytes (limits.kluctlArgsMaxBytes)`))
		})

		It("refuses controller settings over the limit per layer", func() {
			doc, size := controllers(100)
			limits.ControllersMaxBytes = int32(size)
			// Each layer is within the limit, though together they are over it.
			Expect(resolve(map[string]string{"config.yaml": doc}, doc)).To(Succeed())
			limits.ControllersMaxBytes = int32(size - 1)
			Expect(problems(resolve(nil, doc))).To(ConsistOf(fmt.Sprintf(
				`Extension providerConfig: controllers: Too long: has %d bytes as JSON, more than the operator's limit of %d bytes (limits.controllersMaxBytes)`, size, size-1)))
		})

		It("refuses more additionalSecretResources than the limit", func() {
			limits.AdditionalSecretResourcesMaxCount = 2
			Expect(problems(resolve(map[string]string{"config.yaml": secretResources(3)}, ""))).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: config.yaml: additionalSecretResources: Too many: 3: must have at most 2 items (the operator's limit limits.additionalSecretResourcesMaxCount)`))
		})

		It("leaves documents that do not fit the structure to the decoder", func() {
			Expect(problems(resolve(nil, `{"bootstrap":{"kluctl":"x"},"controllers":[],"additionalSecretResources":{}}`))).To(ConsistOf(
				ContainSubstring("Extension providerConfig: spec.providerConfig:")))
		})

		It("checks nothing with zero limits", func() {
			limits = config.Limits{}
			doc, _ := controllers(100 << 10)
			Expect(resolve(map[string]string{"config.yaml": doc}, kluctlArgs(100<<10))).To(Succeed())
		})

		It("keeps the default limits above what the examples need", func() {
			// Settings of all six controllers with many fields are far below the limit.
			doc, _ := controllers(8 << 10)
			Expect(resolve(map[string]string{"config.yaml": doc}, kluctlArgs(16<<10))).To(Succeed())
			Expect(ValidateConfigMapLimits(configMap(map[string]string{"config.yaml": secretResources(16)}), limits)).To(Succeed())
			Expect(ValidateConfigMapLimits(configMap(map[string]string{"config.yaml": secretResources(17)}), limits)).NotTo(Succeed())
		})
	})

	Describe("ValidateConfigMapLimits", func() {
		It("reports every limit of the ConfigMap with its origin", func() {
			limits.KluctlArgsMaxBytes = 100
			limits.AdditionalSecretResourcesMaxCount = 1
			doc := strings.TrimSuffix(kluctlArgs(101), "}") + `,"additionalSecretResources":[{"name":"a"},{"name":"b"}]}`
			Expect(problems(ValidateConfigMapLimits(configMap(map[string]string{"config.yaml": doc}), limits))).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: config.yaml: bootstrap.kluctl.args: Too long: has 101 bytes as JSON, more than the operator's limit of 100 bytes (limits.kluctlArgsMaxBytes)`,
				`ConfigMap garden-foo/flux-config: config.yaml: additionalSecretResources: Too many: 2: must have at most 1 items (the operator's limit limits.additionalSecretResourcesMaxCount)`,
			))
		})

		It("accepts a ConfigMap within the limits and no ConfigMap", func() {
			Expect(ValidateConfigMapLimits(configMap(legacyData()), limits)).To(Succeed())
			Expect(ValidateConfigMapLimits(nil, limits)).To(Succeed())
		})
	})

	Describe("ProviderConfigLimitErrors", func() {
		It("names the fields below the providerConfig's path", func() {
			doc, size := controllers(100)
			limits.ControllersMaxBytes = int32(size - 1)
			errs := ProviderConfigLimitErrors(raw(doc), limits, field.NewPath("spec", "extensions").Index(0).Child("providerConfig"))
			Expect(errs.ToAggregate().Error()).To(Equal(fmt.Sprintf(
				`spec.extensions[0].providerConfig.controllers: Too long: has %d bytes as JSON, more than the operator's limit of %d bytes (limits.controllersMaxBytes)`, size, size-1)))
		})

		It("accepts no providerConfig", func() {
			Expect(ProviderConfigLimitErrors(nil, limits, field.NewPath("x"))).To(BeEmpty())
		})
	})

	Describe("SecretsSizeError", func() {
		It("names the field whose Secret brings the sum over the limit, as a configuration problem", func() {
			limits.AdditionalSecretResourcesMaxBytes = 1000
			path := field.NewPath("additionalSecretResources").Index(2).Child("name")
			Expect(SecretsSizeError(limits, path, 1000)).To(Succeed())
			err := SecretsSizeError(limits, path, 1001)
			Expect(err).To(MatchError(`additionalSecretResources[2].name: Too long: with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has 1001 bytes, more than the operator's limit of 1000 bytes (limits.additionalSecretResourcesMaxBytes)`))
			Expect(errors.Is(err, configerror.ErrInvalidConfig)).To(BeTrue())
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
		})

		It("counts keys and values", func() {
			Expect(SecretDataSize(map[string][]byte{"ab": []byte("cde"), "f": nil})).To(Equal(6))
		})
	})
})
