// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// statusConfigMap returns the ConfigMap shoot-flux-status, the part of the Extension's
// providerStatus that a shoot owner needs and may see without access to the seed: what is
// deployed from where, and the public deploy key to register at the repository. The keys are
// those of the providerStatus. The fields are picked one by one, so that nothing added to the
// providerStatus later reaches the shoot unreviewed; the status never holds a private key.
func statusConfigMap(namespace string, status *fluxv1alpha1.FluxStatus) *corev1.ConfigMap {
	data := map[string]string{}
	for key, value := range map[string]string{
		"bootstrapMode":     status.BootstrapMode,
		"fluxVersion":       status.FluxVersion,
		"management":        status.Management,
		"handedOverVersion": status.HandedOverVersion,
		"kluctlVersion":     status.KluctlVersion,
		"repository":        status.Repository,
		"ref":               status.Ref,
		"publicKey":         status.PublicKey,
		"fingerprint":       status.Fingerprint,
		"nextPublicKey":     status.NextPublicKey,
		"nextFingerprint":   status.NextFingerprint,
		"warnings":          strings.Join(status.Warnings, "\n"),
	} {
		if value != "" {
			data[key] = value
		}
	}
	if status.HandedOverAt != nil {
		data["handedOverAt"] = status.HandedOverAt.UTC().Format(time.RFC3339)
	}
	// A release change that waits for the maintenance time window, as the providerStatus tells it.
	if p := status.Pending; p != nil {
		for key, value := range map[string]string{"pendingFluxVersion": p.FluxVersion, "pendingKluctlVersion": p.KluctlVersion, "pendingReason": p.Reason} {
			if value != "" {
				data[key] = value
			}
		}
		if p.NextMaintenance != nil {
			data["nextMaintenance"] = p.NextMaintenance.UTC().Format(time.RFC3339)
		}
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: constants.StatusConfigMapName, Namespace: namespace, Labels: labels()},
		Data:       data,
	}
}
