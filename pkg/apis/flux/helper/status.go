// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// The status is read by the restart check, the health check and the tests, and written by the
// actuator: all of them go through this codec, so a renamed field cannot silently diverge.
var statusCodecs = serializer.NewCodecFactory(install.NewScheme())

// EncodeStatus serialises the Extension providerStatus with its apiVersion and kind.
func EncodeStatus(status *v1alpha1.FluxStatus) (*runtime.RawExtension, error) {
	raw, err := runtime.Encode(statusCodecs.LegacyCodec(v1alpha1.SchemeGroupVersion), status)
	if err != nil {
		return nil, fmt.Errorf("failed encoding provider status: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// DecodeStatus reads an Extension providerStatus; nil (without error) when there is none yet.
// It is lenient about unknown fields: a status written by a newer or older release must not stop
// the reconciliation that replaces it.
func DecodeStatus(raw *runtime.RawExtension) (*v1alpha1.FluxStatus, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	status := &v1alpha1.FluxStatus{}
	if _, _, err := statusCodecs.UniversalDeserializer().Decode(raw.Raw, nil, status); err != nil {
		return nil, fmt.Errorf("failed decoding provider status: %w", err)
	}
	return status, nil
}
