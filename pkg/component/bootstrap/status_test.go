// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"strings"
	"time"

	testutils "github.com/gardener/gardener/pkg/utils/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
)

var _ = Describe("Status ConfigMap", func() {
	const privateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"

	status := func() *fluxv1alpha1.FluxStatus {
		return &fluxv1alpha1.FluxStatus{
			FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2", Repository: "ssh://git@git.example.com/org/repo", Ref: "tag:v1.0.0",
			BootstrapMode: "kluctl", PublicKey: "ssh-ed25519 AAAA shoot-flux garden-foo git.example.com:22/org/repo\n", Fingerprint: "SHA256:abc",
			NextPublicKey: "ssh-ed25519 BBBB shoot-flux garden-foo git.example.com:22/org/repo\n", NextFingerprint: "SHA256:def",
			DeployKeySecret: "garden-foo/shoot-flux-deploy-keys", DeployKey: "repo.x", ProjectConfigHash: "hash",
			Warnings: []string{"first", "second"}, Message: "ok",
		}
	}

	It("tells the shoot owner what is deployed and the public deploy key, in the bootstrap namespace", func() {
		for mode, namespace := range map[fluxapi.BootstrapMode]string{fluxapi.BootstrapModeKluctl: "kluctl-system", fluxapi.BootstrapModeFlux: "flux-system"} {
			objs := objects(Values{Config: config(mode), URL: "ssh://git@git.example.com/org/repo", Status: status()})
			cm := objs["ConfigMap/"+namespace+"/shoot-flux-status"]
			Expect(cm).NotTo(BeNil(), "mode %s", mode)
			Expect(cm["data"]).To(Equal(map[string]any{
				"bootstrapMode": "kluctl", "fluxVersion": "v2.9.5", "kluctlVersion": "v2.28.2",
				"repository": "ssh://git@git.example.com/org/repo", "ref": "tag:v1.0.0",
				"publicKey": "ssh-ed25519 AAAA shoot-flux garden-foo git.example.com:22/org/repo\n", "fingerprint": "SHA256:abc",
				"nextPublicKey": "ssh-ed25519 BBBB shoot-flux garden-foo git.example.com:22/org/repo\n", "nextFingerprint": "SHA256:def",
				"warnings": "first\nsecond",
			}))
			Expect(cm["metadata"]).To(HaveKeyWithValue("labels", HaveKeyWithValue("app.kubernetes.io/managed-by", "gardener-extension-shoot-flux")))
		}
	})

	It("leaves out what the status does not have", func() {
		s := status()
		s.KluctlVersion, s.PublicKey, s.Fingerprint, s.NextPublicKey, s.NextFingerprint, s.Warnings = "", "", "", "", "", nil
		objs := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "https://git.example.com/org/repo", Status: s})
		Expect(objs["ConfigMap/flux-system/shoot-flux-status"]["data"]).To(Equal(map[string]any{
			"bootstrapMode": "kluctl", "fluxVersion": "v2.9.5", "repository": "ssh://git@git.example.com/org/repo", "ref": "tag:v1.0.0",
		}))
	})

	It("tells that the controllers were handed over, and since when", func() {
		s := status()
		s.Management = "handover"
		s.HandedOverVersion = "v2.7.5"
		at := metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
		s.HandedOverAt = &at
		objs := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "https://git.example.com/org/repo", Status: s})
		Expect(objs["ConfigMap/flux-system/shoot-flux-status"]["data"]).To(And(
			HaveKeyWithValue("management", "handover"),
			HaveKeyWithValue("handedOverVersion", "v2.7.5"),
			HaveKeyWithValue("handedOverAt", "2026-01-02T02:04:05Z"),
		))
	})

	It("tells the release change that waits for the maintenance time window, and when that begins", func() {
		s := status()
		at := metav1.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)
		s.Pending = &fluxv1alpha1.PendingRelease{FluxVersion: "v2.9.6", Reason: "Flux v2.9.6 is a newer release", NextMaintenance: &at}
		objs := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "https://git.example.com/org/repo", Status: s})
		Expect(objs["ConfigMap/flux-system/shoot-flux-status"]["data"]).To(And(
			HaveKeyWithValue("fluxVersion", "v2.9.5"),
			HaveKeyWithValue("pendingFluxVersion", "v2.9.6"),
			HaveKeyWithValue("pendingReason", "Flux v2.9.6 is a newer release"),
			HaveKeyWithValue("nextMaintenance", "2026-11-26T22:00:00Z"),
			Not(HaveKey("pendingKluctlVersion")),
		))
	})

	It("never holds the private key that the credentials Secret delivers", func() {
		data, err := Data(Values{
			Config: config(fluxapi.BootstrapModeKluctl), URL: "ssh://git@git.example.com/org/repo", Status: status(),
			Credentials: &Credentials{Host: "git.example.com", Data: map[string][]byte{"identity": []byte(privateKey)}},
		})
		Expect(err).NotTo(HaveOccurred())
		docs, err := testutils.ExtractManifestsFromManagedResourceData(data)
		Expect(err).NotTo(HaveOccurred())
		var statusDoc string
		for _, doc := range docs {
			if strings.Contains(doc, "name: shoot-flux-status") {
				statusDoc = doc
			}
		}
		Expect(statusDoc).To(ContainSubstring("kind: ConfigMap"))
		Expect(statusDoc).NotTo(Or(ContainSubstring("PRIVATE KEY"), ContainSubstring("b3BlbnNzaC1rZXktdjEAAAAA")))
	})

	It("is not delivered without status", func() {
		Expect(objects(Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo"})).NotTo(HaveKey(HaveSuffix("/shoot-flux-status")))
	})
})
