// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package install registers the shoot-flux provider configuration and status with a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

var (
	schemeBuilder = runtime.NewSchemeBuilder(
		v1alpha1.AddToScheme,
		flux.AddToScheme,
		setVersionPriority,
	)

	// AddToScheme adds the internal and all versioned types to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func setVersionPriority(scheme *runtime.Scheme) error {
	return scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion)
}

// Install adds the internal and all versioned types to a scheme and panics on error.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(AddToScheme(scheme))
}

// NewScheme returns a scheme with the internal and all versioned types.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	Install(scheme)
	return scheme
}

// NewStrictDecoder returns a decoder that converts any version known to scheme into the internal
// types and applies defaults. It rejects unknown and duplicate fields, so that a misspelt option is
// an error instead of being silently ignored.
func NewStrictDecoder(scheme *runtime.Scheme) runtime.Decoder {
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()
}
