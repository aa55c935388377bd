// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +groupName=shoot-flux.extensions.config.gardener.cloud

// Package config holds the internal, fully defaulted form of the extension controller's component
// configuration.
package config
