// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

var _ = Describe("Manager", func() {
	setUpManager()

	Describe("creation and reuse", func() {
		It("creates a labelled Secret with a new key pair and the scanned host key", func() {
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Created).To(BeTrue())
			Expect(key.Rotated).To(BeFalse())
			Expect(key.InsecureHostKey).To(BeFalse())
			Expect(key.SecretName).To(Equal("shoot-flux-deploy-keys"))
			Expect(key.KeyName).To(Equal(keyName))
			Expect(key.AuthorizedKey).To(HavePrefix("ssh-ed25519 "))
			Expect(key.AuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo\n"))
			Expect(sshkey.FingerprintOf(key.AuthorizedKey)).To(Equal(key.Fingerprint))
			Expect(string(key.KnownHosts)).To(Equal(scanner.line(gitHost)))
			Expect(scanner.timeouts).To(Equal([]time.Duration{3 * time.Second}))

			secret := getSecret(c, key.SecretName)
			Expect(secret.Labels).To(Equal(map[string]string{constants.LabelManagedBy: "gardener-extension-shoot-flux"}))
			Expect(secret.Type).To(Equal(corev1.SecretTypeOpaque))
			Expect(string(secret.Data[keyName+".repository"])).To(Equal(repository))
			Expect(secret.Data[identityKey]).To(Equal(key.PrivateKey))
			Expect(string(secret.Data[identityPub])).To(Equal(key.AuthorizedKey))
			Expect(string(secret.Data[constants.SecretKeyKnownHosts])).To(Equal(scanner.line(gitHost)))
			signer, err := sshkey.ParsePrivateKey(secret.Data[identityKey], sshkey.DefaultPrivateKeyLimits())
			Expect(err).NotTo(HaveOccurred())
			Expect(sshkey.AuthorizedKey(signer.PublicKey(), "shoot-flux garden-foo")).To(Equal(key.AuthorizedKey))
		})

		It("reuses the stored key and host key without scanning again", func() {
			first, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			second, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(second.Created).To(BeFalse())
			Expect(second.PrivateKey).To(Equal(first.PrivateKey))
			Expect(second.Fingerprint).To(Equal(first.Fingerprint))
			Expect(second.KnownHosts).To(Equal(first.KnownHosts))
			Expect(scanner.calls.Load()).To(BeEquivalentTo(1))
		})

		It("keeps one key pair per repository in the project's Secret", func() {
			a, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			req.KeyName = deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/b")
			req.Repository = "git.example.org:22/org/b"
			b, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.Created).To(BeTrue())
			Expect(b.Fingerprint).NotTo(Equal(a.Fingerprint))
			Expect(b.KnownHosts).To(Equal(a.KnownHosts), "host keys are per host")
			Expect(scanner.calls.Load()).To(BeEquivalentTo(1))

			again, err := m.Ensure(ctx, log, projectRequest())
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Fingerprint).To(Equal(a.Fingerprint))
			Expect(getSecret(c, constants.DeployKeysSecretName).Data).To(HaveLen(7), "two key pairs with their repositories and known_hosts")
		})

		It("names shoot-scoped keys after the shoot", func() {
			req.KeyName = deploykey.KeyName(deploykey.ScopeShoot, "bar", repository)
			req.Comment = "shoot-flux garden-foo/bar"
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.AuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo/bar\n"))
			Expect(getSecret(c, constants.DeployKeysSecretName).Data).To(HaveKey(HavePrefix("shoot.bar.")))
		})

		Describe("adopting the key a shoot already uses", func() {
			var inUse *sshkey.KeyPair

			BeforeEach(func() {
				var err error
				inUse, err = sshkey.Generate(sshkey.AlgorithmED25519, "old")
				Expect(err).NotTo(HaveOccurred())
				req.Adopt = inUse.PrivateKey
			})

			It("stores it instead of a new key", func() {
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Created).To(BeTrue())
				Expect(key.Adopted).To(BeTrue())
				Expect(key.PrivateKey).To(Equal(inUse.PrivateKey))
				Expect(key.Fingerprint).To(Equal(inUse.Fingerprint))
				Expect(key.AuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo\n"))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data[identityKey]).To(Equal(inUse.PrivateKey))
			})

			It("keeps a key the repository already has", func() {
				req.Adopt = nil
				first, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				req.Adopt = inUse.PrivateKey
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Adopted).To(BeFalse())
				Expect(key.Fingerprint).To(Equal(first.Fingerprint))
			})

			It("rejects an unusable key without revealing it", func() {
				req.Adopt = damagedKey()
				_, err := m.Ensure(ctx, log, req)
				expectNoKeyMaterial(err, req.Adopt)
				Expect(err).To(MatchError(ContainSubstring("deploy key to adopt for " + keyName + " is not usable")))
			})
		})

		It("generates RSA keys when configured", func() {
			m.Algorithm = sshkey.AlgorithmRSA4096
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.AuthorizedKey).To(HavePrefix("ssh-rsa "))
		})

		It("uses a Secret the user created with their own key as it is", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmRSA4096, "mine")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey: own.PrivateKey,
				identityPub: []byte(own.AuthorizedKey),
			}, nil))).To(Succeed())

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Created).To(BeFalse())
			Expect(key.PrivateKey).To(Equal(own.PrivateKey))
			Expect(key.AuthorizedKey).To(Equal(own.AuthorizedKey))
			Expect(key.Fingerprint).To(Equal(own.Fingerprint))
			// Storing the scanned host key labels the Secret, as the garden admission policy demands.
			Expect(getSecret(c, constants.DeployKeysSecretName).Labels).To(HaveKeyWithValue(constants.LabelManagedBy, "gardener-extension-shoot-flux"))
		})

		It("derives the public key when the stored one does not belong to the private key", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "mine")
			Expect(err).NotTo(HaveOccurred())
			stale, err := sshkey.Generate(sshkey.AlgorithmED25519, "stale")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey: own.PrivateKey,
				identityPub: []byte(stale.AuthorizedKey),
			}, nil))).To(Succeed())

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Fingerprint).To(Equal(own.Fingerprint))
			Expect(key.AuthorizedKey).To(HaveSuffix(" shoot-flux garden-foo\n"))
		})

		It("ends with one key when many reconciles create the Secret at once", func() {
			const workers = 16
			// All reconciles find no Secret before any of them creates one.
			m.Client = newClient(barrierOnGet(workers, func(_ client.Object, err error) bool { return apierrors.IsNotFound(err) }))
			c = m.Client.(client.WithWatch)
			results, errs := ensureConcurrently(ctx, m, req, workers)

			stored := getSecret(c, constants.DeployKeysSecretName)
			created := 0
			for i := range workers {
				Expect(errs[i]).NotTo(HaveOccurred())
				Expect(results[i].PrivateKey).To(Equal(stored.Data[identityKey]))
				Expect(results[i].KnownHosts).To(Equal(stored.Data[constants.SecretKeyKnownHosts]))
				if results[i].Created {
					created++
				}
			}
			Expect(created).To(Equal(1))
			Expect(string(stored.Data[constants.SecretKeyKnownHosts])).To(Equal(scanner.line(gitHost)), "the host key is stored once")

			secrets := &corev1.SecretList{}
			Expect(c.List(ctx, secrets, client.InNamespace(namespace))).To(Succeed())
			Expect(secrets.Items).To(HaveLen(1))
		})

		Context("when another reconcile creates the Secret between our read and our create", func() {
			var winner *sshkey.KeyPair

			BeforeEach(func() {
				var err error
				winner, err = sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux garden-foo")
				Expect(err).NotTo(HaveOccurred())
				c = newClient(interceptor.Funcs{
					Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
						if _, ok := obj.(*corev1.Secret); ok {
							Expect(c.Create(ctx, userSecret(obj.GetName(), map[string][]byte{
								identityKey: winner.PrivateKey,
								identityPub: []byte(winner.AuthorizedKey),
							}, nil))).To(Succeed())
						}
						return c.Create(ctx, obj, opts...)
					},
				})
			})

			It("uses the key the other reconcile stored", func() {
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Created).To(BeFalse())
				Expect(key.PrivateKey).To(Equal(winner.PrivateKey))
				Expect(key.Fingerprint).To(Equal(winner.Fingerprint))
			})
		})

		It("retries a create that lost a race with the key it generated", func() {
			var (
				creates int
				first   []byte
			)
			c = newClient(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					creates++
					if creates == 1 {
						first = obj.(*corev1.Secret).Data[identityKey]
						// Another reconcile created the Secret, with other keys only.
						Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{"notes": []byte("x")}, nil))).To(Succeed())
						return apierrors.NewAlreadyExists(corev1.Resource("secrets"), constants.DeployKeysSecretName)
					}
					return c.Create(ctx, obj, opts...)
				},
			})
			m.Client = c
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.Created).To(BeTrue())
			Expect(key.PrivateKey).To(Equal(first))
		})

		Describe("the number of data keys", func() {
			secretWith := func(n int) *corev1.Secret {
				data := map[string][]byte{}
				for i := range n {
					data[fmt.Sprintf("x%d.identity", i)] = []byte("dummy")
				}
				return userSecret(constants.DeployKeysSecretName, data, map[string]string{constants.AnnotationRotate: "true"})
			}

			It("is bounded by default, and the error names the Secret and the field", func() {
				Expect(c.Create(ctx, secretWith(constants.DefaultDeployKeysMaxDataKeys+1))).To(Succeed())
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(fmt.Sprintf("deploy key Secret garden-foo/shoot-flux-deploy-keys: data: %d keys, more than the %d allowed; remove the key pairs no shoot uses",
					constants.DefaultDeployKeysMaxDataKeys+1, constants.DefaultDeployKeysMaxDataKeys)))
				Expect(getSecret(c, constants.DeployKeysSecretName).Annotations).To(HaveKey(constants.AnnotationRotate), "nothing was done")
			})

			It("counts the key pair to add", func() {
				m.MaxDataKeys = 5
				Expect(c.Create(ctx, secretWith(3))).To(Succeed())
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(ContainSubstring("cannot add key pair " + keyName + ": deploy key Secret garden-foo/shoot-flux-deploy-keys: data: 6 keys, more than the 5 allowed")))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data).To(HaveLen(3))
			})

			It("handles a full Secret and leaves its dummy keys alone on rotation", func() {
				// Room for a key pair and known_hosts.
				Expect(c.Create(ctx, secretWith(constants.DefaultDeployKeysMaxDataKeys-4))).To(Succeed())
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.Created).To(BeTrue())
				Expect(key.RotationSkipped).To(HaveSuffix(fmt.Sprintf("and %d more", constants.DefaultDeployKeysMaxDataKeys-4-5)))
				secret := getSecret(c, constants.DeployKeysSecretName)
				Expect(secret.Data).To(HaveLen(constants.DefaultDeployKeysMaxDataKeys))
				Expect(secret.Data).To(HaveKeyWithValue("x0.identity", []byte("dummy")))
				_, err = m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
			})

			It("counts known_hosts to add", func() {
				m.MaxDataKeys = 6
				Expect(c.Create(ctx, secretWith(3))).To(Succeed())
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(ContainSubstring("storing SSH host keys: deploy key Secret garden-foo/shoot-flux-deploy-keys: data: 7 keys, more than the 6 allowed")))
			})
		})

		It("returns errors other than AlreadyExists from create", func() {
			c = newClient(interceptor.Funcs{
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					return apierrors.NewForbidden(corev1.Resource("secrets"), constants.DeployKeysSecretName, errors.New("no access"))
				},
			})
			m.Client = c
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring("writing deploy key Secret garden-foo/shoot-flux-deploy-keys")))
			Expect(apierrors.IsForbidden(err)).To(BeTrue())
		})
	})

	Describe("unusable Secrets", func() {
		DescribeTable("fail with a hint instead of replacing the user's data",
			func(identity []byte, want string) {
				Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{identityKey: identity, keyName + ".repository": []byte(repository)}, nil))).To(Succeed())
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(And(
					ContainSubstring("deploy key Secret garden-foo/shoot-flux-deploy-keys "+want),
					ContainSubstring("annotate the Secret with shoot-flux.extensions.gardener.cloud/rotate="+keyName),
				)))
				expectNoKeyMaterial(err, identity)
				Expect(getSecret(c, constants.DeployKeysSecretName).Data[identityKey]).To(Equal(identity))
			},
			Entry("empty identity", []byte{}, `has no private key in "`+identityKey+`"`),
			Entry("garbage identity", []byte("hello"), `has no usable private key in "`+identityKey+`"`),
			Entry("damaged identity", damagedKey(), `has no usable private key in "`+identityKey+`"`),
			// Without the limit, parsing it cost 12.9 s of CPU (issue 36) on every reconcile of every shoot using it.
			Entry("a 780 KiB RSA key, refused by its size before parsing", hugeKey,
				fmt.Sprintf(`has no usable private key in "%s" (private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes))`, identityKey, len(hugeKey))),
			Entry("a 96,000 bit RSA key in 16 KiB, refused by its modulus before parsing", craftedkey.PEM(craftedkey.PKCS1, 96000, 8),
				`has no usable private key in "`+identityKey+`" (RSA private key has a modulus of 96000 bits, more than the operator's limit of 16384 bits (limits.privateKeyMaxBits))`),
		)

		It("bounds private keys by the configured limits", func() {
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{identityKey: craftedkey.PEM(craftedkey.PKCS1, 4096, 0), keyName + ".repository": []byte(repository)}, nil))).To(Succeed())
			m.PrivateKeyLimits = sshkey.PrivateKeyLimits{MaxBytes: 16384, MaxBits: 2048}
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring("RSA private key has a modulus of 4096 bits, more than the operator's limit of 2048 bits (limits.privateKeyMaxBits)")))
		})

		It("rejects invalid requests", func() {
			req.KeyName = "cluster"
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(`deploy key name "cluster" was not made by KeyName`)))
			req = projectRequest()
			req.Namespace = ""
			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring("needs a namespace")))
		})
	})

	Describe("Forget", func() {
		It("removes the shoot's keys and keeps the repositories' keys", func() {
			shared, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			for _, shoot := range []string{"bar", "bar-2"} {
				own := projectRequest()
				own.KeyName = deploykey.KeyName(deploykey.ScopeShoot, shoot, repository)
				_, err = m.Ensure(ctx, log, own)
				Expect(err).NotTo(HaveOccurred())
			}

			Expect(m.Forget(ctx, namespace, "bar")).To(Succeed())
			data := getSecret(c, constants.DeployKeysSecretName).Data
			Expect(data).NotTo(HaveKey(HavePrefix("shoot.bar.")))
			Expect(data).To(HaveKey(HavePrefix("shoot.bar-2.")))
			Expect(data[identityKey]).To(Equal(shared.PrivateKey))
		})

		It("succeeds without a Secret", func() {
			Expect(m.Forget(ctx, namespace, "bar")).To(Succeed())
			err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.DeployKeysSecretName}, &corev1.Secret{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue())
		})
	})
})
