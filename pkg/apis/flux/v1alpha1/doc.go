// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux
// +k8s:defaulter-gen=TypeMeta

// Package v1alpha1 is the versioned shoot-flux provider configuration (FluxConfig) and status
// (FluxStatus). Every optional field is a pointer so that the configuration layers (operator
// defaults, project ConfigMap, Extension providerConfig) can be merged field by field.
// +groupName=shoot-flux.extensions.gardener.cloud
package v1alpha1
