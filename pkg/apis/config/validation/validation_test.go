// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	"time"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var _ = Describe("ValidateControllerConfiguration", func() {
	var cfg *config.ControllerConfiguration

	BeforeEach(func() {
		cfg = &config.ControllerConfiguration{
			DefaultFluxVersion:   "v2.9.5",
			DefaultKluctlVersion: "v2.28.2",
			SSHKey:               config.SSHKeyConfig{Algorithm: config.KeyAlgorithmEd25519, Scope: config.KeyScopeRepository},
			Timeouts: config.Timeouts{
				ManagedResourceApplied: metav1.Duration{Duration: 2 * time.Minute},
				Deletion:               metav1.Duration{Duration: 5 * time.Minute},
				HostKeyScan:            metav1.Duration{Duration: 10 * time.Second},
				BootstrapFinalizers:    metav1.Duration{Duration: time.Minute},
			},
			Limits:  configv1alpha1.DefaultLimits(),
			Rollout: config.Rollout{Window: config.RolloutWindowMaintenance},
		}
	})

	validate := func() []string {
		var out []string
		for _, err := range ValidateControllerConfiguration(cfg) {
			out = append(out, err.Error())
		}
		return out
	}

	It("accepts a valid configuration", func() {
		cfg.KnownHosts = "# GitHub\ngithub.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
		cfg.Registry = "registry.example.com:5000/mirror"
		cfg.SSHKey = config.SSHKeyConfig{Algorithm: config.KeyAlgorithmRSA4096, Scope: config.KeyScopeShoot}
		cfg.HealthCheckConfig = &healthcheckconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: 30 * time.Second}}
		Expect(validate()).To(BeEmpty())
	})

	It("rejects empty default versions", func() {
		cfg.DefaultFluxVersion = ""
		cfg.DefaultKluctlVersion = ""
		Expect(validate()).To(ConsistOf(
			"defaultFluxVersion: Required value: must not be empty",
			"defaultKluctlVersion: Required value: must not be empty",
		))
	})

	DescribeTable("accepts a release or a minor as default version",
		func(flux, kluctl string) {
			cfg.DefaultFluxVersion = flux
			cfg.DefaultKluctlVersion = kluctl
			Expect(validate()).To(BeEmpty())
		},
		Entry("releases", "v2.9.5", "v2.28.2"),
		Entry("releases without v", "2.9.5", "2.28.2"),
		Entry("minors", "v2.9", "v2.28"),
		Entry("minors with x", "2.9.x", "v2.28.x"),
	)

	It("rejects default versions that are no release or minor", func() {
		cfg.DefaultFluxVersion = "v2"
		cfg.DefaultKluctlVersion = "latest"
		Expect(validate()).To(ConsistOf(
			`defaultFluxVersion: Invalid value: "v2": must be a release (e.g. v2.9.5) or a minor (e.g. v2.9 or v2.9.x), whose newest embedded patch is selected`,
			`defaultKluctlVersion: Invalid value: "latest": must be a release (e.g. v2.9.5) or a minor (e.g. v2.9 or v2.9.x), whose newest embedded patch is selected`,
		))
	})

	It("rejects unknown key algorithms and scopes", func() {
		cfg.SSHKey = config.SSHKeyConfig{Algorithm: "rsa", Scope: "seed"}
		Expect(validate()).To(ConsistOf(
			`sshKey.algorithm: Unsupported value: "rsa": supported values: "ed25519", "rsa-4096"`,
			`sshKey.scope: Unsupported value: "seed": supported values: "repository", "shoot", "project"`,
		))
	})

	It("rejects host policies that do not parse, naming the entry", func() {
		cfg.HostPolicy = config.HostPolicy{AllowedNetworks: []string{"10.0.0.0/8", "10.0.0.0/33"}, AllowedPorts: []string{"22", "0", "9-1"}}
		Expect(validate()).To(ConsistOf(
			`hostPolicy.allowedNetworks[1]: Invalid value: "10.0.0.0/33": must be a CIDR, e.g. 10.20.0.0/16`,
			`hostPolicy.allowedPorts[1]: Invalid value: "0": must be a port 1-65535 or a range like 1024-65535`,
			`hostPolicy.allowedPorts[2]: Invalid value: "9-1": must be a port 1-65535 or a range like 1024-65535`,
		))
	})

	It("rejects known_hosts that do not parse", func() {
		cfg.KnownHosts = "github.com ssh-ed25519 AAAA"
		Expect(validate()).To(ConsistOf(`knownHosts: Invalid value: "github.com ssh-ed25519 AAAA": line 1 is not a known_hosts entry: ssh: short read`))
	})

	DescribeTable("rejects registries that are not a host with an optional path",
		func(registry, reason string) {
			cfg.Registry = registry
			Expect(validate()).To(ConsistOf(`registry: Invalid value: "` + registry + `": ` + reason))
		},
		Entry("with scheme", "https://registry.example.com", `expected a host with optional port and path, e.g. my.mirror:5000/cache, without scheme, whitespace, "@" or empty path components`),
		Entry("with trailing slash", "registry.example.com/", `expected a host with optional port and path, e.g. my.mirror:5000/cache, without scheme, whitespace, "@" or empty path components`),
		Entry("with whitespace", "registry.example.com /x", `expected a host with optional port and path, e.g. my.mirror:5000/cache, without scheme, whitespace, "@" or empty path components`),
		// Accepted here before, but refused by every render: a bare name is a Docker Hub namespace.
		Entry("without a host", "mirror", `"mirror" is not a registry host: it needs a dot, a port or to be localhost, e.g. mirror.example.com or mirror:5000`),
		Entry("without a host, with a path", "mirror/cache", `"mirror" is not a registry host: it needs a dot, a port or to be localhost, e.g. mirror.example.com or mirror:5000`),
	)

	It("accepts every registry the render accepts", func() {
		for _, registry := range []string{"localhost/cache", "mirror:5000", "registry.example.com"} {
			cfg.Registry = registry
			Expect(validate()).To(BeEmpty(), registry)
			Expect(manifests.Images(manifests.FluxOptions{Version: "v2.9.5", Components: []string{manifests.SourceController}, Registry: registry}, nil)).
				To(HaveKeyWithValue(manifests.SourceController, HavePrefix(registry+"/")))
		}
	})

	It("rejects a relative image pull secret file", func() {
		cfg.ImagePullSecretFile = "pull/.dockerconfigjson"
		Expect(validate()).To(ConsistOf(`imagePullSecretFile: Invalid value: "pull/.dockerconfigjson": must be an absolute path`))
	})

	It("validates the operator's controller settings with the shoots' rules", func() {
		cfg.Controllers = map[string]config.ControllerSettings{
			"defaults":          {Concurrent: ptr.To[int32](8), PriorityClassName: ptr.To("system-cluster-critical")},
			"source-controller": {Concurrent: ptr.To[int32](0)},
			"image-controller":  {},
		}
		Expect(validate()).To(ConsistOf(
			`controllers.source-controller.concurrent: Invalid value: 0: must be between 1 and 100`,
			`controllers.image-controller: Unsupported value: "image-controller": supported values: "defaults", "source-controller", "kustomize-controller", "helm-controller", "notification-controller", "kluctl-controller"`,
		))
	})

	It("rejects timeouts that are not positive", func() {
		cfg.Timeouts = config.Timeouts{HostKeyScan: metav1.Duration{Duration: -time.Second}}
		cfg.HealthCheckConfig = &healthcheckconfigv1alpha1.HealthCheckConfig{}
		Expect(validate()).To(ConsistOf(
			`timeouts.managedResourceApplied: Invalid value: "0s": must be greater than zero`,
			`timeouts.deletion: Invalid value: "0s": must be greater than zero`,
			`timeouts.hostKeyScan: Invalid value: "-1s": must be greater than zero`,
			`timeouts.bootstrapFinalizers: Invalid value: "0s": must be greater than zero`,
			`healthCheckConfig.syncPeriod: Invalid value: "0s": must be greater than zero`,
		))
	})

	It("rejects timeouts above their upper bounds", func() {
		cfg.Timeouts = config.Timeouts{
			ManagedResourceApplied: metav1.Duration{Duration: time.Hour},
			Deletion:               metav1.Duration{Duration: 30 * time.Minute},
			HostKeyScan:            metav1.Duration{Duration: 2 * time.Minute},
			BootstrapFinalizers:    metav1.Duration{Duration: 11 * time.Minute},
		}
		Expect(validate()).To(ConsistOf(
			`timeouts.managedResourceApplied: Invalid value: "1h0m0s": must be at most 10m0s`,
			`timeouts.hostKeyScan: Invalid value: "2m0s": must be at most 1m0s`,
			`timeouts.bootstrapFinalizers: Invalid value: "11m0s": must be at most 10m0s`,
		))
	})

	It("rejects limits that are not positive, naming each", func() {
		cfg.Limits.KluctlArgsMaxBytes = 0
		cfg.Limits.HostPatternMaxWildcards = -1
		cfg.Limits.DeployKeysMaxEntries = 0
		Expect(validate()).To(ConsistOf(
			`limits.kluctlArgsMaxBytes: Invalid value: 0: must be positive`,
			`limits.hostPatternMaxWildcards: Invalid value: -1: must be positive`,
			`limits.deployKeysMaxEntries: Invalid value: 0: must be positive`,
		))
	})

	It("rejects shares of the workers above 100 percent", func() {
		cfg.Limits.ProjectWorkersPercent = 101
		cfg.Limits.ReservedWorkersPercent = 0
		Expect(validate()).To(ConsistOf(
			`limits.projectWorkersPercent: Invalid value: 101: must not exceed 100`,
			`limits.reservedWorkersPercent: Invalid value: 0: must be positive`,
		))
		cfg.Limits.ProjectWorkersPercent = 100
		cfg.Limits.ReservedWorkersPercent = 101
		Expect(validate()).To(ConsistOf(`limits.reservedWorkersPercent: Invalid value: 101: must not exceed 100`))
	})

	It("rejects a private key modulus limit above what OpenSSH accepts, and new limits that are not positive", func() {
		cfg.Limits.PrivateKeyMaxBits = 16385
		cfg.Limits.PrivateKeyMaxBytes = 0
		cfg.Limits.ProviderConfigMaxBytes = 0
		Expect(validate()).To(ConsistOf(
			`limits.privateKeyMaxBits: Invalid value: 16385: must not exceed 16384, the largest RSA key OpenSSH accepts`,
			`limits.privateKeyMaxBytes: Invalid value: 0: must be positive`,
			`limits.providerConfigMaxBytes: Invalid value: 0: must be positive`,
		))
	})

	It("rejects a config.yaml limit above the ConfigMap's", func() {
		cfg.Limits.ProjectConfigMapMaxBytes = 1000
		cfg.Limits.ProjectConfigMaxBytes = 1001
		Expect(validate()).To(ConsistOf(`limits.projectConfigMaxBytes: Invalid value: 1001: must not exceed projectConfigMapMaxBytes (1000)`))
	})

	It("accepts limits raised by the operator", func() {
		cfg.Limits.ProjectConfigMapMaxBytes = 1 << 20
		cfg.Limits.ProjectConfigMaxBytes = 1 << 20
		cfg.Limits.AdditionalSecretResourcesMaxBytes = 1 << 30
		Expect(validate()).To(BeEmpty())
	})
})
