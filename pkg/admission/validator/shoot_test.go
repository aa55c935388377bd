// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

// supported are fixed versions, so that the tests do not depend on the embedded manifests.
var supported = validation.SupportedVersions{Flux: []string{"v2.9.5"}, Kluctl: []string{"v2.28.2"}}

// validConfig uses every field that references a Shoot resource (the flux bootstrap section is
// checked whatever the mode).
const validConfig = `{
  "apiVersion": "shoot-flux.extensions.gardener.cloud/v1alpha1",
  "kind": "FluxConfig",
  "flux": {"version": "v2.9.5"},
  "source": {"url": "ssh://git@github.com/owner/repo", "ref": {"branch": "main"}, "secretResourceName": "git-creds"},
  "bootstrap": {"mode": "kluctl", "kluctl": {"args": {"env": "prod"}, "decryption": {"secretResourceName": "sops-key"}}, "flux": {"decryption": {"secretResourceName": "sops-flux"}}},
  "additionalSecretResources": [{"name": "app-secret"}]
}`

func secretResource(name string) gardencorev1beta1.NamedResourceReference {
	return gardencorev1beta1.NamedResourceReference{
		Name:        name,
		ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "secret-" + name},
	}
}

func allSecretResources() []gardencorev1beta1.NamedResourceReference {
	return []gardencorev1beta1.NamedResourceReference{secretResource("git-creds"), secretResource("sops-key"), secretResource("sops-flux"), secretResource("app-secret")}
}

// newShoot returns a Shoot with another extension first, so that the shoot-flux entry is
// spec.extensions[1] and the field paths show that the index is the entry's.
func newShoot(providerConfig string, resources ...gardencorev1beta1.NamedResourceReference) *gardencorev1beta1.Shoot {
	ext := gardencorev1beta1.Extension{Type: "shoot-flux"}
	if providerConfig != "" {
		ext.ProviderConfig = &runtime.RawExtension{Raw: []byte(providerConfig)}
	}
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "garden-dev", Name: "crazy-botany"},
		Spec: gardencorev1beta1.ShootSpec{
			Extensions: []gardencorev1beta1.Extension{{Type: "shoot-dns-service"}, ext},
			Resources:  resources,
		},
	}
}

var _ = Describe("Shoot validator", func() {
	var (
		ctx       = context.Background()
		validator = NewShootValidator(supported, defaultHosts, defaultLimits, nil)
	)

	Describe("creation", func() {
		It("admits a valid providerConfig whose references are Secret resources", func() {
			Expect(validator.Validate(ctx, newShoot(validConfig, allSecretResources()...), nil)).To(Succeed())
		})

		It("admits the extension without providerConfig", func() {
			Expect(validator.Validate(ctx, newShoot(""), nil)).To(Succeed())
		})

		It("admits a providerConfig in YAML with the legacy version format", func() {
			Expect(validator.Validate(ctx, newShoot("flux:\n  version: 2.9.5\n"), nil)).To(Succeed())
		})

		DescribeTable("admits a minor with an embedded release",
			func(version string) {
				Expect(validator.Validate(ctx, newShoot(`{"flux": {"version": "`+version+`"}}`), nil)).To(Succeed())
			},
			Entry("minor", "v2.9"),
			Entry("minor without v", "2.9"),
			Entry("minor with x", "v2.9.x"),
			Entry("minor with x without v", "2.9.x"),
		)

		DescribeTable("rejects an invalid providerConfig with the field path in the Shoot",
			func(providerConfig string, messages ...string) {
				err := validator.Validate(ctx, newShoot(providerConfig, allSecretResources()...), nil)
				Expect(err).To(HaveOccurred())
				for _, msg := range messages {
					Expect(err.Error()).To(ContainSubstring(msg))
				}
			},
			Entry("unknown field",
				`{"source": {"url": "ssh://git@github.com/owner/repo", "branch": "main"}}`,
				`spec.extensions[1].providerConfig.source.branch: Forbidden: unknown field`),
			Entry("bad URL",
				`{"source": {"url": "ftp://example.com/repo"}}`,
				`spec.extensions[1].providerConfig.source.url: Invalid value: "ftp://example.com/repo"`),
			Entry("unknown management mode",
				`{"flux": {"management": "manual"}}`,
				`spec.extensions[1].providerConfig.flux.management: Unsupported value: "manual": supported values: "continuous", "handover"`),
			Entry("unsupported Flux version",
				`{"flux": {"version": "v2.0.0"}}`,
				`spec.extensions[1].providerConfig.flux.version: Unsupported value: "v2.0.0": supported values: "v2.9", "v2.9.5"`),
			Entry("Flux minor without embedded release",
				`{"flux": {"version": "2.8.x"}}`,
				`spec.extensions[1].providerConfig.flux.version: Unsupported value: "2.8.x": supported values: "v2.9", "v2.9.5"`),
			Entry("Flux major",
				`{"flux": {"version": "v2"}}`,
				`spec.extensions[1].providerConfig.flux.version: Unsupported value: "v2": supported values: "v2.9", "v2.9.5"`),
			Entry("unsupported kluctl version",
				`{"kluctl": {"version": "v1.0.0"}}`,
				`spec.extensions[1].providerConfig.kluctl.version: Unsupported value: "v1.0.0"`),
			Entry("kluctl args that are not an object",
				`{"bootstrap": {"kluctl": {"args": ["--prune"]}}}`,
				`spec.extensions[1].providerConfig.bootstrap.kluctl.args: Invalid value`, "must be a JSON object"),
			Entry("a bad entry in a list",
				`{"additionalSecretResources": [{"name": "git-creds"}, {"name": "git-creds"}]}`,
				`spec.extensions[1].providerConfig.additionalSecretResources[1].name: Duplicate value: "git-creds"`),
			Entry("a resource quantity that does not parse",
				`{"controllers": {"kluctl-controller": {"resources": {"limits": {"memory": "lots"}}}}}`,
				`spec.extensions[1].providerConfig.controllers.kluctl-controller.resources.limits.memory: Invalid value: "lots": must be a quantity`),
			Entry("a controller setting out of range",
				`{"controllers": {"defaults": {"concurrent": 0}}}`,
				`spec.extensions[1].providerConfig.controllers.defaults.concurrent: Invalid value: 0: must be between 1 and 100`),
			Entry("wrong kind",
				`{"apiVersion": "v1", "kind": "ConfigMap"}`,
				`spec.extensions[1].providerConfig: Invalid value: apiVersion and kind must be shoot-flux.extensions.gardener.cloud/v1alpha1 FluxConfig`),
			// Issue 20: matching such a pattern against a long host name hung the extension.
			Entry("a known_hosts pattern with too many wildcards",
				`{"source": {"url": "ssh://git@github.com/owner/repo", "knownHosts": "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*az ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"}}`,
				`spec.extensions[1].providerConfig.source.knownHosts: Invalid value: "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*az": line 1: host pattern has 17 wildcards (* and ?), may not have more than 3`),
			Entry("a known_hosts line that is no entry",
				`{"source": {"url": "ssh://git@github.com/owner/repo", "knownHosts": "# ok\ngithub.com"}}`,
				`spec.extensions[1].providerConfig.source.knownHosts: Invalid value: "github.com": line 2 is not a known_hosts entry`),
			Entry("several problems at once",
				`{"flux": {"version": "v2.0.0"}, "source": {"url": "ftp://example.com/repo"}}`,
				`spec.extensions[1].providerConfig.flux.version: Unsupported value`, `spec.extensions[1].providerConfig.source.url: Invalid value`),
		)

		DescribeTable("rejects references that are no Secret entry of spec.resources",
			func(resources []gardencorev1beta1.NamedResourceReference, message string) {
				err := validator.Validate(ctx, newShoot(validConfig, resources...), nil)
				Expect(err).To(MatchError(ContainSubstring(message)))
			},
			Entry("missing source credentials",
				[]gardencorev1beta1.NamedResourceReference{secretResource("sops-key"), secretResource("app-secret")},
				`spec.extensions[1].providerConfig.source.secretResourceName: Invalid value: "git-creds": must name an entry of spec.resources`),
			Entry("decryption key of the wrong kind",
				[]gardencorev1beta1.NamedResourceReference{
					secretResource("git-creds"),
					{Name: "sops-key", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "sops"}},
					secretResource("app-secret"),
				},
				`spec.extensions[1].providerConfig.bootstrap.kluctl.decryption.secretResourceName: Invalid value: "sops-key": spec.resources[1] references v1 ConfigMap, but the resource must be a v1 Secret`),
			Entry("decryption key of mode flux missing",
				[]gardencorev1beta1.NamedResourceReference{secretResource("git-creds"), secretResource("app-secret")},
				`spec.extensions[1].providerConfig.bootstrap.flux.decryption.secretResourceName: Invalid value: "sops-flux": must name an entry of spec.resources`),
			Entry("additional Secret of the wrong API version",
				[]gardencorev1beta1.NamedResourceReference{
					secretResource("git-creds"), secretResource("sops-key"),
					{Name: "app-secret", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Secret", Name: "s"}},
				},
				`spec.extensions[1].providerConfig.additionalSecretResources[0].name: Invalid value: "app-secret": spec.resources[2] references example.com/v1 Secret`),
		)

		It("reports a document that is no object on the providerConfig", func() {
			err := validator.Validate(ctx, newShoot(`"ssh://git@github.com/owner/repo"`), nil)
			Expect(err).To(MatchError(`spec.extensions[1].providerConfig: Invalid value: must be a FluxConfig object`))
		})

		It("rejects an additional Secret that would take the name of one of the extension's own", func() {
			err := validator.Validate(ctx, newShoot(`{"additionalSecretResources": [{"name": "pull-secret", "targetName": "shoot-flux-git-credentials"}, {"name": "shoot-flux-sops"}]}`,
				secretResource("pull-secret"), secretResource("shoot-flux-sops")), nil)
			Expect(err).To(MatchError(ContainSubstring(`spec.extensions[1].providerConfig.additionalSecretResources[0].targetName: Invalid value: "shoot-flux-git-credentials": is the name of a Secret the extension writes into the shoot`)))
			Expect(err).To(MatchError(ContainSubstring(`spec.extensions[1].providerConfig.additionalSecretResources[1].name: Invalid value: "shoot-flux-sops"`)))
		})

		It("checks the registry credentials of an OCI source like the git credentials", func() {
			config := `{"source": {"oci": {"url": "oci://ghcr.io/org/fleet", "secretResourceName": "registry"}}}`
			err := validator.Validate(ctx, newShoot(config), nil)
			Expect(err).To(MatchError(`spec.extensions[1].providerConfig.source.oci.secretResourceName: Invalid value: "registry": must name an entry of spec.resources`))
			Expect(validator.Validate(ctx, newShoot(config, secretResource("registry")), nil)).To(Succeed())
		})

		It("rejects git fields next to an OCI source, naming them", func() {
			err := validator.Validate(ctx, newShoot(`{"source": {"path": "deploy", "oci": {"url": "oci://ghcr.io/org/fleet"}}}`), nil)
			Expect(err).To(MatchError(`spec.extensions[1].providerConfig.source.path: Forbidden: is a git source field and must not be set together with source.oci`))
		})

		It("reports an empty secretResourceName once, as a field error", func() {
			err := validator.Validate(ctx, newShoot(`{"source": {"url": "ssh://git@github.com/owner/repo", "secretResourceName": ""}}`), nil)
			Expect(err).To(MatchError(`spec.extensions[1].providerConfig.source.secretResourceName: Required value: must name a Shoot spec.resources Secret if set`))
		})
	})

	Describe("what is not validated", func() {
		It("ignores Shoots without the extension", func() {
			shoot := newShoot("")
			shoot.Spec.Extensions = shoot.Spec.Extensions[:1]
			Expect(validator.Validate(ctx, shoot, nil)).To(Succeed())
		})

		It("ignores a disabled extension", func() {
			shoot := newShoot(`{"flux": {"version": "v2.0.0"}}`)
			shoot.Spec.Extensions[1].Disabled = ptr.To(true)
			Expect(validator.Validate(ctx, shoot, nil)).To(Succeed())
		})

		It("checks an extension that is explicitly not disabled", func() {
			shoot := newShoot(`{"flux": {"version": "v2.0.0"}}`)
			shoot.Spec.Extensions[1].Disabled = ptr.To(false)
			Expect(validator.Validate(ctx, shoot, nil)).To(MatchError(ContainSubstring("spec.extensions[1].providerConfig.flux.version")))
		})

		It("ignores the providerConfig of other extension types", func() {
			shoot := newShoot("")
			shoot.Spec.Extensions[0].ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"source": {"url": "ftp://x"}, "unknown": true}`)}
			Expect(validator.Validate(ctx, shoot, nil)).To(Succeed())
		})

		It("ignores Shoots in deletion", func() {
			shoot := newShoot(`{"flux": {"version": "v2.0.0"}}`)
			shoot.DeletionTimestamp = ptr.To(metav1.Now())
			Expect(validator.Validate(ctx, shoot, newShoot(`{"flux": {"version": "v2.0.0"}}`))).To(Succeed())
		})

		It("rejects objects that are no Shoot", func() {
			Expect(validator.Validate(ctx, &corev1.ConfigMap{}, nil)).To(MatchError(ContainSubstring("wrong object type")))
		})
	})

	Describe("update", func() {
		// unsupportedConfig was valid when a Flux release was still shipped.
		const unsupportedConfig = `{"flux": {"version": "v2.0.0"}, "source": {"url": "ssh://git@github.com/owner/repo", "secretResourceName": "git-creds"}}`

		It("admits unrelated changes of a Shoot whose unchanged providerConfig became invalid", func() {
			old := newShoot(unsupportedConfig, secretResource("git-creds"))
			shoot := old.DeepCopy()
			shoot.Annotations = map[string]string{"gardener.cloud/operation": "reconcile"}
			shoot.Spec.Resources = append(shoot.Spec.Resources, secretResource("unrelated"))
			Expect(validator.Validate(ctx, shoot, old)).To(Succeed())
		})

		It("compares providerConfigs by content, not by serialisation", func() {
			old := newShoot(unsupportedConfig, secretResource("git-creds"))
			shoot := newShoot(`{
				"source": {"secretResourceName": "git-creds", "url": "ssh://git@github.com/owner/repo"},
				"flux": {"version": "v2.0.0"}
			}`, secretResource("git-creds"))
			Expect(validator.Validate(ctx, shoot, old)).To(Succeed())
		})

		It("validates a changed providerConfig in full", func() {
			old := newShoot(unsupportedConfig, secretResource("git-creds"))
			shoot := newShoot(`{"flux": {"version": "v2.0.0"}, "source": {"url": "ssh://git@github.com/owner/other", "secretResourceName": "git-creds"}}`, secretResource("git-creds"))
			Expect(validator.Validate(ctx, shoot, old)).To(MatchError(ContainSubstring(`spec.extensions[1].providerConfig.flux.version: Unsupported value: "v2.0.0"`)))
		})

		It("validates the providerConfig when the extension is enabled", func() {
			old := newShoot(unsupportedConfig, secretResource("git-creds"))
			old.Spec.Extensions[1].Disabled = ptr.To(true)
			shoot := newShoot(unsupportedConfig, secretResource("git-creds"))
			Expect(validator.Validate(ctx, shoot, old)).To(MatchError(ContainSubstring("spec.extensions[1].providerConfig.flux.version")))
		})

		It("validates the providerConfig when the extension is added", func() {
			old := newShoot("")
			old.Spec.Extensions = old.Spec.Extensions[:1]
			shoot := newShoot(unsupportedConfig, secretResource("git-creds"))
			Expect(validator.Validate(ctx, shoot, old)).To(MatchError(ContainSubstring("spec.extensions[1].providerConfig.flux.version")))
		})

		It("rejects a change of spec.resources that breaks a reference of the unchanged providerConfig", func() {
			old := newShoot(unsupportedConfig, secretResource("git-creds"))
			shoot := old.DeepCopy()
			shoot.Spec.Resources = nil
			err := validator.Validate(ctx, shoot, old)
			Expect(err).To(MatchError(`spec.extensions[1].providerConfig.source.secretResourceName: Invalid value: "git-creds": must name an entry of spec.resources`))
		})

		It("admits a change of spec.resources next to a reference that was broken before", func() {
			old := newShoot(unsupportedConfig)
			shoot := old.DeepCopy()
			shoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{secretResource("unrelated")}
			Expect(validator.Validate(ctx, shoot, old)).To(Succeed())
		})

		It("rejects a changed providerConfig with a broken reference even if it was broken before", func() {
			old := newShoot(`{"source": {"url": "ssh://git@github.com/owner/repo", "secretResourceName": "git-creds"}}`)
			shoot := newShoot(`{"source": {"url": "ssh://git@github.com/owner/other", "secretResourceName": "git-creds"}}`)
			Expect(validator.Validate(ctx, shoot, old)).To(MatchError(ContainSubstring("spec.extensions[1].providerConfig.source.secretResourceName")))
		})
	})
})
