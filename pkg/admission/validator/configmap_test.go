// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
)

func projectConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-dev", Name: "flux-config"}, Data: data}
}

// legacyData is the format of the original 23technologies extension.
func legacyData() map[string]string {
	return map[string]string{
		"fluxVersion":      "2.9.5",
		"repositoryUrl":    "ssh://git@github.com/owner/repo",
		"repositoryBranch": "main",
		"repositoryType":   "private",
	}
}

var _ = Describe("ConfigMap validator", func() {
	var (
		ctx       = context.Background()
		validator = NewConfigMapValidator(supported, defaultHosts, defaultLimits, nil)
	)

	Describe("creation", func() {
		It("admits the legacy keys", func() {
			Expect(validator.Validate(ctx, projectConfigMap(legacyData()), nil)).To(Succeed())
		})

		It("admits a FluxConfig document under config.yaml next to legacy keys", func() {
			data := legacyData()
			data["config.yaml"] = "kluctl:\n  version: v2.28.2\nbootstrap:\n  mode: kluctl\n"
			Expect(validator.Validate(ctx, projectConfigMap(data), nil)).To(Succeed())
		})

		It("admits an empty ConfigMap", func() {
			Expect(validator.Validate(ctx, projectConfigMap(nil), nil)).To(Succeed())
		})

		DescribeTable("rejects invalid content with the key in the message",
			func(data map[string]string, messages ...string) {
				err := validator.Validate(ctx, projectConfigMap(data), nil)
				for _, message := range messages {
					Expect(err).To(MatchError(ContainSubstring(message)))
				}
			},
			Entry("bad repositoryUrl",
				map[string]string{"repositoryUrl": "ftp://example.com/repo"},
				`ConfigMap garden-dev/flux-config: repositoryUrl: Invalid value: "ftp://example.com/repo"`),
			// The value is quoted as written, without the "v" the extension adds.
			Entry("unsupported fluxVersion",
				map[string]string{"fluxVersion": " 0.29.5 "},
				`ConfigMap garden-dev/flux-config: fluxVersion: Unsupported value: "0.29.5": supported values: "v2.9", "v2.9.5"`),
			Entry("bad repositoryBranch",
				map[string]string{"repositoryBranch": "feature..x"},
				`ConfigMap garden-dev/flux-config: repositoryBranch: Invalid value: "feature..x": must not contain "..", "@{" or "//"`),
			Entry("bad repositoryType",
				map[string]string{"repositoryType": "Private"},
				`ConfigMap garden-dev/flux-config: repositoryType: Unsupported value: "Private": supported values: "public", "private"`),
			Entry("fluxVersion naming a minor without embedded release",
				map[string]string{"fluxVersion": "2.8.x"},
				`ConfigMap garden-dev/flux-config: fluxVersion: Unsupported value: "2.8.x": supported values: "v2.9", "v2.9.5"`),
			Entry("config.yaml with a minor without embedded release",
				map[string]string{"config.yaml": "flux:\n  version: v2.8\n"},
				`ConfigMap garden-dev/flux-config: config.yaml: flux.version: Unsupported value: "v2.8": supported values: "v2.9", "v2.9.5"`),
			Entry("unknown key",
				map[string]string{"repositoryURL": "ssh://git@github.com/owner/repo"},
				`repositoryURL: Forbidden: unknown key`),
			Entry("config.yaml that is no YAML",
				map[string]string{"config.yaml": "source: [url"},
				`ConfigMap garden-dev/flux-config: config.yaml: `),
			Entry("config.yaml with an unknown field",
				map[string]string{"config.yaml": "source:\n  urll: ssh://git@github.com/owner/repo\n"},
				`ConfigMap garden-dev/flux-config: config.yaml: source.urll: Forbidden: unknown field`),
			Entry("config.yaml with a bad toleration",
				map[string]string{"config.yaml": "controllers:\n  defaults:\n    tolerations: [{key: a, operator: Exists, value: b}]\n"},
				`ConfigMap garden-dev/flux-config: config.yaml: controllers.defaults.tolerations[0].value: Invalid value: "b": must be empty when operator is Exists`),
			Entry("config.yaml with an invalid field",
				map[string]string{"config.yaml": "bootstrap:\n  mode: helm\n"},
				`config.yaml: bootstrap.mode: Unsupported value: "helm"`),
			Entry("config.yaml with too many known_hosts lines",
				map[string]string{"config.yaml": "source:\n  knownHosts: |\n" + strings.Repeat("    # comment\n", 1001)},
				`ConfigMap garden-dev/flux-config: config.yaml: source.knownHosts: Too many: 1001: has 1001 lines, may not have more than 1000`),
			Entry("config.yaml with too long a known_hosts pattern",
				map[string]string{"config.yaml": "source:\n  knownHosts: " + strings.Repeat("a", 301) + " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"},
				`ConfigMap garden-dev/flux-config: config.yaml: source.knownHosts: Invalid value: "aaaa`, `line 1: host pattern is 301 characters long, may not be more than 300`),
			Entry("config.yaml with an unknown management mode",
				map[string]string{"config.yaml": "flux:\n  management: Handover\n"},
				`ConfigMap garden-dev/flux-config: config.yaml: flux.management: Unsupported value: "Handover": supported values: "continuous", "handover"`),
		)

		It("rejects binaryData", func() {
			cm := projectConfigMap(nil)
			cm.BinaryData = map[string][]byte{"config.yaml": []byte("flux: {}")}
			Expect(validator.Validate(ctx, cm, nil)).To(MatchError(ContainSubstring("binaryData[config.yaml]: Forbidden: unknown key")))
		})

		It("ignores ConfigMaps with other names", func() {
			cm := projectConfigMap(map[string]string{"repositoryUrl": "ftp://example.com/repo", "anything": "goes"})
			cm.Name = "kube-root-ca.crt"
			Expect(validator.Validate(ctx, cm, nil)).To(Succeed())
		})

		It("rejects objects that are no ConfigMap", func() {
			Expect(validator.Validate(ctx, newShoot(""), nil)).To(MatchError(ContainSubstring("wrong object type")))
		})
	})

	Describe("update", func() {
		// unsupported was valid when the Flux release was still shipped.
		unsupported := func() *corev1.ConfigMap {
			return projectConfigMap(map[string]string{"fluxVersion": "2.0.0", "repositoryUrl": "ssh://git@github.com/owner/repo"})
		}

		It("admits metadata changes of a ConfigMap whose unchanged content became invalid", func() {
			old := unsupported()
			cm := old.DeepCopy()
			cm.Labels = map[string]string{"team": "platform"}
			Expect(validator.Validate(ctx, cm, old)).To(Succeed())
		})

		It("validates changed content in full", func() {
			old := unsupported()
			cm := old.DeepCopy()
			cm.Data["repositoryBranch"] = "develop"
			Expect(validator.Validate(ctx, cm, old)).To(MatchError(ContainSubstring(`fluxVersion: Unsupported value: "2.0.0"`)))
		})

		It("validates changed binaryData", func() {
			old := projectConfigMap(legacyData())
			cm := old.DeepCopy()
			cm.BinaryData = map[string][]byte{"key": {0}}
			Expect(validator.Validate(ctx, cm, old)).To(MatchError(ContainSubstring("binaryData[key]")))
		})

		It("ignores ConfigMaps in deletion", func() {
			old := projectConfigMap(map[string]string{"repositoryUrl": "ftp://example.com/repo"})
			cm := old.DeepCopy()
			cm.DeletionTimestamp = ptr.To(metav1.Now())
			cm.Data["fluxVersion"] = "0.1.0"
			Expect(validator.Validate(ctx, cm, old)).To(Succeed())
		})
	})
})
