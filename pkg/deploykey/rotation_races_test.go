// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("Manager", func() {
	setUpManager()

	Describe("rotation", func() {
		setUpRotation()

		It("drops an annotation that names no key", func() {
			annotate("false")
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Rotated).To(BeFalse())
			Expect(key.Fingerprint).To(Equal(original.Fingerprint))
			Expect(getSecret(c, constants.DeployKeysSecretName).Annotations).NotTo(HaveKey(constants.AnnotationRotate))
		})

		It("replaces an unusable private key", func() {
			secret := getSecret(c, constants.DeployKeysSecretName)
			secret.Data[identityKey] = []byte("garbage")
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, "true")
			Expect(c.Update(ctx, secret)).To(Succeed())

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Rotated).To(BeTrue())
			Expect(sshkey.ParsePrivateKey(getSecret(c, constants.DeployKeysSecretName).Data[identityKey], sshkey.DefaultPrivateKeyLimits())).NotTo(BeNil())
		})

		It("produces one new key when many reconciles rotate at once", func() {
			annotate("true")
			const workers = 12
			// All reconciles see the rotation request before any of them rotates.
			m.Client = newClient(barrierOnGet(workers, func(obj client.Object, err error) bool {
				return err == nil && obj.GetAnnotations()[constants.AnnotationRotate] == "true"
			}), getSecret(c, constants.DeployKeysSecretName))
			c = m.Client.(client.WithWatch)
			results, errs := ensureConcurrently(ctx, m, req, workers)

			stored := getSecret(c, constants.DeployKeysSecretName)
			Expect(stored.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
			rotations := 0
			for i := range workers {
				Expect(errs[i]).NotTo(HaveOccurred())
				if results[i].Rotated {
					rotations++
					Expect(results[i].PrivateKey).To(Equal(stored.Data[identityKey]))
				}
				// A reconcile that read before the rotation may still return the old key; the
				// next one picks up the new key. No reconcile may return a third key.
				Expect(results[i].Fingerprint).To(BeElementOf(original.Fingerprint, fingerprintOf(stored)))
			}
			Expect(rotations).To(Equal(1))
			Expect(fingerprintOf(stored)).NotTo(Equal(original.Fingerprint))
		})

		Context("when a concurrent writer changes the Secret before our update", func() {
			var (
				competitor *sshkey.KeyPair
				updates    atomic.Int32
				// competingWrite runs inside our first update, on the stored Secret.
				competingWrite func(*corev1.Secret)
			)

			BeforeEach(func() {
				var err error
				competitor, err = sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux garden-foo")
				Expect(err).NotTo(HaveOccurred())
				updates.Store(0)
				c = newClient(interceptor.Funcs{
					Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						secret, ok := obj.(*corev1.Secret)
						if ok && secret.Annotations[constants.AnnotationRotate] == "" {
							current := &corev1.Secret{}
							Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), current)).To(Succeed())
							if current.Annotations[constants.AnnotationRotate] == "true" && updates.Add(1) == 1 {
								competingWrite(current)
								Expect(c.Update(ctx, current)).To(Succeed())
							}
						}
						return c.Update(ctx, obj, opts...)
					},
				})
			})

			It("uses the key of a concurrent rotation instead of overwriting it", func() {
				competingWrite = func(s *corev1.Secret) {
					delete(s.Annotations, constants.AnnotationRotate)
					s.Data[identityKey] = competitor.PrivateKey
					s.Data[identityPub] = []byte(competitor.AuthorizedKey)
				}
				annotate("true")
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Rotated).To(BeFalse())
				Expect(key.Fingerprint).To(Equal(competitor.Fingerprint))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data[identityKey]).To(Equal(competitor.PrivateKey))
			})

			It("retries the rotation when the concurrent change left the annotation", func() {
				competingWrite = func(s *corev1.Secret) {
					metav1.SetMetaDataLabel(&s.ObjectMeta, "team", "a")
				}
				annotate("true")
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Rotated).To(BeTrue())
				Expect(key.Fingerprint).NotTo(Equal(original.Fingerprint))
				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Labels).To(HaveKeyWithValue("team", "a"))
				Expect(secret.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
				Expect(fingerprintOf(secret)).To(Equal(key.Fingerprint))
			})
		})

		Describe("data keys that are no key pairs of the extension", func() {
			var (
				// foreign are data keys a project admin added: a key pair without a repository, one
				// named like the extension's whose repository does not make its name, and others.
				foreign map[string][]byte
				other   *deploykey.DeployKey
			)

			JustBeforeEach(func() {
				mine, err := sshkey.Generate(sshkey.AlgorithmED25519, "mine")
				Expect(err).NotTo(HaveOccurred())
				impostor := deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/impostor")
				foreign = map[string][]byte{
					"mine.identity":                mine.PrivateKey,
					"mine.identity.pub":            []byte(mine.AuthorizedKey),
					impostor + ".identity":         []byte("dummy"),
					impostor + ".repository":       []byte("git.example.org:22/org/not-the-impostor"),
					"shoot..x-0123456789.identity": []byte("dummy"),
					"notes":                        []byte("hands off"),
				}
				otherReq := projectRequest()
				otherReq.KeyName = deploykey.KeyName(deploykey.ScopeShoot, "bar", "git.example.org:22/org/b")
				otherReq.Repository = "git.example.org:22/org/b"
				other, err = m.Ensure(ctx, log, otherReq)
				Expect(err).NotTo(HaveOccurred())

				secret := getSecret(c, constants.DeployKeysSecretName)
				for k, v := range foreign {
					secret.Data[k] = v
				}
				Expect(c.Update(ctx, secret)).To(Succeed())
			})

			It("rotates all key pairs of the extension and leaves the others alone, reporting them", func() {
				annotate("true")
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Rotated).To(BeTrue())
				Expect(key.Fingerprint).NotTo(Equal(original.Fingerprint))

				secret := getSecret(c, constants.DeployKeysSecretName)
				for k, v := range foreign {
					Expect(secret.Data).To(HaveKeyWithValue(k, v))
				}
				otherIdentity, _ := deploykey.DataKeys(other.KeyName)
				Expect(secret.Data[otherIdentity]).NotTo(Equal(other.PrivateKey), "the shoot-scoped key pair is the extension's too")
				Expect(key.RotationSkipped).To(Equal(fmt.Sprintf(`"mine.identity", "mine.identity.pub", "notes", %q, %q and 1 more`,
					deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/impostor")+".identity",
					deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/impostor")+".repository")))

				again, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(again.RotationSkipped).To(BeEmpty(), "reported once, with the rotation")
			})

			It("leaves named data keys alone that are no key pairs of the extension, reporting them", func() {
				impostor := deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/impostor")
				long := strings.Repeat("x", 1000)
				annotate("mine, " + impostor + ", " + keyName + ", mine, " + long)
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Rotated).To(BeTrue())
				Expect(key.RotationSkipped).To(Equal(fmt.Sprintf(`"mine", %q, %q`, impostor, strings.Repeat("x", 253)+"...")))
				secret := getSecret(c, constants.DeployKeysSecretName)
				for k, v := range foreign {
					Expect(secret.Data).To(HaveKeyWithValue(k, v))
				}
			})

			It("does not offer a rotation for a broken key pair it would not rotate", func() {
				secret := getSecret(c, constants.DeployKeysSecretName)
				delete(secret.Data, keyName+".repository")
				secret.Data[identityKey] = []byte("garbage")
				Expect(c.Update(ctx, secret)).To(Succeed())
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(ContainSubstring("remove the data keys " + keyName + "* to get a new key")))
				Expect(err.Error()).NotTo(ContainSubstring(constants.AnnotationRotate))
			})
		})

		It("leaves a rotation another reconcile of the process is doing to it", func() {
			annotate("true")
			inUpdate, release := make(chan struct{}), make(chan struct{})
			var updates atomic.Int32
			m.Client = newClient(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if updates.Add(1) == 1 {
						close(inUpdate)
						<-release
					}
					return c.Update(ctx, obj, opts...)
				},
			}, getSecret(c, constants.DeployKeysSecretName))
			c = m.Client.(client.WithWatch)

			first := make(chan *deploykey.DeployKey, 1)
			go func() {
				defer GinkgoRecover()
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				first <- key
			}()
			Eventually(inUpdate).Should(BeClosed())

			second, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.Rotated).To(BeFalse())
			Expect(second.Fingerprint).To(Equal(original.Fingerprint))
			Expect(updates.Load()).To(Equal(int32(1)), "the second reconcile wrote nothing")

			close(release)
			var rotated *deploykey.DeployKey
			Eventually(first).Should(Receive(&rotated))
			Expect(rotated.Rotated).To(BeTrue())
			Expect(fingerprintOf(getSecret(c, constants.DeployKeysSecretName))).To(Equal(rotated.Fingerprint))

			By("taking the next rotation request itself")
			annotate("true")
			again, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Rotated).To(BeTrue())
		})

		It("retries a write that lost a race with the keys it generated, not new ones", func() {
			annotate("true")
			var (
				attempts int
				first    []byte
			)
			m.Client = newClient(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					attempts++
					if attempts == 1 {
						first = obj.(*corev1.Secret).Data[identityKey]
						return apierrors.NewConflict(corev1.Resource("secrets"), constants.DeployKeysSecretName, errors.New("changed"))
					}
					return c.Update(ctx, obj, opts...)
				},
			}, getSecret(c, constants.DeployKeysSecretName))
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(attempts).To(Equal(2))
			Expect(key.Rotated).To(BeTrue())
			Expect(key.Fingerprint).NotTo(Equal(original.Fingerprint))
			Expect(key.PrivateKey).To(Equal(first))
		})

		It("gives up after repeated conflicts without revealing a key", func() {
			annotate("true")
			m.Client = newClient(interceptor.Funcs{
				Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
					return apierrors.NewConflict(corev1.Resource("secrets"), constants.DeployKeysSecretName, errors.New("changed"))
				},
			}, getSecret(c, constants.DeployKeysSecretName))
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("gave up after %d conflicting writes", deploykey.MaxWriteAttempts))))
			expectNoKeyMaterial(err, original.PrivateKey)
		})
	})
})
