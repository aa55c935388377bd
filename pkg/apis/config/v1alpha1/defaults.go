// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

const (
	defaultManagedResourceAppliedTimeout = 2 * time.Minute
	defaultDeletionTimeout               = 5 * time.Minute
	defaultHostKeyScanTimeout            = 10 * time.Second
	defaultBootstrapFinalizersTimeout    = time.Minute
)

// SetDefaults_ControllerConfiguration sets the defaults of the controller configuration and allocates
// the sections so that the generated defaulter reaches their defaults.
func SetDefaults_ControllerConfiguration(obj *ControllerConfiguration) {
	if obj.DefaultFluxVersion == nil {
		obj.DefaultFluxVersion = ptr.To(DefaultFluxVersion)
	}
	if obj.DefaultKluctlVersion == nil {
		obj.DefaultKluctlVersion = ptr.To(DefaultKluctlVersion)
	}
	if obj.SSHKey == nil {
		obj.SSHKey = &SSHKeyConfig{}
	}
	if obj.Timeouts == nil {
		obj.Timeouts = &Timeouts{}
	}
	if obj.AllowInsecureHostKeys == nil {
		obj.AllowInsecureHostKeys = ptr.To(false)
	}
	if obj.Limits == nil {
		obj.Limits = &Limits{}
	}
	if obj.Rollout == nil {
		obj.Rollout = &Rollout{}
	}
	if obj.Monitoring == nil {
		obj.Monitoring = &Monitoring{}
	}
	if obj.Monitoring.Shoot == nil {
		obj.Monitoring.Shoot = &ShootMonitoring{}
	}
}

// SetDefaults_ShootMonitoring enables the shoots' monitoring.
func SetDefaults_ShootMonitoring(obj *ShootMonitoring) {
	if obj.Enabled == nil {
		obj.Enabled = ptr.To(true)
	}
}

// SetDefaults_Rollout sets the default rollout window.
func SetDefaults_Rollout(obj *Rollout) {
	if obj.Window == nil {
		obj.Window = ptr.To(RolloutWindowMaintenance)
	}
}

// SetDefaults_ReleaseLifecycle classifies a listed release as supported unless the operator says
// otherwise.
func SetDefaults_ReleaseLifecycle(obj *ReleaseLifecycle) {
	if obj.Classification == nil {
		obj.Classification = ptr.To(ReleaseSupported)
	}
}

// The default limits, picked from what a real fleet needs, with headroom. They are the only
// source of the defaults: the admission's flags take theirs from DefaultLimits too.
const (
	// The example project ConfigMap is 1 KiB; a config.yaml with a source, kluctl args and settings
	// for all six controllers stays below 8 KiB. Every seed caches every project's ConfigMap, so
	// 1000 projects keep at most 48 MiB.
	DefaultProjectConfigMapMaxBytes = 48 << 10
	DefaultProjectConfigMaxBytes    = 32 << 10
	// A providerConfig is the same document as config.yaml, and the same size does for it. The
	// admission decodes it several times per request and every reconcile once, so it is checked
	// before decoding.
	DefaultProviderConfigMaxBytes = 32 << 10
	// kluctl args are deployment arguments (target, environment, a few flags), well below 1 KiB;
	// they are copied into the KluctlDeployment of every shoot on every change.
	DefaultKluctlArgsMaxBytes = 16 << 10
	// Resources, tolerations, a nodeSelector and a priority class for six controllers take about
	// 2 KiB; every distinct value is another render of the controllers' ManagedResource.
	DefaultControllersMaxBytes = 16 << 10
	// A decryption key, registry credentials and a few application Secrets; each becomes a Secret
	// in the shoot.
	DefaultAdditionalSecretResourcesMaxCount = 16
	// The Secrets travel in the bootstrap ManagedResource Secret (at most 1 MiB, like every Secret)
	// next to the bootstrap objects, and every change writes a new copy into the seed's etcd; keys,
	// tokens and certificates are a few KiB each.
	DefaultAdditionalSecretResourcesMaxBytes = 256 << 10
	// Half of the workers: a project with many shoots still reconciles them in parallel (10 at
	// once with the chart's 20 workers), and a project whose reconciles hang leaves the other
	// half to the rest of the seed.
	DefaultProjectWorkersPercent = 50
	// Two of the chart's 20 workers: one is enough for a project with nothing in flight to get
	// the next free worker before the projects holding the others; the second serves it at once
	// while one more project starts a reconcile. Projects with reconciles in flight share the
	// other 18.
	DefaultReservedWorkersPercent = 10
)

// SetDefaults_Limits sets the default limits.
func SetDefaults_Limits(obj *Limits) {
	knownHosts, privateKey := sshkey.DefaultKnownHostsLimits(), sshkey.DefaultPrivateKeyLimits()
	for _, l := range []struct {
		field **int32
		value int32
	}{
		{&obj.ProjectConfigMapMaxBytes, DefaultProjectConfigMapMaxBytes},
		{&obj.ProjectConfigMaxBytes, DefaultProjectConfigMaxBytes},
		{&obj.ProviderConfigMaxBytes, DefaultProviderConfigMaxBytes},
		{&obj.KluctlArgsMaxBytes, DefaultKluctlArgsMaxBytes},
		{&obj.ControllersMaxBytes, DefaultControllersMaxBytes},
		{&obj.AdditionalSecretResourcesMaxCount, DefaultAdditionalSecretResourcesMaxCount},
		{&obj.AdditionalSecretResourcesMaxBytes, DefaultAdditionalSecretResourcesMaxBytes},
		// The known_hosts, private key and deploy key limits are owned by the packages that enforce them, where
		// their reasons are written down.
		{&obj.KnownHostsMaxBytes, int32(knownHosts.MaxBytes)},
		{&obj.KnownHostsMaxLines, int32(knownHosts.MaxLines)},
		{&obj.HostPatternMaxLength, int32(knownHosts.MaxPatternLength)},
		{&obj.HostPatternMaxWildcards, int32(knownHosts.MaxWildcards)},
		{&obj.PrivateKeyMaxBytes, int32(privateKey.MaxBytes)},
		{&obj.PrivateKeyMaxBits, int32(privateKey.MaxBits)},
		{&obj.DeployKeysMaxEntries, int32(constants.DefaultDeployKeysMaxDataKeys)},
		{&obj.DeployKeysMaxRotatedKeys, int32(constants.DefaultDeployKeysMaxRotatedKeys)},
		{&obj.ProjectWorkersPercent, DefaultProjectWorkersPercent},
		{&obj.ReservedWorkersPercent, DefaultReservedWorkersPercent},
	} {
		if *l.field == nil {
			*l.field = ptr.To(l.value)
		}
	}
}

// SetDefaults_SSHKeyConfig sets the defaults of generated deploy keys.
func SetDefaults_SSHKeyConfig(obj *SSHKeyConfig) {
	if obj.Algorithm == nil {
		obj.Algorithm = ptr.To(KeyAlgorithmEd25519)
	}
	if obj.Scope == nil {
		obj.Scope = ptr.To(KeyScopeRepository)
	}
}

// SetDefaults_Timeouts sets the default timeouts.
func SetDefaults_Timeouts(obj *Timeouts) {
	if obj.ManagedResourceApplied == nil {
		obj.ManagedResourceApplied = &metav1.Duration{Duration: defaultManagedResourceAppliedTimeout}
	}
	if obj.Deletion == nil {
		obj.Deletion = &metav1.Duration{Duration: defaultDeletionTimeout}
	}
	if obj.HostKeyScan == nil {
		obj.HostKeyScan = &metav1.Duration{Duration: defaultHostKeyScanTimeout}
	}
	if obj.BootstrapFinalizers == nil {
		obj.BootstrapFinalizers = &metav1.Duration{Duration: defaultBootstrapFinalizersTimeout}
	}
}
