// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

const (
	knownHostEd25519 = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	validCommit      = "0123456789abcdef0123456789abcdef01234567"
)

// messages makes a failing expectation show every error in full.
func messages(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, err := range errs {
		out = append(out, err.Error())
	}
	return out
}

var _ = Describe("ValidateFluxConfig", func() {
	var (
		cfg       *flux.FluxConfig
		supported SupportedVersions
	)

	BeforeEach(func() {
		supported = SupportedVersions{Flux: []string{"v2.9.5", "v2.8.0"}, Kluctl: []string{"v2.28.2"}}
		cfg = &flux.FluxConfig{
			Flux:   flux.Flux{Version: "v2.9.5", Components: []string{flux.ComponentSourceController}, Namespace: "flux-system", Management: flux.ManagementContinuous},
			Kluctl: flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"},
			Source: &flux.Source{
				URL:  "ssh://git@github.com/o/r",
				Ref:  flux.GitRef{Branch: "main"},
				Path: ".",
				Type: flux.RepositoryTypePrivate,
			},
			Bootstrap: flux.Bootstrap{
				Mode:   flux.BootstrapModeKluctl,
				Kluctl: flux.KluctlBootstrap{Context: "default", Interval: metav1.Duration{Duration: 5 * time.Minute}},
				Flux:   flux.FluxBootstrap{Path: ".", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}},
			},
		}
	})

	validate := func() []string {
		return messages(ValidateFluxConfig(cfg, supported, nil))
	}

	// fluxModeFor bootstraps with Flux for the refs only the GitRepository knows.
	fluxModeFor := func(ref flux.GitRef) {
		if ref.SemVer != "" || ref.Name != "" {
			cfg.Bootstrap.Mode = flux.BootstrapModeFlux
			cfg.Flux.Components = append(cfg.Flux.Components, flux.ComponentKustomizeController)
		}
	}

	It("refuses the refs only Flux knows with mode kluctl", func() {
		cfg.Source.Ref = flux.GitRef{SemVer: "1.x"}
		Expect(validate()).To(ConsistOf(`bootstrap.mode: Invalid value: "kluctl": source.ref.semver and source.ref.name need mode flux; kluctl checks out a branch, tag or commit`))
	})

	It("accepts a valid configuration", func() {
		Expect(validate()).To(BeEmpty())
	})

	It("accepts a configuration without source in mode none", func() {
		cfg.Source = nil
		cfg.Bootstrap.Mode = flux.BootstrapModeNone
		Expect(validate()).To(BeEmpty())
	})

	It("prefixes the field paths", func() {
		cfg.Flux.Namespace = ""
		Expect(messages(ValidateFluxConfig(cfg, supported, field.NewPath("spec")))).To(ConsistOf(
			"spec.flux.namespace: Required value: must not be empty",
		))
	})

	Describe("versions", func() {
		It("rejects an unsupported Flux version and lists the supported ones", func() {
			cfg.Flux.Version = "v0.29.5"
			Expect(validate()).To(ConsistOf(`flux.version: Unsupported value: "v0.29.5": supported values: "v2.8", "v2.8.0", "v2.9", "v2.9.5"`))
		})

		DescribeTable("accepts releases and minors with embedded releases",
			func(version string) {
				cfg.Flux.Version = version
				Expect(validate()).To(BeEmpty())
			},
			Entry("release", "v2.8.0"),
			Entry("release without v", "2.9.5"),
			Entry("minor", "v2.9"),
			Entry("minor with x without v", "2.8.x"),
		)

		DescribeTable("rejects selectors without embedded release",
			func(version string) {
				cfg.Flux.Version = version
				Expect(validate()).To(ConsistOf(`flux.version: Unsupported value: "` + version + `": supported values: "v2.8", "v2.8.0", "v2.9", "v2.9.5"`))
			},
			Entry("other patch", "v2.9.4"),
			Entry("other minor", "v2.7"),
			Entry("major", "v2"),
			Entry("no version", "latest"),
		)

		It("rejects an empty Flux version", func() {
			cfg.Flux.Version = ""
			Expect(validate()).To(ConsistOf("flux.version: Required value: must not be empty"))
		})

		It("rejects an unsupported kluctl version", func() {
			cfg.Kluctl.Version = "v2.20.0"
			Expect(validate()).To(ConsistOf(`kluctl.version: Unsupported value: "v2.20.0": supported values: "v2.28", "v2.28.2"`))
		})

		It("rejects every version if no versions are supported", func() {
			supported = SupportedVersions{}
			Expect(validate()).To(ConsistOf(
				`flux.version: Unsupported value: "v2.9.5"`,
				`kluctl.version: Unsupported value: "v2.28.2"`,
			))
		})

		It("ignores the kluctl version and namespace if kluctl is disabled", func() {
			cfg.Kluctl = flux.Kluctl{Enabled: false}
			cfg.Bootstrap.Mode = flux.BootstrapModeNone
			Expect(validate()).To(BeEmpty())
		})
	})

	Describe("components", func() {
		It("accepts all known components", func() {
			cfg.Flux.Components = append([]string{}, flux.KnownComponents...)
			Expect(validate()).To(BeEmpty())
		})

		It("rejects unknown, duplicate and missing components", func() {
			cfg.Flux.Components = []string{"image-automation-controller", flux.ComponentHelmController, flux.ComponentHelmController}
			Expect(validate()).To(ConsistOf(
				`flux.components[0]: Unsupported value: "image-automation-controller": supported values: "source-controller", "kustomize-controller", "helm-controller", "notification-controller"`,
				`flux.components[2]: Duplicate value: "helm-controller"`,
				`flux.components: Required value: must include "source-controller"`,
			))
		})
	})

	Describe("namespaces", func() {
		It("rejects namespaces that are not DNS labels", func() {
			cfg.Flux.Namespace = "Flux_System"
			cfg.Kluctl.Namespace = "a.b"
			Expect(validate()).To(ConsistOf(
				`flux.namespace: Invalid value: "Flux_System": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`kluctl.namespace: Invalid value: "a.b": must not contain dots`,
			))
		})
	})

	Describe("bootstrap mode", func() {
		It("rejects an unknown mode", func() {
			cfg.Bootstrap.Mode = "helm"
			Expect(validate()).To(ConsistOf(`bootstrap.mode: Unsupported value: "helm": supported values: "kluctl", "flux", "none"`))
		})

		It("needs kustomize-controller in mode flux", func() {
			cfg.Bootstrap.Mode = flux.BootstrapModeFlux
			Expect(validate()).To(ConsistOf(`bootstrap.mode: Invalid value: "flux": needs flux.components to include "kustomize-controller"`))

			cfg.Flux.Components = []string{flux.ComponentSourceController, flux.ComponentKustomizeController}
			Expect(validate()).To(BeEmpty())
		})

		It("needs kluctl in mode kluctl", func() {
			cfg.Kluctl.Enabled = false
			Expect(validate()).To(ConsistOf(`bootstrap.mode: Invalid value: "kluctl": needs kluctl.enabled to be true; use mode flux or none without kluctl`))
		})

		It("needs a source unless the mode is none", func() {
			cfg.Source = nil
			Expect(validate()).To(ConsistOf(`bootstrap.mode: Invalid value: "kluctl": needs source.url or source.oci.url; without a source only mode none is possible`))
		})
	})

	Describe("source.oci", func() {
		const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

		BeforeEach(func() {
			cfg.Source = &flux.Source{OCI: &flux.OCISource{URL: "oci://ghcr.io/org/fleet", Ref: flux.OCIRef{Tag: "v1.2.3"}, Path: "."}}
		})

		It("accepts a tag, a digest or a semver range", func() {
			Expect(validate()).To(BeEmpty())
			cfg.Source.OCI.Ref = flux.OCIRef{Digest: digest}
			Expect(validate()).To(BeEmpty())
			cfg.Source.OCI.Ref = flux.OCIRef{SemVer: "~1.2"}
			Expect(validate()).To(BeEmpty())
		})

		It("needs exactly one of tag and digest", func() {
			cfg.Source.OCI.Ref = flux.OCIRef{Tag: "v1", Digest: digest}
			Expect(validate()).To(ConsistOf(`source.oci.ref: Invalid value: "{tag=v1, digest=` + digest + `}": exactly one of tag, digest and semver must be set`))
			cfg.Source.OCI.Ref = flux.OCIRef{}
			Expect(validate()).To(ConsistOf(`source.oci.ref: Invalid value: "{}": exactly one of tag, digest and semver must be set`))
		})

		It("rejects a bad tag, digest and path", func() {
			cfg.Source.OCI.Ref = flux.OCIRef{Tag: ".hidden"}
			cfg.Source.OCI.Path = "../up"
			Expect(validate()).To(ConsistOf(
				`source.oci.ref.tag: Invalid value: ".hidden": must be an OCI tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'`,
				`source.oci.path: Invalid value: "../up": must not contain ".."`,
			))
			cfg.Source.OCI.Ref = flux.OCIRef{Digest: "sha256:abc"}
			cfg.Source.OCI.Path = "."
			Expect(validate()).To(ConsistOf(`source.oci.ref.digest: Invalid value: "sha256:abc": must be a manifest digest: sha256:<64 lower-case hexadecimal characters> or sha512:<128>`))
		})

		DescribeTable("rejects a bad URL",
			func(url, message string) {
				cfg.Source.OCI.URL = url
				Expect(validate()).To(ConsistOf(`source.oci.url: ` + message))
			},
			Entry("empty", "", "Required value: must not be empty"),
			Entry("another scheme", "https://ghcr.io/org/fleet", `Invalid value: "https://ghcr.io/org/fleet": must start with oci://`),
			Entry("no repository", "oci://ghcr.io", `Invalid value: "oci://ghcr.io": must be oci://registry/repository`),
			Entry("a tag", "oci://ghcr.io/org/fleet:v1", `Invalid value: "oci://ghcr.io/org/fleet:v1": must not contain a tag; set ref.tag`),
			Entry("a digest", "oci://ghcr.io/org/fleet@"+digest, `Invalid value: "oci://ghcr.io/org/fleet@`+digest+`": must not contain a digest; set ref.digest`),
			Entry("credentials", "oci://user:pw@ghcr.io/org/fleet", `Invalid value: "oci://user:pw@ghcr.io/org/fleet": must not contain credentials, a query or a fragment`),
			Entry("no registry host", "oci://org/fleet", `Invalid value: "oci://org/fleet": registry "org" must be a host name with a dot or a port, or localhost`),
			Entry("upper-case repository", "oci://ghcr.io/Org/fleet", `Invalid value: "oci://ghcr.io/Org/fleet": repository can only contain the characters `+"`abcdefghijklmnopqrstuvwxyz0123456789_-./`: Org/fleet"),
		)

		It("rejects git fields next to it, naming each", func() {
			cfg.Source.URL = "https://git.example.com/fleet.git"
			cfg.Source.Ref = flux.GitRef{Branch: "main"}
			cfg.Source.SecretResourceName = "git"
			Expect(validate()).To(ConsistOf(
				"source.url: Forbidden: is a git source field and must not be set together with source.oci",
				"source.ref: Forbidden: is a git source field and must not be set together with source.oci",
				"source.secretResourceName: Forbidden: is a git source field and must not be set together with source.oci",
			))
		})
	})

	Describe("source", func() {
		It("rejects a missing URL", func() {
			cfg.Source.URL = ""
			Expect(validate()).To(ConsistOf("source.url: Required value: must not be empty"))
		})

		DescribeTable("rejects invalid URLs",
			func(url, message string) {
				cfg.Source.URL = url
				Expect(validate()).To(ConsistOf(message))
			},
			Entry("http", "http://host/r", `source.url: Invalid value: "http://host/r": scheme "http" is not supported, use ssh://, https:// or user@host:path`),
			Entry("file", "file:///r", `source.url: Invalid value: "file:///r": scheme "file" is not supported, use ssh://, https:// or user@host:path`),
			Entry("empty host", "ssh://git@/r", `source.url: Invalid value: "ssh://git@/r": must contain a host`),
			Entry("https with a password", "https://bot:s3cret@host/r", `source.url: Invalid value: "https://bot:xxxxx@host/r": https URLs must not contain credentials, use source.secretResourceName`),
			Entry("whitespace", "ssh://git@host/r ", `source.url: Invalid value: "ssh://git@host/r ": must not contain whitespace or control characters`),
		)

		DescribeTable("accepts valid refs",
			func(ref flux.GitRef) {
				cfg.Source.Ref = ref
				fluxModeFor(ref)
				Expect(validate()).To(BeEmpty())
			},
			Entry("branch with slashes", flux.GitRef{Branch: "feature/x-1.2"}),
			Entry("tag", flux.GitRef{Tag: "v1.2.3"}),
			Entry("SHA-1 commit", flux.GitRef{Commit: validCommit}),
			Entry("SHA-256 commit", flux.GitRef{Commit: strings.Repeat("ab", 32)}),
			Entry("semver range", flux.GitRef{SemVer: ">=1.2.0 <2.0.0"}),
			Entry("reference name", flux.GitRef{Name: "refs/pull/42/head"}),
		)

		DescribeTable("rejects invalid refs",
			func(ref flux.GitRef, message string) {
				cfg.Source.Ref = ref
				fluxModeFor(ref)
				Expect(validate()).To(ConsistOf(message))
			},
			Entry("none", flux.GitRef{}, `source.ref: Invalid value: "{}": exactly one of branch, tag, commit, semver and name must be set`),
			Entry("branch and tag", flux.GitRef{Branch: "main", Tag: "v1"}, `source.ref: Invalid value: "{branch=main, tag=v1}": exactly one of branch, tag, commit, semver and name must be set`),
			Entry("tag and commit", flux.GitRef{Tag: "v1", Commit: validCommit}, `source.ref: Invalid value: "{tag=v1, commit=`+validCommit+`}": exactly one of branch, tag, commit, semver and name must be set`),
			Entry("short commit", flux.GitRef{Commit: "0123abc"}, `source.ref.commit: Invalid value: "0123abc": must be a full commit SHA: 40 or 64 lower-case hexadecimal characters`),
			Entry("upper-case commit", flux.GitRef{Commit: strings.ToUpper(validCommit)}, `source.ref.commit: Invalid value: "`+strings.ToUpper(validCommit)+`": must be a full commit SHA: 40 or 64 lower-case hexadecimal characters`),
			Entry("branch with whitespace", flux.GitRef{Branch: "my branch"}, `source.ref.branch: Invalid value: "my branch": must not contain whitespace or control characters`),
			Entry("branch with ..", flux.GitRef{Branch: "a..b"}, `source.ref.branch: Invalid value: "a..b": must not contain "..", "@{" or "//"`),
			Entry("branch with a colon", flux.GitRef{Branch: "a:b"}, `source.ref.branch: Invalid value: "a:b": must not contain any of ~ ^ : ? * [ \`),
			Entry("branch starting with -", flux.GitRef{Branch: "-x"}, `source.ref.branch: Invalid value: "-x": must not start with "-" or "/" or end with "/" or "."`),
			Entry("tag ending with .lock", flux.GitRef{Tag: "v1.lock"}, `source.ref.tag: Invalid value: "v1.lock": must not end with ".lock" or be "@"`),
			Entry("semver that is no range", flux.GitRef{SemVer: "one"}, `source.ref.semver: Invalid value: "one": must be a semantic version range, e.g. >=1.0.0 <2.0.0: improper constraint: "one"`),
			Entry("name without refs/", flux.GitRef{Name: "pull/42/head"}, `source.ref.name: Invalid value: "pull/42/head": must be a full reference name starting with refs/, e.g. refs/pull/42/head`),
			Entry("semver and branch", flux.GitRef{SemVer: "1.x", Branch: "main"}, `source.ref: Invalid value: "{branch=main, semver=1.x}": exactly one of branch, tag, commit, semver and name must be set`),
		)

		DescribeTable("rejects invalid paths",
			func(path, message string) {
				cfg.Source.Path = path
				Expect(validate()).To(ConsistOf(message))
			},
			Entry("empty", "", `source.path: Required value: must not be empty, use "." for the repository root`),
			Entry("absolute", "/clusters", `source.path: Invalid value: "/clusters": must be relative to the repository root`),
			Entry("parent", "clusters/../..", `source.path: Invalid value: "clusters/../..": must not contain ".."`),
			Entry("leading parent", "../x", `source.path: Invalid value: "../x": must not contain ".."`),
		)

		It("accepts relative paths", func() {
			for _, p := range []string{".", "./clusters/a", "clusters/a/", "a..b"} {
				cfg.Source.Path = p
				Expect(validate()).To(BeEmpty(), p)
			}
		})

		It("rejects an unknown repository type", func() {
			cfg.Source.Type = "internal"
			Expect(validate()).To(ConsistOf(`source.type: Unsupported value: "internal": supported values: "public", "private"`))
		})

		It("needs credentials for private https repositories", func() {
			cfg.Source.URL = "https://github.com/o/r"
			Expect(validate()).To(ConsistOf(`source.secretResourceName: Required value: a private https repository needs username/password credentials from a Shoot resource; generated deploy keys only work with ssh URLs`))

			cfg.Source.SecretResourceName = "creds"
			Expect(validate()).To(BeEmpty())

			cfg.Source.SecretResourceName = ""
			cfg.Source.Type = flux.RepositoryTypePublic
			Expect(validate()).To(BeEmpty())
		})

		It("accepts private scp-like repositories without credentials", func() {
			cfg.Source.URL = "git@github.com:o/r"
			Expect(validate()).To(BeEmpty())
		})

		It("accepts known_hosts with comments, blank lines, markers and hashed names", func() {
			cfg.Source.KnownHosts = strings.Join([]string{
				"# GitHub",
				knownHostEd25519,
				"",
				"[git.example.com]:2222,10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
				"@cert-authority *.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
				"|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
			}, "\n")
			Expect(validate()).To(BeEmpty())
		})

		It("rejects known_hosts lines that do not parse and names the line", func() {
			cfg.Source.KnownHosts = knownHostEd25519 + "\n\ngithub.com ssh-ed25519 not-base64!\njust-a-host\ngithub.com ssh-ed25519\n"
			Expect(validate()).To(ConsistOf(
				`source.knownHosts: Invalid value: "github.com ssh-ed25519 not-base64!": line 3 is not a known_hosts entry: illegal base64 data at input byte 3`,
				`source.knownHosts: Invalid value: "just-a-host": line 4 is not a known_hosts entry: expected "[@marker] hosts key-type base64-key [comment]"`,
				`source.knownHosts: Invalid value: "github.com ssh-ed25519": line 5 is not a known_hosts entry: ssh: invalid entry in known_hosts data`,
			))
		})
	})

	Describe("kluctl bootstrap", func() {
		It("rejects an empty context", func() {
			cfg.Bootstrap.Kluctl.Context = ""
			Expect(validate()).To(ConsistOf("bootstrap.kluctl.context: Required value: must not be empty"))
		})

		It("accepts object args", func() {
			cfg.Bootstrap.Kluctl.Args = &runtime.RawExtension{Raw: []byte(`{"env":"prod","replicas":3,"nested":{"a":[1,2]}}`)}
			Expect(validate()).To(BeEmpty())
		})

		DescribeTable("rejects args that are not a JSON object",
			func(raw, message string) {
				cfg.Bootstrap.Kluctl.Args = &runtime.RawExtension{Raw: []byte(raw)}
				Expect(validate()).To(ConsistOf(message))
			},
			Entry("string", `"env=prod"`, `bootstrap.kluctl.args: Invalid value: "\"env=prod\"": must be a JSON object, not a JSON string`),
			Entry("array", `["a"]`, `bootstrap.kluctl.args: Invalid value: "[\"a\"]": must be a JSON object, not a JSON array`),
			Entry("number", `1`, `bootstrap.kluctl.args: Invalid value: "1": must be a JSON object, not a JSON number`),
			Entry("null", `null`, `bootstrap.kluctl.args: Invalid value: "null": must be a JSON object`),
			Entry("broken JSON", `{"a":`, `bootstrap.kluctl.args: Invalid value: "{\"a\":": must be a JSON object: unexpected end of JSON input`),
		)

		It("rejects durations that are not positive", func() {
			cfg.Bootstrap.Kluctl.Interval = metav1.Duration{}
			cfg.Bootstrap.Kluctl.RetryInterval = &metav1.Duration{Duration: -time.Second}
			cfg.Bootstrap.Kluctl.Timeout = &metav1.Duration{}
			Expect(validate()).To(ConsistOf(
				`bootstrap.kluctl.interval: Invalid value: "0s": must be greater than zero`,
				`bootstrap.kluctl.retryInterval: Invalid value: "-1s": must be greater than zero`,
				`bootstrap.kluctl.timeout: Invalid value: "0s": must be greater than zero`,
			))
		})

		It("rejects a decryption without Secret", func() {
			cfg.Bootstrap.Kluctl.Decryption = &flux.Decryption{}
			Expect(validate()).To(ConsistOf("bootstrap.kluctl.decryption.secretResourceName: Required value: must name a Shoot spec.resources Secret"))
		})

		It("ignores the kluctl section in mode flux", func() {
			cfg.Flux.Components = []string{flux.ComponentSourceController, flux.ComponentKustomizeController}
			cfg.Bootstrap.Mode = flux.BootstrapModeFlux
			cfg.Bootstrap.Kluctl = flux.KluctlBootstrap{}
			Expect(validate()).To(BeEmpty())
		})
	})

	Describe("flux bootstrap", func() {
		BeforeEach(func() {
			cfg.Flux.Components = []string{flux.ComponentSourceController, flux.ComponentKustomizeController}
			cfg.Bootstrap.Mode = flux.BootstrapModeFlux
		})

		It("rejects an invalid path, interval, target namespace, timeout, retry interval and service account", func() {
			cfg.Bootstrap.Flux = flux.FluxBootstrap{Path: "/abs", TargetNamespace: "Apps", Timeout: &metav1.Duration{}, RetryInterval: &metav1.Duration{Duration: -time.Second}, ServiceAccountName: "Flux_Applier"}
			Expect(validate()).To(ConsistOf(
				`bootstrap.flux.path: Invalid value: "/abs": must be relative to the repository root`,
				`bootstrap.flux.interval: Invalid value: "0s": must be greater than zero`,
				`bootstrap.flux.targetNamespace: Invalid value: "Apps": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`bootstrap.flux.timeout: Invalid value: "0s": must be greater than zero`,
				`bootstrap.flux.retryInterval: Invalid value: "-1s": must be greater than zero`,
				`bootstrap.flux.serviceAccountName: Invalid value: "Flux_Applier": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			))
		})

		It("ignores the Kustomization section in mode kluctl", func() {
			cfg.Bootstrap.Mode = flux.BootstrapModeKluctl
			cfg.Bootstrap.Flux = flux.FluxBootstrap{}
			Expect(validate()).To(BeEmpty())
		})
	})

	Describe("additional secret resources", func() {
		It("accepts distinct resources", func() {
			cfg.AdditionalSecretResources = []flux.AdditionalSecretResource{
				{Name: "a", TargetName: "a", Namespace: "kluctl-system"},
				{Name: "b", TargetName: "a", Namespace: "other"},
			}
			Expect(validate()).To(BeEmpty())
		})

		It("rejects empty and duplicate names, invalid targets and colliding targets", func() {
			cfg.AdditionalSecretResources = []flux.AdditionalSecretResource{
				{Name: "", TargetName: "x", Namespace: "ns"},
				{Name: "a", TargetName: "a", Namespace: "ns"},
				{Name: "a", TargetName: "other", Namespace: "ns"},
				{Name: "b", TargetName: "Not_Valid", Namespace: "NS"},
				{Name: "c", TargetName: "a", Namespace: "ns"},
			}
			Expect(validate()).To(ConsistOf(
				"additionalSecretResources[0].name: Required value: must name a Shoot spec.resources Secret",
				`additionalSecretResources[2].name: Duplicate value: "a"`,
				`additionalSecretResources[3].targetName: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`additionalSecretResources[3].namespace: Invalid value: "NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`additionalSecretResources[4].targetName: Duplicate value: "ns/a"`,
			))
		})

		It("rejects the names of the extension's own Secrets in the shoot", func() {
			cfg.AdditionalSecretResources = []flux.AdditionalSecretResource{{Name: "a", TargetName: "shoot-flux-git-credentials", Namespace: "kluctl-system"}, {Name: "shoot-flux-sops"}}
			Expect(validate()).To(ConsistOf(
				`additionalSecretResources[0].targetName: Invalid value: "shoot-flux-git-credentials": is the name of a Secret the extension writes into the shoot; reserved: shoot-flux-git-credentials, shoot-flux-oci-credentials, shoot-flux-sops, shoot-flux-image-pull`,
				`additionalSecretResources[1].name: Invalid value: "shoot-flux-sops": is the name of a Secret the extension writes into the shoot; reserved: shoot-flux-git-credentials, shoot-flux-oci-credentials, shoot-flux-sops, shoot-flux-image-pull`,
			))
		})

		It("treats an empty target name as the name when looking for collisions", func() {
			cfg.AdditionalSecretResources = []flux.AdditionalSecretResource{{Name: "a"}, {Name: "b", TargetName: "a"}}
			Expect(validate()).To(ConsistOf(`additionalSecretResources[1].targetName: Duplicate value: "/a"`))
		})
	})
})

var _ = Describe("ValidateKnownHosts", func() {
	It("accepts an empty string", func() {
		Expect(ValidateKnownHosts("", field.NewPath("knownHosts"))).To(BeEmpty())
	})
})
