// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
)

// defaultLimits are the controller's default limits, which the admission's flags default to.
var defaultLimits = configv1alpha1.DefaultLimits()

var _ = Describe("Limits", func() {
	ctx := context.Background()
	limits := defaultLimits
	limits.ProjectConfigMapMaxBytes = 200
	limits.ProjectConfigMaxBytes = 150
	limits.KluctlArgsMaxBytes = 20
	limits.ControllersMaxBytes = 30
	limits.AdditionalSecretResourcesMaxCount = 1

	argsConfig := `{"bootstrap":{"kluctl":{"args":{"env":"a-rather-long-environment"}}}}`
	controllersConfig := `{"controllers":{"defaults":{"concurrent":4,"priorityClassName":"x"}}}`
	secretsConfig := `{"additionalSecretResources":[{"name":"app-secret"},{"name":"sops-key"}]}`

	Describe("Shoot validator", func() {
		validator := NewShootValidator(supported, defaultHosts, limits, nil)

		DescribeTable("rejects a providerConfig over a limit, naming the field",
			func(providerConfig, message string) {
				err := validator.Validate(ctx, newShoot(providerConfig, allSecretResources()...), nil)
				Expect(err).To(MatchError(message))
			},
			Entry("kluctl args", argsConfig,
				"spec.extensions[1].providerConfig.bootstrap.kluctl.args: Too long: has 35 bytes as JSON, more than the operator's limit of 20 bytes (limits.kluctlArgsMaxBytes)"),
			Entry("controller settings", controllersConfig,
				"spec.extensions[1].providerConfig.controllers: Too long: has 53 bytes as JSON, more than the operator's limit of 30 bytes (limits.controllersMaxBytes)"),
			Entry("additionalSecretResources", secretsConfig,
				"spec.extensions[1].providerConfig.additionalSecretResources: Too many: 2: must have at most 1 items (the operator's limit limits.additionalSecretResourcesMaxCount)"),
		)

		It("admits the same providerConfigs with the default limits", func() {
			validator := NewShootValidator(supported, defaultHosts, defaultLimits, nil)
			for _, providerConfig := range []string{argsConfig, controllersConfig, secretsConfig} {
				Expect(validator.Validate(ctx, newShoot(providerConfig, allSecretResources()...), nil)).To(Succeed(), providerConfig)
			}
		})

		It("admits an unchanged providerConfig over a limit, so that the Shoot can still be changed otherwise", func() {
			old := newShoot(argsConfig, allSecretResources()...)
			updated := old.DeepCopy()
			updated.Labels = map[string]string{"team": "a"}
			Expect(validator.Validate(ctx, updated, old)).To(Succeed())
		})
	})

	Describe("ConfigMap validator", func() {
		validator := NewConfigMapValidator(supported, defaultHosts, limits, nil)

		DescribeTable("rejects a ConfigMap over a limit, naming the key and field",
			func(data map[string]string, message string) {
				Expect(validator.Validate(ctx, projectConfigMap(data), nil)).To(MatchError(message))
			},
			Entry("config.yaml", map[string]string{"config.yaml": strings.Repeat("#", 151)},
				"ConfigMap garden-dev/flux-config: config.yaml: Too long: has 151 bytes, more than the operator's limit of 150 bytes (limits.projectConfigMaxBytes)"),
			Entry("the data", map[string]string{"config.yaml": "{}", "repositoryUrl": "https://example.com/" + strings.Repeat("x", 170)},
				"ConfigMap garden-dev/flux-config: data: Too long: the keys and values of data and binaryData have 216 bytes, more than the operator's limit of 200 bytes (limits.projectConfigMapMaxBytes)"),
			Entry("kluctl args in config.yaml", map[string]string{"config.yaml": argsConfig},
				"ConfigMap garden-dev/flux-config: config.yaml: bootstrap.kluctl.args: Too long: has 35 bytes as JSON, more than the operator's limit of 20 bytes (limits.kluctlArgsMaxBytes)"),
			Entry("controller settings in config.yaml", map[string]string{"config.yaml": controllersConfig},
				"ConfigMap garden-dev/flux-config: config.yaml: controllers: Too long: has 53 bytes as JSON, more than the operator's limit of 30 bytes (limits.controllersMaxBytes)"),
			Entry("additionalSecretResources in config.yaml", map[string]string{"config.yaml": secretsConfig},
				"ConfigMap garden-dev/flux-config: config.yaml: additionalSecretResources: Too many: 2: must have at most 1 items (the operator's limit limits.additionalSecretResourcesMaxCount)"),
		)

		It("counts binaryData", func() {
			cm := projectConfigMap(nil)
			cm.BinaryData = map[string][]byte{"blob": make([]byte, 200)}
			Expect(validator.Validate(ctx, cm, nil)).To(MatchError(ContainSubstring(fmt.Sprintf("data: Too long: the keys and values of data and binaryData have %d bytes", 204))))
		})

		It("admits an update that keeps an oversized content, e.g. a new label", func() {
			old := projectConfigMap(map[string]string{"config.yaml": argsConfig})
			updated := old.DeepCopy()
			updated.Labels = map[string]string{"team": "a"}
			Expect(validator.Validate(ctx, updated, old)).To(Succeed())
		})

		It("ignores other ConfigMaps", func() {
			cm := &corev1.ConfigMap{}
			cm.Name = "other"
			cm.Data = map[string]string{"config.yaml": strings.Repeat("#", 1000)}
			Expect(validator.Validate(ctx, cm, nil)).To(Succeed())
		})
	})
})
