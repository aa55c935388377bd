// Package validation validates the controller configuration.
package validation

import (
	"slices"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxvalidation "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
)

var (
	keyAlgorithms = []string{string(config.KeyAlgorithmEd25519), string(config.KeyAlgorithmRSA4096)}
	keyScopes     = []string{string(config.KeyScopeProject), string(config.KeyScopeShoot)}
)

// ValidateControllerConfiguration validates a defaulted controller configuration.
func ValidateControllerConfiguration(cfg *config.ControllerConfiguration) field.ErrorList {
	allErrs := field.ErrorList{}

	if cfg.DefaultFluxVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("defaultFluxVersion"), "must not be empty"))
	}
	if cfg.DefaultKluctlVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("defaultKluctlVersion"), "must not be empty"))
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
		if _, err := hostpolicy.New([]string{cidr}, nil, nil); err != nil {
			allErrs = append(allErrs, field.Invalid(hostPolicyPath.Child("allowedNetworks").Index(i), cidr, "must be a CIDR, e.g. 10.20.0.0/16"))
		}
	}
	for i, port := range cfg.HostPolicy.AllowedPorts {
		if _, err := hostpolicy.ParsePortRange(port); err != nil {
			allErrs = append(allErrs, field.Invalid(hostPolicyPath.Child("allowedPorts").Index(i), port, "must be a port 1-65535 or a range like 1024-65535"))
		}
	}

	// The registry replaces the host part of image references, so it cannot carry a scheme.
	if r := cfg.Registry; r != "" && (strings.Contains(r, "://") || strings.HasSuffix(r, "/") || strings.IndexFunc(r, unicode.IsSpace) >= 0) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("registry"), r, `must be a registry host with an optional path, e.g. "registry.example.com/mirror", without scheme, whitespace or trailing "/"`))
	}

	timeoutsPath := field.NewPath("timeouts")
	for _, t := range []struct {
		name string
		d    metav1.Duration
	}{
		{"managedResourceApplied", cfg.Timeouts.ManagedResourceApplied},
		{"deletion", cfg.Timeouts.Deletion},
		{"hostKeyScan", cfg.Timeouts.HostKeyScan},
	} {
		allErrs = append(allErrs, fluxvalidation.ValidatePositiveDuration(&t.d, timeoutsPath.Child(t.name))...)
	}

	if hc := cfg.HealthCheckConfig; hc != nil {
		allErrs = append(allErrs, fluxvalidation.ValidatePositiveDuration(&hc.SyncPeriod, field.NewPath("healthCheckConfig", "syncPeriod"))...)
	}
	return allErrs
}
