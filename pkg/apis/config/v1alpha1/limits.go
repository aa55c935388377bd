// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
)

// DefaultLimits returns the default limits in the internal form, for the admission, which takes
// the limits as flags with these defaults rather than from a configuration file.
func DefaultLimits() config.Limits {
	versioned := &Limits{}
	SetDefaults_Limits(versioned)
	var out config.Limits
	// The generated conversion only copies fields and cannot fail.
	_ = Convert_v1alpha1_Limits_To_config_Limits(versioned, &out, nil)
	return out
}
