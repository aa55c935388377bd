// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the group of the shoot-flux provider configuration and status.
const GroupName = "shoot-flux.extensions.gardener.cloud"

// SchemeGroupVersion is the version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// The generated conversions register themselves with localSchemeBuilder in an init function.
	localSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, RegisterDefaults)
	// AddToScheme adds the versioned types, their defaults and conversions to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&FluxConfig{},
		&FluxStatus{},
	)
	return nil
}
