// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"errors"
	"fmt"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// supportedFluxMsg lists the selectors of supported.Flux: every release and its minor.
const supportedFluxMsg = `supported values: "v2.8", "v2.8.0", "v2.9", "v2.9.4", "v2.9.5"`

var (
	// Two patches of one minor, unsorted, so that a minor has to find its newest.
	supported = validation.SupportedVersions{Flux: []string{"v2.9.5", "v2.8.0", "v2.9.4"}, Kluctl: []string{"v2.28.2", "v2.27.0"}}
	defaults  = Defaults{FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2"}
)

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-foo", Name: "flux-config"}, Data: data}
}

func raw(s string) *runtime.RawExtension {
	return &runtime.RawExtension{Raw: []byte(s)}
}

// controllersOnly is the effective configuration without any layer besides the defaults.
func controllersOnly() *flux.FluxConfig {
	return &flux.FluxConfig{
		Flux:   flux.Flux{Version: "v2.9.5", Components: []string{flux.ComponentSourceController}, Namespace: "flux-system", Management: flux.ManagementContinuous},
		Kluctl: flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"},
		Bootstrap: flux.Bootstrap{
			Mode:      flux.BootstrapModeNone,
			Kluctl:    flux.KluctlBootstrap{Context: "default", Interval: metav1.Duration{Duration: 5 * time.Minute}},
			Flux:      flux.FluxBootstrap{Path: ".", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}},
			ShootInfo: true,
		},
		Monitoring: flux.Monitoring{Shoot: flux.ShootMonitoring{Enabled: true}},
	}
}

// legacyResult is the effective configuration of the original extension's example ConfigMap.
func legacyResult() *flux.FluxConfig {
	cfg := controllersOnly()
	cfg.Source = &flux.Source{URL: "ssh://git@github.com/owner/repo", Ref: flux.GitRef{Branch: "main"}, Path: ".", Type: flux.RepositoryTypePrivate}
	cfg.Bootstrap.Mode = flux.BootstrapModeKluctl
	return cfg
}

func legacyData() map[string]string {
	return map[string]string{
		"fluxVersion":      "2.9.5",
		"repositoryUrl":    "ssh://git@github.com/owner/repo",
		"repositoryBranch": "main",
		"repositoryType":   "private",
	}
}

// problems returns the individual problems of a configuration error.
func problems(err error) []string {
	var cfgErr *configerror.Error
	Expect(errors.As(err, &cfgErr)).To(BeTrue(), "expected a *configerror.Error, got %v", err)
	return cfgErr.Problems
}

// resolve resolves the layers with the defaults and versions of these specs.
func resolve(cm *corev1.ConfigMap, providerConfig *runtime.RawExtension) (*flux.FluxConfig, error) {
	return Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), cm, providerConfig)
}

var _ = Describe("Resolve", func() {
	Describe("without configuration", func() {
		It("installs the controllers only", func() {
			Expect(resolve(nil, nil)).To(Equal(controllersOnly()))
		})

		It("treats empty layers as absent", func() {
			Expect(resolve(configMap(nil), raw(""))).To(Equal(controllersOnly()))
			Expect(resolve(configMap(map[string]string{"config.yaml": "  \n"}), raw("{}"))).To(Equal(controllersOnly()))
			Expect(resolve(configMap(map[string]string{"repositoryUrl": "", "repositoryBranch": ""}), &runtime.RawExtension{})).To(Equal(controllersOnly()))
		})

		It("treats an empty source section as no source", func() {
			Expect(resolve(nil, raw(`{"source":{"ref":{}}}`))).To(Equal(controllersOnly()))
		})

		It("forces bootstrap mode none", func() {
			Expect(resolve(nil, raw(`{"bootstrap":{"mode":"flux"}}`))).To(Equal(controllersOnly()))
		})

		It("needs a URL if another source field is set", func() {
			_, err := resolve(nil, raw(`{"source":{"path":"clusters/a","knownHosts":"","secretResourceName":"creds"}}`))
			Expect(err).To(MatchError("effective configuration: source.url: Required value: source.path, source.knownHosts, source.secretResourceName set but no configuration layer sets the repository URL"))
		})
	})

	Describe("legacy ConfigMap keys", func() {
		It("names the legacy keys that are set without a URL", func() {
			_, err := resolve(configMap(map[string]string{"repositoryType": "private"}), nil)
			Expect(err).To(MatchError("ConfigMap garden-foo/flux-config: repositoryUrl: Required value: repositoryType set but no configuration layer sets the repository URL"))

			_, err = resolve(configMap(map[string]string{"repositoryBranch": "main", "repositoryType": "private"}), nil)
			Expect(err).To(MatchError("ConfigMap garden-foo/flux-config: repositoryUrl: Required value: repositoryBranch, repositoryType set but no configuration layer sets the repository URL"))
		})

		It("names the legacy keys and the fields of other layers that are set without a URL", func() {
			cm := configMap(map[string]string{"repositoryBranch": "main", "repositoryType": "private", "config.yaml": "source:\n  path: clusters\n"})
			_, err := resolve(cm, raw(`{"source":{"ref":{"tag":"v1"}}}`))
			Expect(problems(err)).To(Equal([]string{
				// The providerConfig's tag replaces repositoryBranch, which is therefore not to blame.
				"ConfigMap garden-foo/flux-config: repositoryUrl: Required value: repositoryType set but no configuration layer sets the repository URL",
				"effective configuration: source.url: Required value: source.ref, source.path set but no configuration layer sets the repository URL",
			}))
		})

		It("names repositoryType for a private https repositoryUrl, which the legacy keys cannot give credentials", func() {
			data := legacyData()
			data["repositoryUrl"] = "https://github.com/owner/repo"
			_, err := resolve(configMap(data), nil)
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: repositoryType: Invalid value: "private": a private https repository needs username/password credentials from a Shoot resource in source.secretResourceName; generated deploy keys only work with ssh URLs`))

			By("accepting credentials from another layer")
			cfg, err := resolve(configMap(data), raw(`{"source":{"secretResourceName":"creds"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source.Type).To(Equal(flux.RepositoryTypePrivate))
		})

		It("blames the layer that set the private type of an https URL", func() {
			data := legacyData()
			data["repositoryUrl"] = "https://github.com/owner/repo"
			data["repositoryType"] = "public"
			_, err := resolve(configMap(data), raw(`{"source":{"type":"private"}}`))
			Expect(err).To(MatchError("effective configuration: source.secretResourceName: Required value: a private https repository needs username/password credentials from a Shoot resource; generated deploy keys only work with ssh URLs"))
		})

		It("reads the format of the original extension and adds the leading v to the version", func() {
			Expect(resolve(configMap(legacyData()), nil)).To(Equal(legacyResult()))
		})

		It("ignores surrounding whitespace", func() {
			data := legacyData()
			data["repositoryBranch"] = "main\n"
			Expect(resolve(configMap(data), nil)).To(Equal(legacyResult()))
		})

		It("reads a public repository", func() {
			data := legacyData()
			data["repositoryUrl"] = "https://github.com/owner/repo"
			data["repositoryType"] = "public"
			want := legacyResult()
			want.Source.URL = "https://github.com/owner/repo"
			want.Source.Type = flux.RepositoryTypePublic
			Expect(resolve(configMap(data), nil)).To(Equal(want))
		})

		It("reads a minor", func() {
			data := legacyData()
			data["fluxVersion"] = "2.9.x"
			cfg, err := resolve(configMap(data), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Version).To(Equal("v2.9.5"))
		})

		It("rejects an old Flux version and lists the supported ones", func() {
			data := legacyData()
			data["fluxVersion"] = "0.29.5"
			_, err := resolve(configMap(data), nil)
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: fluxVersion: Unsupported value: "0.29.5": ` + supportedFluxMsg))
		})

		It("names the legacy key of invalid values", func() {
			_, err := resolve(configMap(map[string]string{
				"repositoryUrl":    "ftp://x",
				"repositoryBranch": "a b",
				"repositoryType":   "secret",
			}), nil)
			Expect(problems(err)).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: repositoryUrl: Invalid value: "ftp://x": scheme "ftp" is not supported, use ssh://, https:// or user@host:path`,
				`ConfigMap garden-foo/flux-config: repositoryBranch: Invalid value: "a b": must not contain whitespace or control characters`,
				`ConfigMap garden-foo/flux-config: repositoryType: Unsupported value: "secret": supported values: "public", "private"`,
			))
		})

		It("rejects unknown keys", func() {
			cm := configMap(map[string]string{"fluxversion": "v2.9.5", "repositoryURL": "x"})
			cm.BinaryData = map[string][]byte{"config.yaml": []byte("{}")}
			_, err := resolve(cm, nil)
			Expect(problems(err)).To(Equal([]string{
				"ConfigMap garden-foo/flux-config: fluxversion: Forbidden: unknown key; the supported keys are config.yaml, fluxVersion, repositoryBranch, repositoryType, repositoryUrl",
				"ConfigMap garden-foo/flux-config: repositoryURL: Forbidden: unknown key; the supported keys are config.yaml, fluxVersion, repositoryBranch, repositoryType, repositoryUrl",
				"ConfigMap garden-foo/flux-config: binaryData[config.yaml]: Forbidden: unknown key; the supported keys are config.yaml, fluxVersion, repositoryBranch, repositoryType, repositoryUrl",
			}))
		})
	})

	Describe("config.yaml", func() {
		It("reads a full document", func() {
			cfg, err := resolve(configMap(map[string]string{"config.yaml": `
apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  version: v2.8.0
  components: [source-controller, kustomize-controller, helm-controller]
  namespace: gitops
  management: handover
kluctl:
  version: "2.27.0"
  namespace: kluctl
source:
  url: git@gitlab.example.com:group/repo.git
  ref:
    commit: 0123456789abcdef0123456789abcdef01234567
  path: clusters/prod
  knownHosts: gitlab.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
  secretResourceName: git-creds
bootstrap:
  mode: kluctl
  shootInfo: false
  kluctl:
    target: prod
    context: shoot
    args:
      environment: prod
    prune: true
    delete: true
    interval: 1m
    retryInterval: 30s
    timeout: 10m
    dryRun: true
    decryption:
      secretResourceName: sops
  flux:
    targetNamespace: apps
additionalSecretResources:
- name: app-secret
  targetName: app
  namespace: apps
monitoring:
  shoot:
    enabled: false
`}), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg).To(Equal(&flux.FluxConfig{
				Monitoring: flux.Monitoring{Shoot: flux.ShootMonitoring{Enabled: false}},
				Flux:       flux.Flux{Version: "v2.8.0", Components: []string{"source-controller", "kustomize-controller", "helm-controller"}, Namespace: "gitops", Management: flux.ManagementHandover},
				Kluctl:     flux.Kluctl{Enabled: true, Version: "v2.27.0", Namespace: "kluctl"},
				Source: &flux.Source{
					URL:                "git@gitlab.example.com:group/repo.git",
					Ref:                flux.GitRef{Commit: "0123456789abcdef0123456789abcdef01234567"},
					Path:               "clusters/prod",
					Type:               flux.RepositoryTypePrivate,
					KnownHosts:         "gitlab.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
					SecretResourceName: "git-creds",
				},
				Bootstrap: flux.Bootstrap{
					Mode:      flux.BootstrapModeKluctl,
					ShootInfo: false,
					Kluctl: flux.KluctlBootstrap{
						Target:        "prod",
						Context:       "shoot",
						Args:          &runtime.RawExtension{Raw: []byte(`{"environment":"prod"}`)},
						Prune:         true,
						Delete:        true,
						Interval:      metav1.Duration{Duration: time.Minute},
						RetryInterval: &metav1.Duration{Duration: 30 * time.Second},
						Timeout:       &metav1.Duration{Duration: 10 * time.Minute},
						DryRun:        true,
						Decryption:    &flux.Decryption{SecretResourceName: "sops"},
					},
					Flux: flux.FluxBootstrap{Path: "clusters/prod", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}, TargetNamespace: "apps"},
				},
				AdditionalSecretResources: []flux.AdditionalSecretResource{{Name: "app-secret", TargetName: "app", Namespace: "apps"}},
			}))
		})

		It("accepts a document without apiVersion and kind", func() {
			Expect(resolve(configMap(map[string]string{"config.yaml": "source:\n  url: ssh://git@github.com/owner/repo\n"}), nil)).To(Equal(legacyResult()))
		})

		It("overrides the legacy keys of the same ConfigMap", func() {
			data := legacyData()
			data["config.yaml"] = "source:\n  path: clusters/a\n  ref:\n    tag: v1\nflux:\n  version: v2.8.0\n"
			want := legacyResult()
			want.Flux.Version = "v2.8.0"
			want.Source.Path = "clusters/a"
			want.Source.Ref = flux.GitRef{Tag: "v1"}
			want.Bootstrap.Flux.Path = "clusters/a"
			Expect(resolve(configMap(data), nil)).To(Equal(want))
		})

		It("rejects unknown fields", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": "source:\n  url: ssh://git@github.com/owner/repo\n  branch: main\n"}), nil)
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: config.yaml: source.branch: Forbidden: unknown field`))
		})

		It("rejects duplicate fields", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": "flux:\n  version: v2.9.5\n  version: v2.8.0\n"}), nil)
			Expect(err).To(MatchError("ConfigMap garden-foo/flux-config: config.yaml: strict decoding error: yaml: unmarshal errors:\n  line 3: key \"version\" already set in map"))
		})

		It("rejects YAML that does not parse", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": "source: [\n"}), nil)
			Expect(err).To(MatchError("ConfigMap garden-foo/flux-config: config.yaml: yaml: line 1: did not find expected node content"))
		})

		It("treats a document with only comments as empty", func() {
			Expect(resolve(configMap(map[string]string{"config.yaml": "# source:\n#   url: ssh://git@host/r\n"}), raw("null"))).To(Equal(controllersOnly()))
		})

		DescribeTable("rejects documents that are not an object",
			func(doc string) {
				_, err := resolve(configMap(map[string]string{"config.yaml": doc}), nil)
				Expect(err).To(MatchError("ConfigMap garden-foo/flux-config: config.yaml: must be a FluxConfig object"))
			},
			Entry("list", "- source: {}\n"),
			Entry("string", "source.url=ssh://git@host/r"),
			Entry("number", "42"),
		)

		It("rejects another kind", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": "apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1\nkind: FluxStatus\n"}), nil)
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: config.yaml: apiVersion and kind must be shoot-flux.extensions.gardener.cloud/v1alpha1 FluxConfig or be omitted, got shoot-flux.extensions.gardener.cloud/v1alpha1 FluxStatus`))
		})

		It("rejects an unknown API version", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": "apiVersion: shoot-flux.extensions.gardener.cloud/v9\nkind: FluxConfig\n"}), nil)
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: config.yaml: apiVersion and kind must be shoot-flux.extensions.gardener.cloud/v1alpha1 FluxConfig or be omitted, got shoot-flux.extensions.gardener.cloud/v9 FluxConfig`))
		})

		It("names the field of invalid values", func() {
			_, err := resolve(configMap(map[string]string{"config.yaml": `
flux:
  components: [helm-controller]
source:
  ref: {branch: main, tag: v1}
  path: ../x
  secretResourceName: ""
bootstrap:
  kluctl:
    interval: 0s
    context: ""
  flux:
    targetNamespace: Apps
additionalSecretResources:
- name: a
  targetName: ""
`}), nil)
			Expect(problems(err)).To(ConsistOf(
				`ConfigMap garden-foo/flux-config: config.yaml: flux.components: Required value: must include "source-controller"`,
				`ConfigMap garden-foo/flux-config: config.yaml: source.ref: Invalid value: "{branch=main, tag=v1}": exactly one of branch, tag, commit, semver and name must be set`,
				`ConfigMap garden-foo/flux-config: config.yaml: source.path: Invalid value: "../x": must not contain ".."`,
				`ConfigMap garden-foo/flux-config: config.yaml: source.secretResourceName: Required value: must name a Shoot spec.resources Secret if set`,
				`ConfigMap garden-foo/flux-config: config.yaml: bootstrap.kluctl.context: Required value: must not be empty if set`,
				`ConfigMap garden-foo/flux-config: config.yaml: bootstrap.kluctl.interval: Invalid value: "0s": must be greater than zero`,
				`ConfigMap garden-foo/flux-config: config.yaml: bootstrap.flux.targetNamespace: Invalid value: "Apps": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`ConfigMap garden-foo/flux-config: config.yaml: additionalSecretResources[0].targetName: Required value: must not be empty if set`,
			))
		})
	})

	Describe("errors", func() {
		It("reports the problems of all layers at once", func() {
			data := legacyData()
			data["repositoryUrl"] = "ftp://x"
			_, err := resolve(configMap(data), raw(`{"bootstrap":{"kluctl":{"args":[1]}}}`))
			Expect(err).To(MatchError(`ConfigMap garden-foo/flux-config: repositoryUrl: Invalid value: "ftp://x": scheme "ftp" is not supported, use ssh://, https:// or user@host:path; ` +
				`Extension providerConfig: bootstrap.kluctl.args: Invalid value: "[1]": must be a JSON object, not a JSON array`))
		})

		It("are configuration problems for gardener", func() {
			_, err := resolve(nil, raw(`{"bootstrap":{"mode":"helm"}}`))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig))
			wrapped := fmt.Errorf("failed resolving configuration: %w", err)
			Expect(errors.Is(wrapped, configerror.ErrInvalidConfig)).To(BeTrue())
			Expect(v1beta1helper.ExtractErrorCodes(wrapped)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
		})

		It("resolves a default minor to its newest patch, below every other layer", func() {
			minorDefaults := Defaults{FluxVersion: "v2.9", KluctlVersion: "2.28.x"}
			cfg, err := Resolve(minorDefaults, supported, sshkey.DefaultKnownHostsLimits(), nil, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Version).To(Equal("v2.9.5"))
			Expect(cfg.Kluctl.Version).To(Equal("v2.28.2"))

			cfg, err = Resolve(minorDefaults, supported, sshkey.DefaultKnownHostsLimits(), configMap(map[string]string{"fluxVersion": "2.8.x"}), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Version).To(Equal("v2.8.0"))

			cfg, err = Resolve(minorDefaults, supported, sshkey.DefaultKnownHostsLimits(), configMap(map[string]string{"fluxVersion": "2.8.x"}), raw(`{"flux":{"version":"v2.9.4"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Version).To(Equal("v2.9.4"))
		})

		It("names the operator's configuration for unsupported default versions", func() {
			_, err := Resolve(Defaults{FluxVersion: "2.0.0", KluctlVersion: "v2.28.2"}, supported, sshkey.DefaultKnownHostsLimits(), nil, nil)
			Expect(err).To(MatchError(`controller configuration: defaultFluxVersion: Unsupported value: "2.0.0": ` + supportedFluxMsg))
		})

		It("needs versions if the operator sets no defaults", func() {
			_, err := Resolve(Defaults{}, supported, sshkey.DefaultKnownHostsLimits(), nil, nil)
			Expect(problems(err)).To(ConsistOf(
				"effective configuration: flux.version: Required value: must not be empty",
				"effective configuration: kluctl.version: Required value: must not be empty",
			))
		})

		It("checks rules across layers on the effective configuration", func() {
			_, err := resolve(configMap(legacyData()), raw(`{"kluctl":{"enabled":false}}`))
			Expect(err).To(MatchError(`effective configuration: bootstrap.mode: Invalid value: "kluctl": needs kluctl.enabled to be true; use mode flux or none without kluctl`))

			_, err = resolve(configMap(map[string]string{"config.yaml": "source:\n  url: https://github.com/owner/repo\n  type: private\n"}), nil)
			Expect(err).To(MatchError("effective configuration: source.secretResourceName: Required value: a private https repository needs username/password credentials from a Shoot resource; generated deploy keys only work with ssh URLs"))

			_, err = resolve(configMap(legacyData()), raw(`{"flux":{"components":["source-controller"]},"bootstrap":{"mode":"flux"}}`))
			Expect(err).To(MatchError(`effective configuration: bootstrap.mode: Invalid value: "flux": needs flux.components to include "kustomize-controller"`))
		})
	})

	It("defaults mode flux with kustomize-controller and the secrets to the Flux namespace", func() {
		cfg, err := resolve(configMap(legacyData()), raw(`{"bootstrap":{"mode":"flux"},"additionalSecretResources":[{"name":"a"}]}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Flux.Components).To(Equal([]string{flux.ComponentSourceController, flux.ComponentKustomizeController}))
		Expect(cfg.AdditionalSecretResources).To(Equal([]flux.AdditionalSecretResource{{Name: "a", TargetName: "a", Namespace: "flux-system"}}))
	})

	It("does not modify its inputs", func() {
		cm := configMap(legacyData())
		cm.Data["config.yaml"] = "bootstrap:\n  kluctl:\n    args: {a: 1}\n"
		providerConfig := raw(`{"bootstrap":{"kluctl":{"args":{"b":2}}}}`)
		cmBefore, providerConfigBefore := cm.DeepCopy(), providerConfig.DeepCopy()

		first, err := resolve(cm, providerConfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(cm).To(Equal(cmBefore))
		Expect(providerConfig).To(Equal(providerConfigBefore))
		Expect(resolve(cm, providerConfig)).To(Equal(first))
	})
})
