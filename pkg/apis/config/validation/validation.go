// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package validation validates the controller configuration.
package validation

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxhelper "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxvalidation "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/imageregistry"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Upper bounds of the timeouts.
const (
	MaxManagedResourceAppliedTimeout = 10 * time.Minute
	MaxDeletionTimeout               = 30 * time.Minute
	MaxHostKeyScanTimeout            = time.Minute
	MaxBootstrapFinalizersTimeout    = 10 * time.Minute
)

var (
	keyAlgorithms = []string{string(config.KeyAlgorithmEd25519), string(config.KeyAlgorithmRSA4096)}
	keyScopes     = []string{string(config.KeyScopeRepository), string(config.KeyScopeShoot), string(config.KeyScopeProject)}
)

// ValidateControllerConfiguration validates a defaulted controller configuration.
func ValidateControllerConfiguration(cfg *config.ControllerConfiguration) field.ErrorList {
	allErrs := field.ErrorList{}

	allErrs = append(allErrs, validateVersionSelector(cfg.DefaultFluxVersion, field.NewPath("defaultFluxVersion"))...)
	allErrs = append(allErrs, validateVersionSelector(cfg.DefaultKluctlVersion, field.NewPath("defaultKluctlVersion"))...)

	if w := cfg.Rollout.Window; w != config.RolloutWindowMaintenance && w != config.RolloutWindowImmediate {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("rollout", "window"), w, []config.RolloutWindow{config.RolloutWindowMaintenance, config.RolloutWindowImmediate}))
	}
	sshKeyPath := field.NewPath("sshKey")
	if !slices.Contains(keyAlgorithms, string(cfg.SSHKey.Algorithm)) {
		allErrs = append(allErrs, field.NotSupported(sshKeyPath.Child("algorithm"), cfg.SSHKey.Algorithm, keyAlgorithms))
	}
	if !slices.Contains(keyScopes, string(cfg.SSHKey.Scope)) {
		allErrs = append(allErrs, field.NotSupported(sshKeyPath.Child("scope"), cfg.SSHKey.Scope, keyScopes))
	}

	allErrs = append(allErrs, fluxvalidation.ValidateKnownHosts(cfg.KnownHosts, field.NewPath("knownHosts"))...)

	hostPolicyPath := field.NewPath("hostPolicy")
	for i, cidr := range cfg.HostPolicy.AllowedNetworks {
		if _, err := hostpolicy.ParseNetwork(cidr); err != nil {
			allErrs = append(allErrs, field.Invalid(hostPolicyPath.Child("allowedNetworks").Index(i), cidr, "must be a CIDR, e.g. 10.20.0.0/16"))
		}
	}
	for i, port := range cfg.HostPolicy.AllowedPorts {
		if _, err := hostpolicy.ParsePortRange(port); err != nil {
			allErrs = append(allErrs, field.Invalid(hostPolicyPath.Child("allowedPorts").Index(i), port, "must be a port 1-65535 or a range like 1024-65535"))
		}
	}

	if err := imageregistry.Validate(cfg.Registry); err != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("registry"), cfg.Registry, err.Error()))
	}
	if f := cfg.ImagePullSecretFile; f != "" && !filepath.IsAbs(f) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("imagePullSecretFile"), f, "must be an absolute path"))
	}
	allErrs = append(allErrs, validateControllers(cfg.Controllers, field.NewPath("controllers"))...)

	// Every wait holds one of the controller's workers; an unbounded one lets a few broken shoots
	// stall all others.
	timeoutsPath := field.NewPath("timeouts")
	for _, t := range []struct {
		name string
		d    metav1.Duration
		max  time.Duration
	}{
		{"managedResourceApplied", cfg.Timeouts.ManagedResourceApplied, MaxManagedResourceAppliedTimeout},
		{"deletion", cfg.Timeouts.Deletion, MaxDeletionTimeout},
		{"hostKeyScan", cfg.Timeouts.HostKeyScan, MaxHostKeyScanTimeout},
		{"bootstrapFinalizers", cfg.Timeouts.BootstrapFinalizers, MaxBootstrapFinalizersTimeout},
	} {
		path := timeoutsPath.Child(t.name)
		allErrs = append(allErrs, fluxvalidation.ValidatePositiveDuration(&t.d, path)...)
		if t.d.Duration > t.max {
			allErrs = append(allErrs, field.Invalid(path, t.d.Duration.String(), fmt.Sprintf("must be at most %s", t.max)))
		}
	}

	allErrs = append(allErrs, validateLimits(cfg.Limits, field.NewPath("limits"))...)

	if hc := cfg.HealthCheckConfig; hc != nil {
		allErrs = append(allErrs, fluxvalidation.ValidatePositiveDuration(&hc.SyncPeriod, field.NewPath("healthCheckConfig", "syncPeriod"))...)
	}
	return allErrs
}

// validateControllers validates the operator's controller settings with the rules of the shoots'
// configuration layers.
func validateControllers(controllers map[string]config.ControllerSettings, fldPath *field.Path) field.ErrorList {
	internal := make(map[string]flux.ControllerSettings, len(controllers))
	for key, s := range controllers {
		internal[key] = flux.ControllerSettings{
			Resources:         s.Resources,
			Tolerations:       s.Tolerations,
			NodeSelector:      s.NodeSelector,
			PriorityClassName: ptr.Deref(s.PriorityClassName, ""),
			Concurrent:        s.Concurrent,
		}
	}
	allErrs := fluxvalidation.ValidateControllers(internal, fldPath)
	for key, s := range controllers {
		allErrs = append(allErrs, fluxvalidation.ValidateNotEmptyIfSet(s.PriorityClassName, fldPath.Child(key, "priorityClassName"))...)
	}
	return allErrs
}

// validateVersionSelector checks the form of a default version. Whether it selects an embedded
// release is checked where the configuration is resolved, against the releases of the running
// binary, so that the error names the release list the shoots see.
func validateVersionSelector(version string, fldPath *field.Path) field.ErrorList {
	if version == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty")}
	}
	if _, ok := fluxhelper.CanonicalVersionSelector(version); !ok {
		return field.ErrorList{field.Invalid(fldPath, version, "must be a release (e.g. v2.9.5) or a minor (e.g. v2.9 or v2.9.x), whose newest embedded patch is selected")}
	}
	return nil
}

// validateLimits checks that every limit is positive: a limit of zero would refuse every input,
// and no limit at all is what the limits exist to prevent.
func validateLimits(l config.Limits, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"projectConfigMapMaxBytes", l.ProjectConfigMapMaxBytes},
		{"projectConfigMaxBytes", l.ProjectConfigMaxBytes},
		{"providerConfigMaxBytes", l.ProviderConfigMaxBytes},
		{"kluctlArgsMaxBytes", l.KluctlArgsMaxBytes},
		{"controllersMaxBytes", l.ControllersMaxBytes},
		{"additionalSecretResourcesMaxCount", l.AdditionalSecretResourcesMaxCount},
		{"additionalSecretResourcesMaxBytes", l.AdditionalSecretResourcesMaxBytes},
		{"knownHostsMaxBytes", l.KnownHostsMaxBytes},
		{"knownHostsMaxLines", l.KnownHostsMaxLines},
		{"hostPatternMaxLength", l.HostPatternMaxLength},
		{"hostPatternMaxWildcards", l.HostPatternMaxWildcards},
		{"privateKeyMaxBytes", l.PrivateKeyMaxBytes},
		{"privateKeyMaxBits", l.PrivateKeyMaxBits},
		{"deployKeysMaxEntries", l.DeployKeysMaxEntries},
		{"deployKeysMaxRotatedKeys", l.DeployKeysMaxRotatedKeys},
		{"projectWorkersPercent", l.ProjectWorkersPercent},
		{"reservedWorkersPercent", l.ReservedWorkersPercent},
	} {
		if f.value <= 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, "must be positive"))
		}
	}
	if l.ProjectWorkersPercent > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("projectWorkersPercent"), l.ProjectWorkersPercent, "must not exceed 100"))
	}
	if l.ReservedWorkersPercent > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("reservedWorkersPercent"), l.ReservedWorkersPercent, "must not exceed 100"))
	}
	// A larger key cannot log in at an OpenSSH-based git server, and x/crypto refuses it in OpenSSH
	// format whatever the limit.
	if l.PrivateKeyMaxBits > sshkey.MaxRSABits {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("privateKeyMaxBits"), l.PrivateKeyMaxBits,
			fmt.Sprintf("must not exceed %d, the largest RSA key OpenSSH accepts", sshkey.MaxRSABits)))
	}
	// config.yaml is one of the ConfigMap's keys; a larger limit for it could never be reached.
	if l.ProjectConfigMaxBytes > l.ProjectConfigMapMaxBytes {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("projectConfigMaxBytes"), l.ProjectConfigMaxBytes,
			fmt.Sprintf("must not exceed projectConfigMapMaxBytes (%d)", l.ProjectConfigMapMaxBytes)))
	}
	return allErrs
}
