// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
)

var _ = Describe("Manager", func() {
	setUpManager()

	Describe("rotation", func() {
		setUpRotation()

		It("replaces the key pair once and removes the annotation", func() {
			annotate("true")
			rotated, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(rotated.Rotated).To(BeTrue())
			Expect(rotated.Fingerprint).NotTo(Equal(original.Fingerprint))
			Expect(rotated.AuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo\n"))
			Expect(rotated.KnownHosts).To(Equal(original.KnownHosts))

			secret := getSecret(c, constants.DeployKeysSecretName)
			Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
			Expect(secret.Data[identityKey]).To(Equal(rotated.PrivateKey))
			Expect(string(secret.Data[identityPub])).To(Equal(rotated.AuthorizedKey))
			Expect(secret.Data[constants.SecretKeyKnownHosts]).To(Equal(original.KnownHosts))

			again, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Rotated).To(BeFalse())
			Expect(again.Fingerprint).To(Equal(rotated.Fingerprint))
		})

		Describe("staged", func() {
			prepare := func(value string) {
				secret := getSecret(c, constants.DeployKeysSecretName)
				metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotatePrepare, value)
				Expect(c.Update(ctx, secret)).To(Succeed())
			}

			It("shows the prepared key and keeps using the current one", func() {
				prepare(keyName)
				prepared, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(prepared.Rotated).To(BeFalse())
				Expect(prepared.PrivateKey).To(Equal(original.PrivateKey))
				Expect(prepared.Fingerprint).To(Equal(original.Fingerprint))
				Expect(prepared.NextFingerprint).To(HavePrefix("SHA256:"))
				Expect(prepared.NextFingerprint).NotTo(Equal(original.Fingerprint))
				Expect(prepared.NextAuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo\n"))

				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotatePrepare))
				Expect(secret.Data).To(HaveKey(keyName + ".next.identity"))
				Expect(string(secret.Data[keyName+".next.identity.pub"])).To(Equal(prepared.NextAuthorizedKey))

				By("a second preparation keeping the pending key the user may have registered")
				prepare("true")
				again, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(again.NextFingerprint).To(Equal(prepared.NextFingerprint))
				Expect(again.RotationSkipped).To(BeEmpty(), "pending keys are no foreign data keys")
			})

			It("switches to exactly the prepared key on rotation and removes the pending keys", func() {
				prepare("true")
				prepared, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				pending := getSecret(c, constants.DeployKeysSecretName).Data[keyName+".next.identity"]

				annotate("true")
				rotated, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(rotated.Rotated).To(BeTrue())
				Expect(rotated.RotationSkipped).To(BeEmpty(), "pending keys are no foreign data keys")
				Expect(rotated.PrivateKey).To(Equal(pending))
				Expect(rotated.Fingerprint).To(Equal(prepared.NextFingerprint))
				Expect(rotated.AuthorizedKey).To(Equal(prepared.NextAuthorizedKey))
				Expect(rotated.NextAuthorizedKey).To(BeEmpty())
				Expect(rotated.NextFingerprint).To(BeEmpty())

				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
				Expect(secret.Data).NotTo(HaveKey(keyName + ".next.identity"))
				Expect(secret.Data).NotTo(HaveKey(keyName + ".next.identity.pub"))
				Expect(secret.Data[identityKey]).To(Equal(pending))
			})

			It("refuses a rotation to an unusable pending key without replacing it, once", func() {
				secret := getSecret(c, constants.DeployKeysSecretName)
				secret.Data[keyName+".next.identity"] = []byte("broken")
				metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, "true")
				Expect(c.Update(ctx, secret)).To(Succeed())

				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred(), "the shoot keeps its key")
				Expect(key.Rotated).To(BeFalse())
				Expect(key.Fingerprint).To(Equal(original.Fingerprint))
				Expect(key.RotationRefused).To(ContainSubstring(`no usable pending private key in "` + keyName + `.next.identity"`))
				stored := getSecret(c, constants.DeployKeysSecretName)
				Expect(stored.Data[identityKey]).To(Equal(original.PrivateKey))
				Expect(stored.Annotations).NotTo(HaveKey(constants.AnnotationRotate), "not tried again on the next reconcile")
				Expect(stored.Annotations).To(HaveKeyWithValue(constants.AnnotationRotateRefused, key.RotationRefused))

				again, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(again.RotationRefused).To(BeEmpty(), "only the reconcile that refused reports it")
			})

			It("refuses a rotation to an oversized pending key before parsing it, once", func() {
				secret := getSecret(c, constants.DeployKeysSecretName)
				secret.Data[keyName+".next.identity"] = hugeKey
				metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, "true")
				Expect(c.Update(ctx, secret)).To(Succeed())

				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred(), "the shoot keeps its key")
				Expect(key.Rotated).To(BeFalse())
				Expect(key.Fingerprint).To(Equal(original.Fingerprint))
				Expect(key.NextFingerprint).To(BeEmpty())
				Expect(key.RotationRefused).To(ContainSubstring(fmt.Sprintf(`no usable pending private key in "%s.next.identity" (private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes))`, keyName, len(hugeKey))))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data[identityKey]).To(Equal(original.PrivateKey))
			})

			It("refuses a preparation that would exceed the data key limit before generating a key", func() {
				// The Secret holds known_hosts and one key pair; the pending pair adds two.
				m.MaxDataKeys = 5
				prepare("true")
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.RotationRefused).To(Equal("the pending key pairs would make 6 data keys, more than the 5 allowed; remove the key pairs no shoot uses"))
				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Data).NotTo(HaveKey(keyName + ".next.identity"))
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotatePrepare))
				Expect(secret.Annotations).To(HaveKeyWithValue(constants.AnnotationRotateRefused, key.RotationRefused))
			})
		})

		It("rotates only the keys the annotation names", func() {
			other := projectRequest()
			other.KeyName = deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/b")
			other.Repository = "git.example.org:22/org/b"
			otherKey, err := m.Ensure(ctx, log, other)
			Expect(err).NotTo(HaveOccurred())

			annotate(other.KeyName + ", no-such-key")
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Rotated).To(BeFalse())
			Expect(key.Fingerprint).To(Equal(original.Fingerprint))
			Expect(getSecret(c, constants.DeployKeysSecretName).Annotations).NotTo(HaveKey(constants.AnnotationRotate))

			rotatedOther, err := m.Ensure(ctx, log, other)
			Expect(err).NotTo(HaveOccurred())
			Expect(rotatedOther.Fingerprint).NotTo(Equal(otherKey.Fingerprint), "rotated by the first reconcile that saw the annotation")
		})

		It("counts generated and rotated keys in the metrics, every key of a rotation of all", func() {
			generated := metricValue("shoot_flux_deploy_keys_generated_total", "", "")
			rotatedKeys := metricValue("shoot_flux_deploy_keys_rotated_total", "", "")
			other := projectRequest()
			other.KeyName = deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/b")
			other.Repository = "git.example.org:22/org/b"
			_, err := m.Ensure(ctx, log, other)
			Expect(err).NotTo(HaveOccurred())
			Expect(metricValue("shoot_flux_deploy_keys_generated_total", "", "")).To(Equal(generated + 1))

			annotate("true")
			_, err = m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(metricValue("shoot_flux_deploy_keys_rotated_total", "", "")).To(Equal(rotatedKeys+2), "both keys were replaced")
			_, err = m.Ensure(ctx, log, other)
			Expect(err).NotTo(HaveOccurred())
			Expect(metricValue("shoot_flux_deploy_keys_rotated_total", "", "")).To(Equal(rotatedKeys+2), "the other shoot only picks its new key up")
			Expect(metricValue("shoot_flux_deploy_keys_generated_total", "", "")).To(Equal(generated + 1))
		})

		Describe("a request that cannot finish", func() {
			// fabricate adds n key pairs of the extension's naming with a 1-byte private key, as a
			// project admin can write them: each is an own key pair a rotation of all generates.
			fabricate := func(n int) {
				secret := getSecret(c, constants.DeployKeysSecretName)
				for i := range n {
					repository := fmt.Sprintf("git.example.org:22/org/fake-%04d", i)
					name := deploykey.KeyName(deploykey.ScopeRepository, "", repository)
					identity, _ := deploykey.DataKeys(name)
					secret.Data[identity] = []byte("x")
					secret.Data[name+".repository"] = []byte(repository)
				}
				Expect(c.Update(ctx, secret)).To(Succeed())
			}

			It("is refused before any key is generated when it needs more keys than one rotation may generate", func() {
				m.MaxRotatedKeys = 10
				fabricate(10)
				rotatedKeys := metricValue("shoot_flux_deploy_keys_rotated_total", "", "")
				annotate("true")
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.RotationRefused).To(Equal("the request needs 11 new key pairs, more than the 10 one rotation may generate; name the key pairs in batches (" +
					constants.AnnotationRotate + "=<name>,<name>)"))
				Expect(key.Fingerprint).To(Equal(original.Fingerprint))
				Expect(metricValue("shoot_flux_deploy_keys_rotated_total", "", "")).To(Equal(rotatedKeys))
				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
				Expect(secret.Annotations).To(HaveKey(constants.AnnotationRotateRefused))

				By("carrying out a request within the limit, which removes the refusal")
				annotate(keyName)
				key, err = m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Rotated).To(BeTrue())
				Expect(key.RotationRefused).To(BeEmpty())
				Expect(getSecret(c, constants.DeployKeysSecretName).Annotations).NotTo(HaveKey(constants.AnnotationRotateRefused))
			})

			It("is refused when it would exceed the data key limit, with rotate and prepare at once", func() {
				fabricate(3)
				// known_hosts, 1 real and 3 fabricated pairs (3 + 3×2 keys): 10; preparing all adds 8.
				m.MaxDataKeys = 17
				secret := getSecret(c, constants.DeployKeysSecretName)
				metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, "true")
				metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotatePrepare, "true")
				Expect(c.Update(ctx, secret)).To(Succeed())
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.RotationRefused).To(ContainSubstring("would make 18 data keys, more than the 17 allowed"))
				secret = getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotatePrepare))
				Expect(secret.Data).To(HaveLen(10))
			})

			It("stops generating keys when the reconcile's context ends and keeps the request", func() {
				fabricate(3)
				annotate("true")
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				_, err := m.Ensure(cancelled, log, req)
				Expect(err).To(MatchError(context.Canceled))
				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Annotations).To(HaveKey(constants.AnnotationRotate), "the next reconcile carries it out")
				Expect(secret.Data[identityKey]).To(Equal(original.PrivateKey))
			})
		})
	})
})
