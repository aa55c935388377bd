// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ConfigMapHash identifies the data of a project ConfigMap that Resolve reads; nil (no ConfigMap)
// hashes to "". An Extension's providerStatus records the hash of the ConfigMap its deployment was
// built from, so that the extension can tell after a restart which shoots missed a change.
func ConfigMapHash(cm *corev1.ConfigMap) string {
	if cm == nil {
		return ""
	}
	keys := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		// NUL cannot occur in a ConfigMap key, so key/value boundaries are unambiguous.
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(cm.Data[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
