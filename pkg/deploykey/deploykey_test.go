// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

const (
	namespace  = "garden-foo"
	gitHost    = "git.example.org:22"
	repository = "git.example.org:22/org/a"
)

var (
	keyName                  = deploykey.KeyName(deploykey.ScopeRepository, "", repository)
	identityKey, identityPub = deploykey.DataKeys(keyName)
)

// fakeScanner hands out a fixed host key per host and counts the scans.
type fakeScanner struct {
	mu       sync.Mutex
	keys     map[string]string
	calls    atomic.Int32
	timeouts []time.Duration
	err      error
}

func newFakeScanner() *fakeScanner {
	return &fakeScanner{keys: map[string]string{}}
}

// line returns the known_hosts line the scanner reports for hostPort.
func (s *fakeScanner) line(hostPort string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if line, ok := s.keys[hostPort]; ok {
		return line
	}
	pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
	Expect(err).NotTo(HaveOccurred())
	key, _, err := sshkey.ParseAuthorizedKey(pair.AuthorizedKey)
	Expect(err).NotTo(HaveOccurred())
	host, port := sshkey.SplitHostPort(hostPort)
	line := knownhosts.Line([]string{sshkey.KnownHostsAddress(host, port)}, key) + "\n"
	s.keys[hostPort] = line
	return line
}

func (s *fakeScanner) scan(_ context.Context, hostPort string, timeout time.Duration) ([]byte, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.timeouts = append(s.timeouts, timeout)
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return []byte(s.line(hostPort)), nil
}

func newClient(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

func projectRequest() deploykey.Request {
	return deploykey.Request{
		Namespace:  namespace,
		KeyName:    keyName,
		Repository: repository,
		Comment:    "shoot-flux " + namespace,
		GitHost:    gitHost,
	}
}

func getSecret(c client.Client, name string) *corev1.Secret {
	secret := &corev1.Secret{}
	ExpectWithOffset(1, c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, secret)).To(Succeed())
	return secret
}

func userSecret(name string, data map[string][]byte, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Data:       data,
	}
}

// expectNoKeyMaterial fails if err mentions any part of a private key.
// hugeKey is a crafted RSA key of 780 KiB with a 1M-bit modulus, what a project admin can store.
var hugeKey = craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0)

func expectNoKeyMaterial(err error, privateKeys ...[]byte) {
	ExpectWithOffset(1, err).To(HaveOccurred())
	ExpectWithOffset(1, err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
	for _, key := range privateKeys {
		for _, line := range strings.Split(string(key), "\n") {
			if len(line) < 16 || strings.HasPrefix(line, "-----") {
				continue
			}
			ExpectWithOffset(1, err.Error()).NotTo(ContainSubstring(line[:16]))
		}
	}
}

var _ = Describe("KeyName", func() {
	It("names keys after the repository, readable and unique", func() {
		Expect(keyName).To(MatchRegexp(`^repo\.git\.example\.org_22_org_a-[0-9a-f]{10}$`))
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "bar", repository)).To(Equal(keyName), "the shoot does not matter")
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/b")).NotTo(Equal(keyName))
		// Characters that data keys do not allow are replaced, and the hash keeps such names apart.
		Expect(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/a+b")).NotTo(Equal(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.org:22/org/a_b")))
	})

	It("names shoot keys after shoot and repository", func() {
		Expect(deploykey.KeyName(deploykey.ScopeShoot, "bar", repository)).To(MatchRegexp(`^shoot\.bar\.git\.example\.org_22_org_a-[0-9a-f]{10}$`))
	})

	It("makes only valid, bounded data keys", func() {
		long := "git.example.org:22/" + strings.Repeat("very/long/path/", 40) + "ü"
		for _, name := range []string{
			deploykey.KeyName(deploykey.ScopeRepository, "", long),
			deploykey.KeyName(deploykey.ScopeShoot, "a-very-long-shoot-name", long),
			deploykey.KeyName(deploykey.ScopeRepository, "", "[::1]:2222/r"),
		} {
			identity, pub := deploykey.DataKeys(name)
			for _, key := range []string{identity, pub, name + ".repository"} {
				Expect(validation.IsConfigMapKey(key)).To(BeEmpty(), key)
			}
		}
	})
})

var _ = Describe("Manager", func() {
	var (
		ctx     context.Context
		log     logr.Logger
		scanner *fakeScanner
		c       client.WithWatch
		m       *deploykey.Manager
		req     deploykey.Request
	)

	BeforeEach(func() {
		ctx = context.Background()
		log = logr.Discard()
		scanner = newFakeScanner()
		c = newClient(interceptor.Funcs{})
		req = projectRequest()
	})

	JustBeforeEach(func() {
		m = &deploykey.Manager{Client: c, Scanner: scanner.scan, ScanTimeout: 3 * time.Second}
	})

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

	Describe("rotation", func() {
		var original *deploykey.DeployKey

		annotate := func(value string) {
			secret := getSecret(c, constants.DeployKeysSecretName)
			metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotate, value)
			Expect(c.Update(ctx, secret)).To(Succeed())
		}

		JustBeforeEach(func() {
			var err error
			original, err = m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
		})

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

	Describe("known_hosts", func() {
		var (
			configured string
			extra      string
		)

		BeforeEach(func() {
			configured = newFakeScanner().line(gitHost)
			extra = newFakeScanner().line("other.example.org:22")
		})

		It("uses configured known_hosts without scanning or storing them", func() {
			req.ConfiguredKnownHosts = []byte(strings.TrimSuffix(configured, "\n"))
			m.ExtraKnownHosts = []byte(extra)
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(configured + extra))
			Expect(scanner.calls.Load()).To(BeZero())
			Expect(getSecret(c, constants.DeployKeysSecretName).Data).NotTo(HaveKey(constants.SecretKeyKnownHosts))
		})

		It("rejects invalid configured known_hosts", func() {
			req.ConfiguredKnownHosts = []byte("git.example.org ssh-ed25519 AAAA\n")
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(`source.knownHosts: Invalid value: "git.example.org ssh-ed25519 AAAA": line 1 is not a known_hosts entry`)))
		})

		It("prefers a stored entry for the host over scanning", func() {
			stored := newFakeScanner().line(gitHost)
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte(stored),
			}, nil))).To(Succeed())
			m.ExtraKnownHosts = []byte(extra)

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(stored + extra))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("does not scan hosts the operator trusts", func() {
			m.ExtraKnownHosts = []byte(configured)
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(configured))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("scans a host missing from the stored entries and keeps the others", func() {
			other := newFakeScanner().line("github.com:22")
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte(strings.TrimSuffix(other, "\n")),
			}, nil))).To(Succeed())

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(other + scanner.line(gitHost)))
			Expect(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts]).To(Equal(key.KnownHosts))
		})

		It("scans hosts on other ports under their own name", func() {
			req.GitHost = "git.example.org:2222"
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(HavePrefix("[git.example.org]:2222 ssh-ed25519 "))
		})

		It("rejects invalid stored known_hosts", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("git.example.org ssh-ed25519 AAAA\n"),
			}, nil))).To(Succeed())
			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "git.example.org ssh-ed25519 AAAA": line 1 is not a known_hosts entry: ssh: short read`))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig), "a project admin's mistake, not worth retrying")
			expectNoKeyMaterial(err, own.PrivateKey)
		})

		// Issue 20: a pattern like this kept a worker busy for good while it was matched.
		It("bounds the stored known_hosts before matching them", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			crafted := strings.Repeat("*a", 17) + "z"
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("# pinned\n" + crafted + " " + strings.SplitN(newFakeScanner().line(gitHost), " ", 2)[1]),
			}, nil))).To(Succeed())
			m.KnownHostsLimits = sshkey.DefaultKnownHostsLimits()

			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "` + crafted +
				`": line 2: host pattern has 17 wildcards (* and ?), may not have more than 3`))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("does not store a scan that would exceed the limits", func() {
			other := newFakeScanner().line("github.com:22")
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("# github.com\n" + other),
			}, nil))).To(Succeed())
			m.KnownHostsLimits = sshkey.KnownHostsLimits{MaxLines: 2}

			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring("Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Too many: 3: has 3 lines, may not have more than 2 " +
				"(with the scanned host keys of git.example.org:22; remove entries no longer needed or set source.knownHosts)")))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig))
			Expect(string(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts])).To(Equal("# github.com\n" + other))
		})

		It("needs no host key without an SSH host", func() {
			req.GitHost = ""
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.KnownHosts).To(BeEmpty())
			Expect(key.InsecureHostKey).To(BeFalse())
			Expect(scanner.calls.Load()).To(BeZero())

			m.ExtraKnownHosts = []byte(extra)
			key, err = m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(extra))
		})

		Context("when the scan fails", func() {
			BeforeEach(func() {
				scanner.err = errors.New("dial tcp: connection refused")
			})

			It("fails with a hint where to put the host key", func() {
				key, err := m.Ensure(ctx, log, req)
				Expect(key).To(BeNil())
				Expect(err).To(MatchError(`cannot determine the SSH host key of "git.example.org:22": ` + deploykey.ScanFailedMessage + `; ` +
					`set source.knownHosts or add it to Secret garden-foo/shoot-flux-deploy-keys key known_hosts`))
				Expect(err.Error()).NotTo(ContainSubstring("connection refused"), "the reason stays in the extension's log")
				expectNoKeyMaterial(err, getSecret(c, constants.DeployKeysSecretName).Data[identityKey])
			})

			It("names the default port of a host given without one", func() {
				req.GitHost = "git.example.org"
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(HavePrefix(`cannot determine the SSH host key of "git.example.org:22"`)))
			})

			It("disables host key checking when the operator allows it", func() {
				m.AllowInsecureHostKeys = true
				m.ExtraKnownHosts = []byte(extra)
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.InsecureHostKey).To(BeTrue())
				Expect(string(key.KnownHosts)).To(Equal(extra))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data).NotTo(HaveKey(constants.SecretKeyKnownHosts))
			})

			It("scans again on the next reconcile", func() {
				failed := metricValue("shoot_flux_host_key_scans_total", "result", "unreachable")
				ok := metricValue("shoot_flux_host_key_scans_total", "result", "ok")
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(HaveOccurred())
				scanner.err = nil
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(key.KnownHosts)).To(Equal(scanner.line(gitHost)))
				Expect(metricValue("shoot_flux_host_key_scans_total", "result", "unreachable")).To(Equal(failed+1), "each scan is counted")
				Expect(metricValue("shoot_flux_host_key_scans_total", "result", "ok")).To(Equal(ok + 1))
			})
		})

		It("treats a scan without a key for the host as failed", func() {
			m.Scanner = func(context.Context, string, time.Duration) ([]byte, error) {
				return []byte(newFakeScanner().line("elsewhere.example.org:22")), nil
			}
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(deploykey.ScanFailedMessage)))
		})

		// Project members choose the host; what they learn must not tell the seed's networks
		// apart.
		It("answers every refused or failed scan with the same message", func() {
			m.Scanner = nil
			policy, err := hostpolicy.New(nil, []string{"1-65535"}, []netip.Prefix{netip.MustParsePrefix("10.250.0.0/16")})
			Expect(err).NotTo(HaveOccurred())
			closed, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			closedAddr := closed.Addr().String()
			Expect(closed.Close()).To(Succeed())

			messages := map[string]bool{}
			for _, target := range []struct {
				host string
				dial sshkey.DialFunc
			}{
				{"169.254.169.254:80", policy.DialContext},
				{"kubernetes.default.svc:443", policy.DialContext},
				{"10.250.0.1:22", policy.DialContext},
				{closedAddr, nil},
			} {
				req.GitHost, req.Dial = target.host, target.dial
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(HaveOccurred())
				host, port := sshkey.SplitHostPort(target.host)
				messages[strings.ReplaceAll(err.Error(), net.JoinHostPort(host, port), "HOST")] = true
			}
			Expect(messages).To(HaveLen(1), "messages: %v", messages)
		})

		It("keeps the host key a concurrent reconcile stored first", func() {
			first := newFakeScanner().line(gitHost)
			var updates atomic.Int32
			c = newClient(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if updates.Add(1) == 1 {
						current := &corev1.Secret{}
						Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), current)).To(Succeed())
						current.Data[constants.SecretKeyKnownHosts] = []byte(first)
						Expect(c.Update(ctx, current)).To(Succeed())
					}
					return c.Update(ctx, obj, opts...)
				},
			})
			m.Client = c
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(first))
			Expect(string(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts])).To(Equal(first))
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

// barrierOnGet holds the first workers reads for which match is true until all of them have
// happened, so concurrent reconciles deterministically act on the same state.
func barrierOnGet(workers int32, match func(client.Object, error) bool) interceptor.Funcs {
	var arrived atomic.Int32
	release := make(chan struct{})
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if match(obj, err) {
				if n := arrived.Add(1); n == workers {
					close(release)
				} else if n < workers {
					// The timeout only keeps a broken test from hanging; the spec's assertions
					// then tell what went wrong.
					select {
					case <-release:
					case <-time.After(10 * time.Second):
					}
				}
			}
			return err
		},
	}
}

func fingerprintOf(secret *corev1.Secret) string {
	fingerprint, err := sshkey.Fingerprint(secret.Data[identityKey], sshkey.DefaultPrivateKeyLimits())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return fingerprint
}

// damagedKey is a real private key with a corrupted body, so parsing fails on key material.
func damagedKey() []byte {
	pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
	if err != nil {
		panic(err)
	}
	lines := strings.Split(string(pair.PrivateKey), "\n")
	lines[2] = strings.Repeat("B", len(lines[2]))
	return []byte(strings.Join(lines, "\n"))
}

// ensureConcurrently calls Ensure from n goroutines that start together.
func ensureConcurrently(ctx context.Context, m *deploykey.Manager, req deploykey.Request, n int) ([]*deploykey.DeployKey, []error) {
	results := make([]*deploykey.DeployKey, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = m.Ensure(ctx, logr.Discard(), req)
		})
	}
	close(start)
	wg.Wait()
	return results, errs
}

// metricValue reads a series of the extension's metrics from controller-runtime's registry; label
// and value select one series of a labelled metric.
func metricValue(name, label, value string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
			if label == "" {
				return m.GetCounter().GetValue()
			}
		}
	}
	Fail("no series " + name)
	return 0
}
