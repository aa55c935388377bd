// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config
// +k8s:defaulter-gen=TypeMeta

// Package v1alpha1 is the versioned configuration of the shoot-flux extension controller.
// +groupName=shoot-flux.extensions.config.gardener.cloud
package v1alpha1
