// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/conversion/stackit"
)

// The documents follow stackit's example/shoot.yaml and API types of the releases named.
const (
	// v0.4: a typed GitRepository template without kind, credentials from a Shoot resource.
	v04Config = `
apiVersion: flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  version: v2.7.5
  registry: ghcr.io/fluxcd
  namespace: flux-system
source:
  template:
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    spec:
      ref:
        branch: main
      secretRef:
        name: flux-system
      url: https://github.com/fluxcd/flux2-kustomize-helm-example
  secretResourceName: flux-ssh-secret
kustomization:
  template:
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    spec:
      path: clusters/production
`
	// v0.18: additionalSecretResources, shoot-info substitution, semver tags.
	v018Config = `
apiVersion: flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  version: v2.9
source:
  template:
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    metadata:
      name: flux-system
      namespace: flux-system
    spec:
      interval: 5m
      ref:
        semver: ">=1.0.0 <2.0.0"
      url: ssh://git@github.com/acme/fleet
  secretResourceName: fleet-credentials
kustomization:
  template:
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata:
      name: flux-system
    spec:
      path: ./clusters/prod
      prune: true
      interval: 10m
      targetNamespace: apps
      sourceRef:
        kind: GitRepository
        name: flux-system
      postBuild:
        substituteFrom:
        - kind: ConfigMap
          name: shoot-info
additionalSecretResources:
- name: shoot-vault-secret
  targetName: vault
`
	// v0.27: an OCIRepository template, components and componentsExtra.
	v027Config = `
apiVersion: flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  version: v2.9.5
  components: [source-controller, kustomize-controller]
  componentsExtra: [helm-controller]
source:
  template:
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: OCIRepository
    spec:
      url: oci://ghcr.io/acme/fleet
      ref:
        semver: "1.x"
  secretResourceName: registry-credentials
kustomization:
  template:
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    spec:
      path: ./
      sourceRef:
        kind: OCIRepository
`
)

// embedded are the Flux releases of the specs' extension.
var embedded = []string{"v2.7.5", "v2.9.5"}

func decode(doc string) *stackit.FluxConfig {
	GinkgoHelper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	isStackit, _ := stackit.Detect(data)
	Expect(isStackit).To(BeTrue())
	cfg, errs := stackit.Decode(data, nil)
	Expect(errs).To(BeEmpty())
	return cfg
}

func convertErrors(doc string) []string {
	GinkgoHelper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	Expect(err).NotTo(HaveOccurred())
	cfg, errs := stackit.Decode(data, field.NewPath("spec", "providerConfig"))
	if len(errs) == 0 {
		_, _, errs = stackit.Convert(cfg, embedded, field.NewPath("spec", "providerConfig"))
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

var _ = Describe("Convert", func() {
	minute := &metav1.Duration{Duration: time.Minute}

	It("converts the v0.4 shape with stackit's defaults", func() {
		out, warnings, errs := stackit.Convert(decode(v04Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux).To(Equal(&v1alpha1.Flux{
			Version:    ptr.To("v2.7.5"),
			Namespace:  ptr.To("flux-system"),
			Management: ptr.To(v1alpha1.ManagementHandover),
			Components: []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"},
		}))
		Expect(out.Kluctl).To(Equal(&v1alpha1.Kluctl{Enabled: ptr.To(false)}))
		Expect(out.Source).To(Equal(&v1alpha1.Source{
			URL:                ptr.To("https://github.com/fluxcd/flux2-kustomize-helm-example"),
			Ref:                &v1alpha1.GitRef{Branch: ptr.To("main")},
			Type:               ptr.To(v1alpha1.RepositoryTypePrivate),
			SecretResourceName: ptr.To("flux-ssh-secret"),
		}))
		Expect(out.Bootstrap).To(Equal(&v1alpha1.Bootstrap{
			Mode:      ptr.To(v1alpha1.BootstrapModeFlux),
			Name:      ptr.To("flux-system"),
			ShootInfo: ptr.To(true),
			Flux:      &v1alpha1.FluxBootstrap{Path: ptr.To("clusters/production"), Prune: ptr.To(false), Interval: minute},
		}))
		Expect(warnings).To(BeEmpty(), "the objects keep stackit's names and the ConfigMap shoot-info its keys")
	})

	It("converts the v0.18 shape", func() {
		out, warnings, errs := stackit.Convert(decode(v018Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux.Version).To(Equal(ptr.To("v2.9")))
		Expect(out.Source.Ref).To(Equal(&v1alpha1.GitRef{SemVer: ptr.To(">=1.0.0 <2.0.0")}))
		Expect(out.Bootstrap.Flux).To(Equal(&v1alpha1.FluxBootstrap{
			Path: ptr.To("./clusters/prod"), Prune: ptr.To(true), Interval: &metav1.Duration{Duration: 10 * time.Minute}, TargetNamespace: ptr.To("apps"),
		}))
		Expect(out.AdditionalSecretResources).To(Equal([]v1alpha1.AdditionalSecretResource{{Name: "shoot-vault-secret", TargetName: ptr.To("vault")}}))
		Expect(warnings).To(ConsistOf(
			"source.template.spec.interval: the source and the Kustomization share one interval here, the Kustomization's 10m0s",
		))
	})

	DescribeTable("drops a pinned Flux release it does not embed, naming flux.version and what to write instead",
		func(pin string) {
			out, warnings, errs := stackit.Convert(decode(`{flux: {version: `+pin+`}, syncMode: Once}`), embedded, nil)
			Expect(errs).To(BeEmpty())
			Expect(out.Flux.Version).To(BeNil(), "the operator's default, fitted to the shoot's Kubernetes version, applies")
			Expect(out.Flux.Management).To(Equal(ptr.To(v1alpha1.ManagementHandover)))
			Expect(warnings).To(ConsistOf("flux.version: " + pin + " is not a Flux release this extension embeds (v2.7, v2.9): the shoot gets the release " +
				"the operator's default and the shoot's Kubernetes version select (status.providerStatus.fluxVersion), installed once over the Flux stackit's " +
				"extension installed and then left to the repository; remove flux.version, or write one of v2.7, v2.9"))
		},
		Entry("stackit's example/shoot.yaml", "v2.6.1"),
		Entry("the default of stackit's v0.12 to v0.18", "v2.4.0"),
		Entry("a patch of an embedded minor", "v2.9.2"),
		Entry("no version", "latest"),
	)

	It("keeps embedded releases and minors as they are", func() {
		for _, pin := range []string{"v2.7.5", "v2.9", "2.9.x"} {
			out, warnings, errs := stackit.Convert(decode(`{flux: {version: "`+pin+`"}, syncMode: Once}`), embedded, nil)
			Expect(errs).To(BeEmpty())
			Expect(out.Flux.Version).To(Equal(ptr.To(pin)))
			Expect(warnings).To(BeEmpty())
		}
	})

	It("drops a pin newer than every embedded release, saying the shoot keeps its Flux", func() {
		out, warnings, errs := stackit.Convert(decode(`{flux: {version: v2.10.0}, syncMode: Once}`), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux.Version).To(BeNil())
		Expect(warnings).To(ConsistOf("flux.version: v2.10.0 is newer than every Flux release this extension embeds (v2.7, v2.9): the extension installs " +
			"no older Flux over the one the shoot runs and leaves it to the repository (flux.management handover); remove flux.version"))
	})

	It("refuses a source and a Kustomization of different names, naming both", func() {
		_, _, errs := stackit.Convert(decode(`
source:
  template:
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: GitRepository
    metadata:
      name: fleet
    spec:
      url: https://git.example.com/fleet
      ref:
        branch: main
kustomization:
  template:
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata:
      name: apps
    spec:
      path: ./apps
`), embedded, nil)
		Expect(errs).To(ConsistOf(HaveField("Field", "kustomization.template.metadata.name")))
		Expect(errs[0].Error()).To(ContainSubstring("name both fleet or both apps"))
	})

	It("converts the v0.27 shape with an OCIRepository and extra components", func() {
		out, _, errs := stackit.Convert(decode(v027Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux.Components).To(Equal([]string{"source-controller", "kustomize-controller", "helm-controller"}))
		Expect(out.Source).To(Equal(&v1alpha1.Source{OCI: &v1alpha1.OCISource{
			URL: ptr.To("oci://ghcr.io/acme/fleet"), Ref: &v1alpha1.OCIRef{SemVer: ptr.To("1.x")}, SecretResourceName: ptr.To("registry-credentials"),
		}}))
		Expect(out.Bootstrap.Flux.Path).To(Equal(ptr.To("./")))
	})

	It("accepts the image automation controllers in componentsExtra and says that what stackit installed of them stays as it is", func() {
		out, warnings, errs := stackit.Convert(decode(`
flux:
  components: [source-controller, kustomize-controller, image-reflector-controller]
  componentsExtra: [image-reflector-controller, image-automation-controller]
`), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux.Components).To(Equal([]string{"source-controller", "kustomize-controller"}))
		Expect(warnings).To(ConsistOf("flux.componentsExtra: this extension does not deliver image-reflector-controller, image-automation-controller: " +
			"what stackit's extension installed of them stays in the shoot as it is, neither updated nor removed; to keep them up to date, " +
			"add them to the repository (flux install --components-extra=image-reflector-controller,image-automation-controller --export)"))

		By("with stackit's default components")
		out, _, errs = stackit.Convert(decode(`{flux: {componentsExtra: [image-reflector-controller, image-automation-controller]}}`), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Flux.Components).To(Equal([]string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}))
	})

	It("converts the later gitRepository shape and additionalSecretResourceNames", func() {
		out, _, errs := stackit.Convert(decode(`
source:
  gitRepository:
    template:
      spec:
        url: https://github.com/acme/fleet
        ref: {name: refs/heads/main}
kustomization:
  template:
    spec: {path: ./}
syncMode: Once
additionalSecretResourceNames: [vault]
`), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.Ref).To(Equal(&v1alpha1.GitRef{Name: ptr.To("refs/heads/main")}))
		Expect(out.Source.Type).To(Equal(ptr.To(v1alpha1.RepositoryTypePublic)))
		Expect(out.AdditionalSecretResources).To(Equal([]v1alpha1.AdditionalSecretResource{{Name: "vault"}}))
	})

	It("carries the Kustomization template's wait, timeout, retryInterval and serviceAccountName", func() {
		cfg := decode(`
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}
kustomization: {template: {spec: {path: ./, wait: true, timeout: 3m, retryInterval: 30s, serviceAccountName: flux-applier,
  decryption: {provider: sops, secretRef: {name: sops-age}}}}}
additionalSecretResources: [{name: sops, targetName: sops-age}]
`)
		out, _, errs := stackit.Convert(cfg, embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Bootstrap.Flux.Wait).To(Equal(ptr.To(true)))
		Expect(out.Bootstrap.Flux.Timeout).To(Equal(&metav1.Duration{Duration: 3 * time.Minute}))
		Expect(out.Bootstrap.Flux.RetryInterval).To(Equal(&metav1.Duration{Duration: 30 * time.Second}))
		Expect(out.Bootstrap.Flux.ServiceAccountName).To(Equal(ptr.To("flux-applier")))
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.serviceAccountName")).To(Equal("kustomization.template.spec.serviceAccountName"))
		Expect(out.Bootstrap.Flux.Decryption).To(Equal(&v1alpha1.Decryption{SecretResourceName: "sops"}), "the key of the entry that synced the Secret")
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.decryption.secretResourceName")).To(Equal("kustomization.template.spec.decryption.secretRef.name"))

		By("leaving what the template does not set unset, as there")
		out, _, errs = stackit.Convert(decode(v027Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Bootstrap.Flux.Wait).To(BeNil())
		Expect(out.Bootstrap.Flux.Timeout).To(BeNil())
		Expect(out.Bootstrap.Flux.ServiceAccountName).To(BeNil())
	})

	It("carries the source template's ignore rules and the Kustomization template's substitution and patches", func() {
		cfg := decode(`
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}, ignore: "/*\n!/deploy\n"}}}
kustomization: {template: {spec: {path: ./,
  postBuild: {substitute: {CLUSTER: prod}, substituteFrom: [{kind: ConfigMap, name: shoot-info}, {kind: Secret, name: vars, optional: true}]},
  patches: [{patch: "- {op: remove, path: /spec/replicas}", target: {kind: Deployment, labelSelector: "tier=web"}}, {patch: "kind: ConfigMap"}]}}}
`)
		out, warnings, errs := stackit.Convert(cfg, embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.Ignore).To(Equal(ptr.To("/*\n!/deploy\n")))
		Expect(out.Bootstrap.ShootInfo).To(Equal(ptr.To(true)))
		Expect(out.Bootstrap.Flux.PostBuild).To(Equal(&v1alpha1.PostBuild{
			Substitute:     map[string]string{"CLUSTER": "prod"},
			SubstituteFrom: []v1alpha1.SubstituteReference{{Kind: "Secret", Name: "vars", Optional: true}},
		}), "the ConfigMap shoot-info is bootstrap.shootInfo")
		Expect(out.Bootstrap.Flux.Patches).To(Equal([]v1alpha1.Patch{
			{Patch: "- {op: remove, path: /spec/replicas}", Target: &v1alpha1.PatchSelector{Kind: "Deployment", LabelSelector: "tier=web"}},
			{Patch: "kind: ConfigMap"},
		}))
		Expect(warnings).To(ContainElement("kustomization.template.spec.postBuild.substituteFrom[0]: the ConfigMap shoot-info is substituted after the other entries here, so its keys win over theirs"))
		Expect(stackit.FieldPath(cfg, "source.ignore")).To(Equal("source.template.spec.ignore"))
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.patches[1].patch")).To(Equal("kustomization.template.spec.patches[1].patch"))
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.postBuild.substitute[CLUSTER]")).To(Equal("kustomization.template.spec.postBuild.substitute[CLUSTER]"))
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.postBuild.substituteFrom")).To(Equal("kustomization.template.spec.postBuild.substituteFrom"))

		By("carrying the OCIRepository's ignore rules to source.oci.ignore")
		cfg = decode(`
source: {ociRepository: {template: {spec: {url: "oci://ghcr.io/acme/fleet", ref: {tag: v1}, ignore: ""}}}}
kustomization: {template: {spec: {path: ./, postBuild: {substituteFrom: [{kind: ConfigMap, name: shoot-info}]}}}}
`)
		out, warnings, errs = stackit.Convert(cfg, embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.OCI.Ignore).To(Equal(ptr.To("")))
		Expect(out.Bootstrap.Flux.PostBuild).To(BeNil(), "nothing beside shoot-info")
		Expect(warnings).To(BeEmpty())
		Expect(stackit.FieldPath(cfg, "source.oci.ignore")).To(Equal("source.ociRepository.template.spec.ignore"))

		By("leaving what the template does not set unset, as there")
		out, _, errs = stackit.Convert(decode(v027Config), embedded, nil)
		Expect(errs).To(BeEmpty())
		Expect(out.Source.OCI.Ignore).To(BeNil())
		Expect(out.Bootstrap.Flux.PostBuild).To(BeNil())
		Expect(out.Bootstrap.Flux.Patches).To(BeNil())
	})

	It("maps the fields of the converted configuration back to stackit's", func() {
		cfg := decode(v027Config)
		Expect(stackit.FieldPath(cfg, "source.oci.url")).To(Equal("source.template.spec.url"))
		Expect(stackit.FieldPath(cfg, "bootstrap.flux.path")).To(Equal("kustomization.template.spec.path"))
		Expect(stackit.FieldPath(cfg, "flux.version")).To(Equal("flux.version"))
	})

	DescribeTable("names the field it cannot honour and what to write instead",
		func(doc string, messages ...string) {
			Expect(convertErrors(doc)).To(ConsistOf(messages))
		},
		Entry("a field of this extension mixed in", `
source: {template: {spec: {url: "https://h/r", ref: {branch: main}}}}
kustomization: {template: {spec: {path: ./}}}
bootstrap: {mode: kluctl}
`, `spec.providerConfig.bootstrap: Forbidden: is not a field of stackit's FluxConfig, whose other fields this document has; this extension's own fields cannot be mixed in`),
		Entry("a template field the bootstrap objects do not have", `
source: {template: {spec: {url: "https://h/r", ref: {branch: main}, ignore: "/*", recurseSubmodules: true}}}
kustomization: {template: {spec: {path: ./, dependsOn: [{name: infra}], force: true, postBuild: {substituteStrategy: Always}}}}
`,
			`spec.providerConfig.kustomization.template.spec.postBuild.substituteStrategy: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`,
			`spec.providerConfig.source.template.spec.recurseSubmodules: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`,
			`spec.providerConfig.kustomization.template.spec.dependsOn: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`,
			`spec.providerConfig.kustomization.template.spec.force: Forbidden: is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)`),
		Entry("another registry", `flux: {registry: registry.example.com/fluxcd}`,
			`spec.providerConfig.flux.registry: Invalid value: "registry.example.com/fluxcd": the operator's image vector decides where the controller images come from; remove flux.registry`),
		Entry("a component Flux does not have", `flux: {componentsExtra: [image-reflector-controller, tf-controller]}`,
			`spec.providerConfig.flux.componentsExtra[1]: Unsupported value: "tf-controller": supported values: "source-controller", "kustomize-controller", "helm-controller", "notification-controller", "image-reflector-controller", "image-automation-controller", "source-watcher"`),
		Entry("a Secret the user created in the shoot", `
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}, secretRef: {name: my-creds}}}}
kustomization: {template: {spec: {path: ./}}}
`, `spec.providerConfig.source.template.spec.secretRef.name: Invalid value: "my-creds": names a Secret in the shoot that this extension does not deliver; name the Shoot spec.resources entry with the credentials in source.secretResourceName instead`),
		Entry("objects outside Flux's namespace", `
source: {template: {metadata: {namespace: gitops}, spec: {url: "https://h/r", ref: {tag: v1}}}}
kustomization: {template: {spec: {path: ./, sourceRef: {kind: OCIRepository}}}}
`,
			`spec.providerConfig.source.template.metadata.namespace: Invalid value: "gitops": the bootstrap objects live in Flux's namespace flux-system; set flux.namespace to gitops or remove metadata.namespace`,
			`spec.providerConfig.kustomization.template.spec.sourceRef.kind: Invalid value: "OCIRepository": must be the source template's kind GitRepository`),
		Entry("a source without a kustomization", `source: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}`,
			`spec.providerConfig.kustomization: Required value: stackit's source needs a kustomization, as there`),
		Entry("a source object of another kind", `
source: {template: {kind: Bucket, spec: {}}}
kustomization: {template: {spec: {path: ./}}}
`, `spec.providerConfig.source.template.kind: Unsupported value: "Bucket": supported values: "GitRepository", "OCIRepository"`),
		Entry("substitutions from what Flux cannot read, by stackit's index", `
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}
kustomization: {template: {spec: {path: ./, postBuild: {substituteFrom: [{kind: ConfigMap, name: shoot-info}, {kind: Bucket, name: vars}, {kind: Secret, name: Vars}]}}}}
`,
			`spec.providerConfig.kustomization.template.spec.postBuild.substituteFrom[1].kind: Unsupported value: "Bucket": supported values: "ConfigMap", "Secret"`,
			`spec.providerConfig.kustomization.template.spec.postBuild.substituteFrom[2].name: Invalid value: "Vars": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		Entry("a patch's unknown field", `
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}
kustomization: {template: {spec: {path: ./, patches: [{patch: "kind: ConfigMap", options: {allowKindChange: true}}]}}}
`,
			`spec.providerConfig.kustomization.template.spec.patches[0].options: Forbidden: unknown field`),
		Entry("a decryption key nobody delivers", `
source: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}
kustomization: {template: {spec: {path: ./, decryption: {provider: vault, secretRef: {name: sops-age}}}}}
additionalSecretResources: [{name: sops-age, targetName: other}]
`,
			`spec.providerConfig.kustomization.template.spec.decryption.provider: Unsupported value: "vault": supported values: "sops"`,
			`spec.providerConfig.kustomization.template.spec.decryption.secretRef.name: Invalid value: "sops-age": names a Secret in the shoot that this extension does not deliver; add the Shoot spec.resources entry with the SOPS key to additionalSecretResources with targetName sops-age`),
		Entry("syncMode ManifestsOnly", `syncMode: ManifestsOnly`,
			`spec.providerConfig.syncMode: Unsupported value: "ManifestsOnly": supported values: "Once"`),
		Entry("a path missing", `
source: {gitRepository: {template: {spec: {url: "https://h/r", ref: {tag: v1}}}}}
kustomization: {template: {spec: {prune: true}}}
`, `spec.providerConfig.kustomization.template.spec.path: Required value: stackit's extension needs it, and so does this one`),
	)
})
