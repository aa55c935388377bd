// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("Resolve", func() {
	Describe("Extension providerConfig", func() {
		It("overrides the ConfigMap field by field", func() {
			cm := configMap(legacyData())
			cm.Data["config.yaml"] = `
flux:
  namespace: gitops
source:
  path: clusters/a
bootstrap:
  kluctl:
    target: prod
    interval: 2m
`
			cfg, err := resolve(cm, raw(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"v2.8.0"},"source":{"path":"clusters/b"},"bootstrap":{"kluctl":{"prune":true}}}`))
			Expect(err).NotTo(HaveOccurred())

			want := legacyResult()
			want.Flux.Version = "v2.8.0"
			want.Flux.Namespace = "gitops"
			want.Source.Path = "clusters/b"
			want.Bootstrap.Flux.Path = "clusters/b"
			want.Bootstrap.Kluctl.Target = "prod"
			want.Bootstrap.Kluctl.Interval = metav1.Duration{Duration: 2 * time.Minute}
			want.Bootstrap.Kluctl.Prune = true
			Expect(cfg).To(Equal(want))
		})

		Describe("source.knownHosts belongs to the URL of its layer", func() {
			const projectHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
			projectConfigMap := func() *corev1.ConfigMap {
				cm := configMap(legacyData())
				cm.Data["config.yaml"] = "source:\n  knownHosts: " + projectHosts + "\n"
				return cm
			}

			It("applies the project's knownHosts to the project's repository", func() {
				cfg, err := resolve(projectConfigMap(), raw(`{"source":{"path":"clusters/dev"}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Source.KnownHosts).To(Equal(projectHosts))
			})

			It("drops the project's knownHosts for a shoot that sets its own URL", func() {
				cfg, err := resolve(projectConfigMap(), raw(`{"source":{"url":"ssh://git@git.example.com/team/fleet"}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Source.URL).To(Equal("ssh://git@git.example.com/team/fleet"))
				Expect(cfg.Source.KnownHosts).To(BeEmpty())
			})

			It("keeps the knownHosts a shoot sets with its URL", func() {
				const shootHosts = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
				cfg, err := resolve(projectConfigMap(), raw(`{"source":{"url":"ssh://git@git.example.com/team/fleet","knownHosts":"`+shootHosts+`"}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Source.KnownHosts).To(Equal(shootHosts))
			})

			It("bounds the knownHosts of every layer with the limits it is given", func() {
				limits := sshkey.KnownHostsLimits{MaxBytes: 1024, MaxLines: 10, MaxPatternLength: 20, MaxWildcards: 1}
				cm := configMap(legacyData())
				cm.Data["config.yaml"] = "source:\n  knownHosts: '*.*.example.com " + strings.SplitN(projectHosts, " ", 2)[1] + "'\n"
				_, err := Resolve(defaults, supported, limits, cm, raw(`{"source":{"knownHosts":"`+strings.Repeat("#", 1025)+`"}}`))
				Expect(problems(err)).To(ConsistOf(
					`ConfigMap garden-foo/flux-config: config.yaml: source.knownHosts: Invalid value: "*.*.example.com": line 1: host pattern has 2 wildcards (* and ?), may not have more than 1`,
					`Extension providerConfig: source.knownHosts: Too long: is 1025 bytes, may not be more than 1024 bytes`,
				))
				Expect(ValidateConfigMap(cm, supported, limits)).To(MatchError(ContainSubstring("host pattern has 2 wildcards")))
				Expect(ValidateConfigMap(cm, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
			})
		})

		Describe("the Flux path: a shoot's value beats the project's, whichever field sets it", func() {
			projectConfigMap := func(configYAML string) *corev1.ConfigMap {
				cm := configMap(legacyData())
				cm.Data["config.yaml"] = "bootstrap:\n  mode: flux\n" + configYAML
				return cm
			}
			flux := `{"flux":{"components":["source-controller","kustomize-controller"]}`

			It("applies the shoot's source.path over the project's bootstrap.flux.path", func() {
				cfg, err := resolve(projectConfigMap("  flux:\n    path: clusters/all\n"), raw(flux+`,"source":{"path":"clusters/dev"}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Source.Path).To(Equal("clusters/dev"))
				Expect(cfg.Bootstrap.Flux.Path).To(Equal("clusters/dev"))
			})

			It("applies the shoot's bootstrap.flux.path over the project's source.path", func() {
				cm := projectConfigMap("")
				cm.Data["config.yaml"] += "source:\n  path: clusters/all\n"
				cfg, err := resolve(cm, raw(flux+`,"bootstrap":{"flux":{"path":"clusters/dev/apps"}}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Bootstrap.Flux.Path).To(Equal("clusters/dev/apps"))
			})

			It("keeps the project's bootstrap.flux.path for a shoot that sets no path", func() {
				cfg, err := resolve(projectConfigMap("  flux:\n    path: clusters/all\n"), raw(flux+`}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Bootstrap.Flux.Path).To(Equal("clusters/all"))
			})

			It("prefers bootstrap.flux.path over source.path of the same layer", func() {
				cfg, err := resolve(projectConfigMap(""), raw(flux+`,"source":{"path":"clusters/dev"},"bootstrap":{"flux":{"path":"clusters/dev/apps"}}}`))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Source.Path).To(Equal("clusters/dev"))
				Expect(cfg.Bootstrap.Flux.Path).To(Equal("clusters/dev/apps"))
			})
		})

		It("supplies the source of a shoot in a project without ConfigMap", func() {
			Expect(resolve(nil, raw(`{"source":{"url":"ssh://git@github.com/owner/repo"}}`))).To(Equal(legacyResult()))
		})

		It("overrides the project's choice about the shoot's identity", func() {
			cm := configMap(legacyData())
			cm.Data["config.yaml"] = "bootstrap:\n  shootInfo: false\n"
			cfg, err := resolve(cm, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Bootstrap.ShootInfo).To(BeFalse())

			cfg, err = resolve(cm, raw(`{"bootstrap":{"shootInfo":true}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Bootstrap.ShootInfo).To(BeTrue())

			_, err = resolve(nil, raw(`{"bootstrap":{"shootInfo":"no"}}`))
			Expect(err).To(MatchError(And(HavePrefix("Extension providerConfig: spec.providerConfig: "), ContainSubstring("bootstrap.shootInfo of type bool"))))
		})

		It("replaces the whole ref", func() {
			cfg, err := resolve(configMap(legacyData()), raw(`{"source":{"ref":{"tag":"v1"}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source.Ref).To(Equal(flux.GitRef{Tag: "v1"}))
		})

		It("keeps the ref of lower layers if it sets none", func() {
			cfg, err := resolve(configMap(legacyData()), raw(`{"source":{"ref":{}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source.Ref).To(Equal(flux.GitRef{Branch: "main"}))
		})

		It("replaces lists", func() {
			cm := configMap(map[string]string{"config.yaml": `
flux:
  components: [source-controller, kustomize-controller, helm-controller]
additionalSecretResources:
- name: a
- name: b
`})
			cfg, err := resolve(cm, raw(`{"flux":{"components":["source-controller","notification-controller"]},"additionalSecretResources":[{"name":"c"}]}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Components).To(Equal([]string{"source-controller", "notification-controller"}))
			Expect(cfg.AdditionalSecretResources).To(Equal([]flux.AdditionalSecretResource{{Name: "c", TargetName: "c", Namespace: "kluctl-system"}}))
		})

		It("merges kluctl args as a JSON merge patch", func() {
			cm := configMap(legacyData())
			cm.Data["config.yaml"] = `
bootstrap:
  kluctl:
    args:
      environment: prod
      replicas: 3
      nested: {a: 1, b: 2}
      list: [1, 2]
`
			cfg, err := resolve(cm, raw(`{"bootstrap":{"kluctl":{"args":{"replicas":5,"environment":null,"nested":{"b":null,"c":3},"list":[3],"big":12345678901234567890}}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Bootstrap.Kluctl.Args).NotTo(BeNil())
			Expect(string(cfg.Bootstrap.Kluctl.Args.Raw)).To(Equal(`{"big":12345678901234567890,"list":[3],"nested":{"a":1,"c":3},"replicas":5}`))
		})

		It("drops null args of a single layer", func() {
			cfg, err := resolve(configMap(legacyData()), raw(`{"bootstrap":{"kluctl":{"args":{"a":null,"b":{"c":null}}}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(cfg.Bootstrap.Kluctl.Args.Raw)).To(Equal(`{"b":{}}`))
		})

		It("normalises versions", func() {
			cfg, err := resolve(configMap(legacyData()), raw(`{"flux":{"version":"2.8.0"},"kluctl":{"version":"2.27.0"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Flux.Version).To(Equal("v2.8.0"))
			Expect(cfg.Kluctl.Version).To(Equal("v2.27.0"))
		})

		DescribeTable("resolves version selectors to releases",
			func(flux, kluctl, wantFlux, wantKluctl string) {
				cfg, err := resolve(nil, raw(fmt.Sprintf(`{"flux":{"version":%q},"kluctl":{"version":%q}}`, flux, kluctl)))
				Expect(err).NotTo(HaveOccurred())
				Expect(cfg.Flux.Version).To(Equal(wantFlux))
				Expect(cfg.Kluctl.Version).To(Equal(wantKluctl))
			},
			Entry("exact releases stay, also older patches of a minor", "v2.9.4", "v2.27.0", "v2.9.4", "v2.27.0"),
			Entry("minors select their newest patch", "v2.9", "v2.28", "v2.9.5", "v2.28.2"),
			Entry("minors with .x and without v", "2.9.x", "v2.27.x", "v2.9.5", "v2.27.0"),
			Entry("minor with one release", "2.8", "2.28", "v2.8.0", "v2.28.2"),
		)

		It("rejects a minor without embedded release and a major, as written, listing releases and minors", func() {
			_, err := resolve(nil, raw(`{"flux":{"version":"2.7.x"},"kluctl":{"version":"v2"}}`))
			Expect(problems(err)).To(ConsistOf(
				`Extension providerConfig: flux.version: Unsupported value: "2.7.x": `+supportedFluxMsg,
				`Extension providerConfig: kluctl.version: Unsupported value: "v2": supported values: "v2.27", "v2.27.0", "v2.28", "v2.28.2"`,
			))
		})

		It("rejects unknown fields", func() {
			_, err := resolve(nil, raw(`{"flux":{"versions":["v2.9.5"]}}`))
			Expect(err).To(MatchError(`Extension providerConfig: flux.versions: Forbidden: unknown field`))
		})

		It("rejects JSON that is not an object", func() {
			_, err := resolve(nil, raw(`["source"]`))
			Expect(err).To(MatchError("Extension providerConfig: spec.providerConfig: must be a FluxConfig object"))
		})

		It("reads the providerConfig of stackit's extension (flux.extensions.gardener.cloud), naming its fields", func() {
			_, err := resolve(nil, raw(`{"apiVersion":"flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"v2.0.0"},`+
				`"source":{"template":{"spec":{"url":"https://github.com/example/fleet"}}},"kustomization":{"template":{"spec":{"path":"clusters/dev"}}}}`))
			Expect(err).To(MatchError(`Extension providerConfig: source.template.spec.ref: Required value: stackit's extension needs one of branch, tag, semver, name and commit, and so does this one`))
		})

		It("rejects another kind", func() {
			_, err := resolve(nil, raw(`{"apiVersion":"v1","kind":"ConfigMap"}`))
			Expect(err).To(MatchError(`Extension providerConfig: spec.providerConfig: apiVersion and kind must be shoot-flux.extensions.gardener.cloud/v1alpha1 FluxConfig or be omitted, got v1 ConfigMap`))
		})

		It("names the field of invalid values", func() {
			_, err := resolve(nil, raw(`{"flux":{"management":"once"},"kluctl":{"version":"v2.20.0"},"bootstrap":{"mode":"helm","kluctl":{"args":"env=prod"}},"source":{"url":"http://github.com/o/r"}}`))
			Expect(problems(err)).To(ConsistOf(
				`Extension providerConfig: flux.management: Unsupported value: "once": supported values: "continuous", "handover"`,
				`Extension providerConfig: kluctl.version: Unsupported value: "v2.20.0": supported values: "v2.27", "v2.27.0", "v2.28", "v2.28.2"`,
				`Extension providerConfig: bootstrap.mode: Unsupported value: "helm": supported values: "kluctl", "flux", "none"`,
				`Extension providerConfig: bootstrap.kluctl.args: Invalid value: "\"env=prod\"": must be a JSON object, not a JSON string`,
				`Extension providerConfig: source.url: Invalid value: "http://github.com/o/r": scheme "http" is not supported, use ssh://, https:// or user@host:path`,
			))
		})
	})

	Describe("source.oci", func() {
		const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

		It("defaults tag latest and the path, and uses the path for the Kustomization", func() {
			cfg, err := resolve(nil, raw(`{"source":{"oci":{"url":"oci://ghcr.io/org/fleet"}},"bootstrap":{"mode":"flux"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source).To(Equal(&flux.Source{OCI: &flux.OCISource{URL: "oci://ghcr.io/org/fleet", Ref: flux.OCIRef{Tag: "latest"}, Path: "."}}))

			cfg, err = resolve(nil, raw(`{"source":{"oci":{"url":"oci://ghcr.io/org/fleet","path":"clusters/prod"}},"bootstrap":{"mode":"flux"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Bootstrap.Flux.Path).To(Equal("clusters/prod"))
			Expect(cfg.Flux.Components).To(ConsistOf(flux.ComponentSourceController, flux.ComponentKustomizeController))
		})

		It("replaces the git source of the project and keeps its own fields from the project ConfigMap", func() {
			cm := configMap(map[string]string{"config.yaml": `
source:
  oci:
    url: oci://registry.example.com:5000/fleet
    secretResourceName: registry
`})
			cfg, err := resolve(cm, raw(`{"source":{"oci":{"ref":{"digest":"`+digest+`"},"path":"prod"}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source).To(Equal(&flux.Source{OCI: &flux.OCISource{
				URL: "oci://registry.example.com:5000/fleet", Ref: flux.OCIRef{Digest: digest}, Path: "prod", SecretResourceName: "registry",
			}}))

			cfg, err = resolve(configMap(legacyData()), raw(`{"source":{"oci":{"url":"oci://ghcr.io/org/fleet"}}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source).To(Equal(&flux.Source{OCI: &flux.OCISource{URL: "oci://ghcr.io/org/fleet", Ref: flux.OCIRef{Tag: "latest"}, Path: "."}}))
		})

		It("is replaced by a git URL of a later layer", func() {
			cm := configMap(map[string]string{"config.yaml": "source:\n  oci:\n    url: oci://ghcr.io/org/fleet\n"})
			cfg, err := resolve(cm, raw(`{"source":{"url":"https://git.example.com/fleet.git"}}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Source.OCI).To(BeNil())
			Expect(cfg.Source.URL).To(Equal("https://git.example.com/fleet.git"))
		})

		It("names git fields set next to it in one layer", func() {
			_, err := resolve(nil, raw(`{"source":{"url":"https://git.example.com/fleet.git","knownHosts":"","oci":{"url":"oci://ghcr.io/org/fleet"}}}`))
			Expect(problems(err)).To(ConsistOf(
				"Extension providerConfig: source.url: Forbidden: is a git source field and must not be set together with source.oci",
				"Extension providerConfig: source.knownHosts: Forbidden: is a git source field and must not be set together with source.oci",
			))
		})

		It("names git fields a later layer sets on top of it", func() {
			cm := configMap(map[string]string{"config.yaml": "source:\n  oci:\n    url: oci://ghcr.io/org/fleet\n"})
			_, err := resolve(cm, raw(`{"source":{"ref":{"branch":"main"}}}`))
			Expect(err).To(MatchError(ContainSubstring("source.ref: Forbidden: is a git source field and must not be set together with source.oci")))
		})

		It("needs a URL in some layer", func() {
			_, err := resolve(nil, raw(`{"source":{"oci":{"ref":{"tag":"v1"}}}}`))
			Expect(err).To(MatchError(ContainSubstring("source.oci.url: Required value: must not be empty")))
		})

		It("names the field of invalid values", func() {
			_, err := resolve(nil, raw(`{"source":{"oci":{"url":"oci://ghcr.io/org/fleet:v1","ref":{"tag":"v1","digest":"`+digest+`"},"path":"/abs","secretResourceName":""}}}`))
			Expect(problems(err)).To(ConsistOf(
				`Extension providerConfig: source.oci.url: Invalid value: "oci://ghcr.io/org/fleet:v1": must not contain a tag; set ref.tag`,
				`Extension providerConfig: source.oci.ref: Invalid value: "{tag=v1, digest=`+digest+`}": exactly one of tag, digest and semver must be set`,
				`Extension providerConfig: source.oci.path: Invalid value: "/abs": must be relative to the repository root`,
				`Extension providerConfig: source.oci.secretResourceName: Required value: must name a Shoot spec.resources Secret if set`,
			))
		})
	})

})
