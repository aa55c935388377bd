// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package loader_test

import (
	"encoding/json"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"os"
	"path/filepath"
	"time"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
)

var _ = Describe("Loader", func() {
	defaults := func() *config.ControllerConfiguration {
		return &config.ControllerConfiguration{
			DefaultFluxVersion:   "v2.9",
			DefaultKluctlVersion: "v2.28",
			SSHKey:               config.SSHKeyConfig{Algorithm: config.KeyAlgorithmEd25519, Scope: config.KeyScopeRepository},
			Rollout:              config.Rollout{Window: config.RolloutWindowMaintenance},
			Monitoring:           config.Monitoring{Shoot: config.ShootMonitoring{Enabled: true}},
			Timeouts: config.Timeouts{
				ManagedResourceApplied: metav1.Duration{Duration: 2 * time.Minute},
				Deletion:               metav1.Duration{Duration: 5 * time.Minute},
				HostKeyScan:            metav1.Duration{Duration: 10 * time.Second},
				BootstrapFinalizers:    metav1.Duration{Duration: time.Minute},
			},
			// Literal numbers, so that a changed default shows here and in docs/operations/configuration.md.
			Limits: config.Limits{
				ProjectConfigMapMaxBytes:          48 * 1024,
				ProjectConfigMaxBytes:             32 * 1024,
				ProviderConfigMaxBytes:            32 * 1024,
				KluctlArgsMaxBytes:                16 * 1024,
				ControllersMaxBytes:               16 * 1024,
				AdditionalSecretResourcesMaxCount: 16,
				AdditionalSecretResourcesMaxBytes: 256 * 1024,
				KnownHostsMaxBytes:                64 * 1024,
				KnownHostsMaxLines:                1000,
				HostPatternMaxLength:              300,
				HostPatternMaxWildcards:           3,
				PrivateKeyMaxBytes:                16 * 1024,
				PrivateKeyMaxBits:                 16384,
				DeployKeysMaxEntries:              1500,
				DeployKeysMaxRotatedKeys:          50,
				ProjectWorkersPercent:             50,
				ReservedWorkersPercent:            10,
			},
		}
	}

	writeFile := func(content string) string {
		path := filepath.Join(GinkgoT().TempDir(), "config.yaml")
		Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
		return path
	}

	Describe("Versioned", func() {
		It("writes a configuration that loads back unchanged", func() {
			cfg := defaults()
			cfg.SSHKey.Scope = config.KeyScopeShoot
			cfg.KnownHosts = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
			cfg.Registry = "registry.example.com/mirror"
			cfg.AllowInsecureHostKeys = true
			cfg.Timeouts.Deletion = metav1.Duration{Duration: time.Minute}
			cfg.HealthCheckConfig = &healthcheckconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: 5 * time.Second}}
			cfg.HostPolicy = config.HostPolicy{AllowedNetworks: []string{"127.0.0.0/8"}, AllowedPorts: []string{"1024-65535"}}
			cfg.Limits.ControllersMaxBytes = 1 << 20

			versioned, err := Versioned(cfg)
			Expect(err).NotTo(HaveOccurred())
			data, err := json.Marshal(versioned)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(data)).To(ContainSubstring(`"kind":"ControllerConfiguration"`))
			Expect(Load(data)).To(Equal(cfg))
		})
	})

	Describe("Defaults", func() {
		It("returns the defaulted configuration", func() {
			Expect(Defaults()).To(Equal(defaults()))
		})

		It("hands the known_hosts limits over in the form of sshkey.KnownHostsLimits", func() {
			cfg, err := Defaults()
			Expect(err).NotTo(HaveOccurred())
			Expect(sshkey.KnownHostsLimits(cfg.Limits.KnownHosts())).To(Equal(sshkey.DefaultKnownHostsLimits()))
		})

		It("hands the private key limits over in the form of sshkey.PrivateKeyLimits", func() {
			cfg, err := Defaults()
			Expect(err).NotTo(HaveOccurred())
			Expect(sshkey.PrivateKeyLimits(cfg.Limits.PrivateKey())).To(Equal(sshkey.DefaultPrivateKeyLimits()))
		})
	})

	Describe("LoadFromFile", func() {
		It("defaults a minimal file", func() {
			cfg, err := LoadFromFile(writeFile(`
apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
`))
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg).To(Equal(defaults()))
		})

		It("keeps every configured value", func() {
			cfg, err := LoadFromFile(writeFile(`
apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
defaultFluxVersion: v2.8.0
defaultKluctlVersion: v2.27.0
sshKey:
  algorithm: rsa-4096
  scope: shoot
knownHosts: |
  github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
registry: registry.example.com/mirror
timeouts:
  managedResourceApplied: 1m
  deletion: 3m
  hostKeyScan: 5s
allowInsecureHostKeys: true
healthCheckConfig:
  syncPeriod: 1m
limits:
  kluctlArgsMaxBytes: 65536
  deployKeysMaxEntries: 3000
monitoring:
  shoot:
    enabled: false
`))
			Expect(err).NotTo(HaveOccurred())
			limits := defaults().Limits
			limits.KluctlArgsMaxBytes = 65536
			limits.DeployKeysMaxEntries = 3000
			Expect(cfg).To(Equal(&config.ControllerConfiguration{
				DefaultFluxVersion:   "v2.8.0",
				DefaultKluctlVersion: "v2.27.0",
				SSHKey:               config.SSHKeyConfig{Algorithm: config.KeyAlgorithmRSA4096, Scope: config.KeyScopeShoot},
				KnownHosts:           "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
				Registry:             "registry.example.com/mirror",
				Timeouts: config.Timeouts{
					ManagedResourceApplied: metav1.Duration{Duration: time.Minute},
					Deletion:               metav1.Duration{Duration: 3 * time.Minute},
					HostKeyScan:            metav1.Duration{Duration: 5 * time.Second},
					BootstrapFinalizers:    metav1.Duration{Duration: time.Minute},
				},
				AllowInsecureHostKeys: true,
				HealthCheckConfig:     &healthcheckconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: time.Minute}},
				Limits:                limits,
				Rollout:               config.Rollout{Window: config.RolloutWindowMaintenance},
				Monitoring:            config.Monitoring{Shoot: config.ShootMonitoring{Enabled: false}},
			}))
		})

		It("rejects unknown fields", func() {
			path := writeFile(`
apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
sshKey:
  algorithm: ed25519
  size: 4096
`)
			_, err := LoadFromFile(path)
			Expect(err).To(MatchError(`file ` + path + `: failed decoding controller configuration: strict decoding error: unknown field "sshKey.size"`))
		})

		It("rejects invalid values", func() {
			path := writeFile(`
apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
defaultFluxVersion: ""
sshKey:
  scope: seed
`)
			_, err := LoadFromFile(path)
			Expect(err).To(MatchError(`file ` + path + `: invalid controller configuration: [defaultFluxVersion: Required value: must not be empty, sshKey.scope: Unsupported value: "seed": supported values: "repository", "shoot", "project"]`))
		})

		It("reads a document without apiVersion and kind as v1alpha1", func() {
			cfg, err := LoadFromFile(writeFile("defaultFluxVersion: v2.8.0\nsshKey:\n  scope: shoot\n"))
			Expect(err).NotTo(HaveOccurred())
			want := defaults()
			want.DefaultFluxVersion = "v2.8.0"
			want.SSHKey.Scope = config.KeyScopeShoot
			Expect(cfg).To(Equal(want))
		})

		It("rejects unknown fields in a document without apiVersion and kind", func() {
			path := writeFile("defaultFluxVersion: v2.8.0\nflux: {}\n")
			_, err := LoadFromFile(path)
			Expect(err).To(MatchError(`file ` + path + `: failed decoding controller configuration: strict decoding error: unknown field "flux"`))
		})

		It("rejects a document of another kind", func() {
			path := writeFile("apiVersion: v1\nkind: ConfigMap\n")
			_, err := LoadFromFile(path)
			Expect(err).To(MatchError(ContainSubstring(`failed decoding controller configuration: no kind "ConfigMap" is registered for version "v1"`)))
		})

		It("reports a missing file", func() {
			_, err := LoadFromFile(filepath.Join(GinkgoT().TempDir(), "missing.yaml"))
			Expect(err).To(MatchError(ContainSubstring("failed reading controller configuration: open ")))
			Expect(err).To(MatchError(os.ErrNotExist))
		})
	})
})
