// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +groupName=shoot-flux.extensions.gardener.cloud

// Package flux holds the internal, fully defaulted form of the shoot-flux provider configuration and
// status. The actuator works with these value types only; users write the versioned types.
package flux
