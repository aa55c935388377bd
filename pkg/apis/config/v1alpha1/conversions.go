// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
)

// The internal sections are values, the versioned ones pointers so that an omitted section can be
// defaulted; conversion-gen cannot bridge pointer and value kinds on its own.

// Convert_Pointer_v1alpha1_SSHKeyConfig_To_config_SSHKeyConfig converts an optional SSHKeyConfig.
func Convert_Pointer_v1alpha1_SSHKeyConfig_To_config_SSHKeyConfig(in **SSHKeyConfig, out *config.SSHKeyConfig, s conversion.Scope) error {
	if *in == nil {
		*out = config.SSHKeyConfig{}
		return nil
	}
	return Convert_v1alpha1_SSHKeyConfig_To_config_SSHKeyConfig(*in, out, s)
}

// Convert_config_SSHKeyConfig_To_Pointer_v1alpha1_SSHKeyConfig converts an SSHKeyConfig.
func Convert_config_SSHKeyConfig_To_Pointer_v1alpha1_SSHKeyConfig(in *config.SSHKeyConfig, out **SSHKeyConfig, s conversion.Scope) error {
	*out = &SSHKeyConfig{}
	return Convert_config_SSHKeyConfig_To_v1alpha1_SSHKeyConfig(in, *out, s)
}

// Convert_Pointer_v1alpha1_Timeouts_To_config_Timeouts converts optional Timeouts.
func Convert_Pointer_v1alpha1_Timeouts_To_config_Timeouts(in **Timeouts, out *config.Timeouts, s conversion.Scope) error {
	if *in == nil {
		*out = config.Timeouts{}
		return nil
	}
	return Convert_v1alpha1_Timeouts_To_config_Timeouts(*in, out, s)
}

// Convert_config_Timeouts_To_Pointer_v1alpha1_Timeouts converts Timeouts.
func Convert_config_Timeouts_To_Pointer_v1alpha1_Timeouts(in *config.Timeouts, out **Timeouts, s conversion.Scope) error {
	*out = &Timeouts{}
	return Convert_config_Timeouts_To_v1alpha1_Timeouts(in, *out, s)
}

// Convert_Pointer_v1alpha1_KeyAlgorithm_To_config_KeyAlgorithm converts an optional key algorithm.
func Convert_Pointer_v1alpha1_KeyAlgorithm_To_config_KeyAlgorithm(in **KeyAlgorithm, out *config.KeyAlgorithm, _ conversion.Scope) error {
	*out = ""
	if *in != nil {
		*out = config.KeyAlgorithm(**in)
	}
	return nil
}

// Convert_config_KeyAlgorithm_To_Pointer_v1alpha1_KeyAlgorithm converts a key algorithm.
func Convert_config_KeyAlgorithm_To_Pointer_v1alpha1_KeyAlgorithm(in *config.KeyAlgorithm, out **KeyAlgorithm, _ conversion.Scope) error {
	algorithm := KeyAlgorithm(*in)
	*out = &algorithm
	return nil
}

// Convert_Pointer_v1alpha1_KeyScope_To_config_KeyScope converts an optional key scope.
func Convert_Pointer_v1alpha1_KeyScope_To_config_KeyScope(in **KeyScope, out *config.KeyScope, _ conversion.Scope) error {
	*out = ""
	if *in != nil {
		*out = config.KeyScope(**in)
	}
	return nil
}

// Convert_config_KeyScope_To_Pointer_v1alpha1_KeyScope converts a key scope.
func Convert_config_KeyScope_To_Pointer_v1alpha1_KeyScope(in *config.KeyScope, out **KeyScope, _ conversion.Scope) error {
	scope := KeyScope(*in)
	*out = &scope
	return nil
}

// Convert_Pointer_v1alpha1_HostPolicy_To_config_HostPolicy converts an optional HostPolicy.
func Convert_Pointer_v1alpha1_HostPolicy_To_config_HostPolicy(in **HostPolicy, out *config.HostPolicy, s conversion.Scope) error {
	if *in == nil {
		*out = config.HostPolicy{}
		return nil
	}
	return Convert_v1alpha1_HostPolicy_To_config_HostPolicy(*in, out, s)
}

// Convert_config_HostPolicy_To_Pointer_v1alpha1_HostPolicy converts a HostPolicy; an empty one is
// left out.
func Convert_config_HostPolicy_To_Pointer_v1alpha1_HostPolicy(in *config.HostPolicy, out **HostPolicy, s conversion.Scope) error {
	if len(in.AllowedNetworks) == 0 && len(in.AllowedPorts) == 0 {
		*out = nil
		return nil
	}
	*out = &HostPolicy{}
	return Convert_config_HostPolicy_To_v1alpha1_HostPolicy(in, *out, s)
}

// Convert_Pointer_v1alpha1_Limits_To_config_Limits converts optional Limits.
func Convert_Pointer_v1alpha1_Limits_To_config_Limits(in **Limits, out *config.Limits, s conversion.Scope) error {
	if *in == nil {
		*out = config.Limits{}
		return nil
	}
	return Convert_v1alpha1_Limits_To_config_Limits(*in, out, s)
}

// Convert_config_Limits_To_Pointer_v1alpha1_Limits converts Limits.
func Convert_config_Limits_To_Pointer_v1alpha1_Limits(in *config.Limits, out **Limits, s conversion.Scope) error {
	*out = &Limits{}
	return Convert_config_Limits_To_v1alpha1_Limits(in, *out, s)
}

// Convert_Pointer_v1alpha1_Monitoring_To_config_Monitoring converts an optional Monitoring.
func Convert_Pointer_v1alpha1_Monitoring_To_config_Monitoring(in **Monitoring, out *config.Monitoring, s conversion.Scope) error {
	if *in == nil {
		*out = config.Monitoring{}
		return nil
	}
	return Convert_v1alpha1_Monitoring_To_config_Monitoring(*in, out, s)
}

// Convert_config_Monitoring_To_Pointer_v1alpha1_Monitoring converts a Monitoring.
func Convert_config_Monitoring_To_Pointer_v1alpha1_Monitoring(in *config.Monitoring, out **Monitoring, s conversion.Scope) error {
	*out = &Monitoring{}
	return Convert_config_Monitoring_To_v1alpha1_Monitoring(in, *out, s)
}

// Convert_Pointer_v1alpha1_ShootMonitoring_To_config_ShootMonitoring converts an optional
// ShootMonitoring.
func Convert_Pointer_v1alpha1_ShootMonitoring_To_config_ShootMonitoring(in **ShootMonitoring, out *config.ShootMonitoring, s conversion.Scope) error {
	if *in == nil {
		*out = config.ShootMonitoring{}
		return nil
	}
	return Convert_v1alpha1_ShootMonitoring_To_config_ShootMonitoring(*in, out, s)
}

// Convert_config_ShootMonitoring_To_Pointer_v1alpha1_ShootMonitoring converts a ShootMonitoring.
func Convert_config_ShootMonitoring_To_Pointer_v1alpha1_ShootMonitoring(in *config.ShootMonitoring, out **ShootMonitoring, s conversion.Scope) error {
	*out = &ShootMonitoring{}
	return Convert_config_ShootMonitoring_To_v1alpha1_ShootMonitoring(in, *out, s)
}

// Convert_Pointer_v1alpha1_Rollout_To_config_Rollout converts an optional Rollout.
func Convert_Pointer_v1alpha1_Rollout_To_config_Rollout(in **Rollout, out *config.Rollout, s conversion.Scope) error {
	if *in == nil {
		*out = config.Rollout{}
		return nil
	}
	return Convert_v1alpha1_Rollout_To_config_Rollout(*in, out, s)
}

// Convert_config_Rollout_To_Pointer_v1alpha1_Rollout converts a Rollout.
func Convert_config_Rollout_To_Pointer_v1alpha1_Rollout(in *config.Rollout, out **Rollout, s conversion.Scope) error {
	*out = &Rollout{}
	return Convert_config_Rollout_To_v1alpha1_Rollout(in, *out, s)
}

// Convert_Pointer_v1alpha1_RolloutWindow_To_config_RolloutWindow converts an optional rollout window.
func Convert_Pointer_v1alpha1_RolloutWindow_To_config_RolloutWindow(in **RolloutWindow, out *config.RolloutWindow, _ conversion.Scope) error {
	*out = ""
	if *in != nil {
		*out = config.RolloutWindow(**in)
	}
	return nil
}

// Convert_config_RolloutWindow_To_Pointer_v1alpha1_RolloutWindow converts a rollout window.
func Convert_config_RolloutWindow_To_Pointer_v1alpha1_RolloutWindow(in *config.RolloutWindow, out **RolloutWindow, _ conversion.Scope) error {
	window := RolloutWindow(*in)
	*out = &window
	return nil
}

// Convert_Pointer_v1alpha1_Releases_To_config_Releases converts optional release lifecycles.
func Convert_Pointer_v1alpha1_Releases_To_config_Releases(in **Releases, out *config.Releases, s conversion.Scope) error {
	if *in == nil {
		*out = config.Releases{}
		return nil
	}
	return Convert_v1alpha1_Releases_To_config_Releases(*in, out, s)
}

// Convert_config_Releases_To_Pointer_v1alpha1_Releases converts release lifecycles; none are
// written as none.
func Convert_config_Releases_To_Pointer_v1alpha1_Releases(in *config.Releases, out **Releases, s conversion.Scope) error {
	if len(in.Flux) == 0 && len(in.Kluctl) == 0 {
		*out = nil
		return nil
	}
	*out = &Releases{}
	return Convert_config_Releases_To_v1alpha1_Releases(in, *out, s)
}

// Convert_Pointer_v1alpha1_ReleaseClassification_To_config_ReleaseClassification converts an
// optional classification.
func Convert_Pointer_v1alpha1_ReleaseClassification_To_config_ReleaseClassification(in **ReleaseClassification, out *config.ReleaseClassification, _ conversion.Scope) error {
	*out = ""
	if *in != nil {
		*out = config.ReleaseClassification(**in)
	}
	return nil
}

// Convert_config_ReleaseClassification_To_Pointer_v1alpha1_ReleaseClassification converts a
// classification.
func Convert_config_ReleaseClassification_To_Pointer_v1alpha1_ReleaseClassification(in *config.ReleaseClassification, out **ReleaseClassification, _ conversion.Scope) error {
	c := ReleaseClassification(*in)
	*out = &c
	return nil
}
