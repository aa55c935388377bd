// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"fmt"
	"strings"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("#Reconcile", func() {
		It("generates a deploy key for a private ssh repository and delivers it with known_hosts", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			status := providerStatus(ex)
			keyName := deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.com:22/org/repo")
			identityKey, identityPub := deploykey.DataKeys(keyName)
			Expect(status.DeployKey).To(Equal(keyName))
			Expect(status.PublicKey).To(Equal(string(key.Data[identityPub])))
			Expect(status.PublicKey).To(HaveSuffix(" shoot-flux garden-foo git.example.com:22/org/repo\n"))
			Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
			fingerprint, err := sshkey.FingerprintOf(status.PublicKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.Fingerprint).To(Equal(fingerprint))
			Expect(string(ex.Status.ProviderStatus.Raw)).NotTo(ContainSubstring("PRIVATE KEY"))

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(ContainSubstring("name: " + constants.GitCredentialsSecretName))
			Expect(docs).To(ContainSubstring("host: git.example.com\n"))
			Expect(docs).To(ContainSubstring(b64(key.Data[identityKey])))
			Expect(docs).To(ContainSubstring(b64([]byte(hostKeyLine))))
			Expect(scans).To(Equal(1))

			By("telling the shoot owner in the shoot which key to register, without the private key")
			var statusCM *corev1.ConfigMap
			for _, doc := range managedResourceObjects(seed, constants.ManagedResourceBootstrap) {
				if strings.Contains(doc, "name: "+constants.StatusConfigMapName) {
					statusCM = &corev1.ConfigMap{}
					Expect(yaml.Unmarshal([]byte(doc), statusCM)).To(Succeed())
					Expect(doc).NotTo(Or(ContainSubstring("PRIVATE KEY"), ContainSubstring(b64(key.Data[identityKey]))))
				}
			}
			Expect(statusCM).NotTo(BeNil())
			Expect(statusCM.Namespace).To(Equal("kluctl-system"))
			Expect(statusCM.Data).To(Equal(map[string]string{
				"bootstrapMode": "kluctl", "fluxVersion": status.FluxVersion, "kluctlVersion": status.KluctlVersion, "management": "continuous",
				"repository": "ssh://git@git.example.com/org/repo", "ref": "branch:main",
				"publicKey": status.PublicKey, "fingerprint": fingerprint,
			}))

			By("reusing the stored key and host key on the next reconcile")
			Expect(reconcile()).To(Succeed())
			Expect(scans).To(Equal(1))
			Expect(providerStatus(ex).Fingerprint).To(Equal(fingerprint))
		})

		// Issue 20: the known_hosts of the deploy key Secret, which project admins edit, hung a
		// worker with a crafted pattern; now it is bounded, and a bad one keeps what was deployed.
		It("rejects an oversized known_hosts pattern in the deploy key Secret and keeps the deployment", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			deployed := managedResourceObjects(seed, constants.ManagedResourceBootstrap)

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			crafted := strings.Repeat("*a", 17) + "z"
			key.Data[constants.SecretKeyKnownHosts] = append(key.Data[constants.SecretKeyKnownHosts], []byte(crafted+" "+strings.SplitN(hostKeyLine, " ", 2)[1])...)
			Expect(garden.Update(ctx, key)).To(Succeed())
			rec.reset()

			err := reconcile()
			Expect(err).To(MatchError(ContainSubstring(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "` + crafted +
				`": line 2: host pattern has 17 wildcards (* and ?), may not have more than 3`)))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(rec.reset()).To(BeEmpty())
			Expect(managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(deployed))
		})

		It("rejects an oversized known_hosts in the credentials Secret of the shoot", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
					constants.SecretKeyIdentity:   own.PrivateKey,
					constants.SecretKeyKnownHosts: []byte(strings.Repeat("# padding\n", 1001)),
				}})
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())

			err = reconcile()
			Expect(err).To(MatchError("source.secretResourceName: Secret data[known_hosts]: Too many: 1001: has 1001 lines, may not have more than 1000"))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})

		DescribeTable("refuses an oversized private key in the credentials Secret of the shoot before parsing it",
			func(identity []byte, message func(size int) string) {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})},
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity:   identity,
						constants.SecretKeyKnownHosts: []byte(hostKeyLine),
					}})
				ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
				Expect(seed.Update(ctx, ex)).To(Succeed())

				err := reconcile()
				Expect(err).To(MatchError(message(len(identity) + len(hostKeyLine) + len("identity") + len("known_hosts"))))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
			},
			// 12.9 s of CPU per parse without the limits (issue 36), on every reconcile.
			Entry("780 KiB, named by its Secret and key before the size of the Secrets the bootstrap delivers", craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0), func(int) string {
				return fmt.Sprintf(`source.secretResourceName: Secret garden-foo/my-git key "identity": private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)`, len(craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0)))
			}),
			Entry("over the size of a private key", craftedkey.PEM(craftedkey.PKCS1, 24000, 0), func(int) string {
				return fmt.Sprintf(`source.secretResourceName: Secret garden-foo/my-git key "identity": private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)`, len(craftedkey.PEM(craftedkey.PKCS1, 24000, 0)))
			}),
			Entry("a 96,000 bit modulus in 16 KiB", craftedkey.PEM(craftedkey.PKCS1, 96000, 8), func(int) string {
				return `source.secretResourceName: Secret garden-foo/my-git key "identity": RSA private key has a modulus of 96000 bits, more than the operator's limit of 16384 bits (limits.privateKeyMaxBits)`
			}),
		)

		It("shows a prepared key in the status and the shoot, and switches to it on rotation", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := providerStatus(ex)
			Expect(before.NextPublicKey).To(BeEmpty())

			annotate := func(annotation string) {
				key := &corev1.Secret{}
				Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
				metav1.SetMetaDataAnnotation(&key.ObjectMeta, annotation, "true")
				Expect(garden.Update(ctx, key)).To(Succeed())
			}
			statusData := func() map[string]string {
				for _, doc := range managedResourceObjects(seed, constants.ManagedResourceBootstrap) {
					if strings.Contains(doc, "name: "+constants.StatusConfigMapName) {
						cm := &corev1.ConfigMap{}
						Expect(yaml.Unmarshal([]byte(doc), cm)).To(Succeed())
						return cm.Data
					}
				}
				return nil
			}

			By("preparing: the shoot keeps the current key, the next one is shown")
			annotate(constants.AnnotationRotatePrepare)
			Expect(reconcile()).To(Succeed())
			prepared := providerStatus(ex)
			Expect(prepared.Fingerprint).To(Equal(before.Fingerprint))
			Expect(prepared.PublicKey).To(Equal(before.PublicKey))
			Expect(prepared.NextPublicKey).To(HaveSuffix(" shoot-flux garden-foo git.example.com:22/org/repo\n"))
			nextFingerprint, err := sshkey.FingerprintOf(prepared.NextPublicKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(prepared.NextFingerprint).To(Equal(nextFingerprint))
			Expect(prepared.NextFingerprint).NotTo(Equal(before.Fingerprint))
			Expect(statusData()).To(SatisfyAll(
				HaveKeyWithValue("fingerprint", before.Fingerprint),
				HaveKeyWithValue("nextPublicKey", prepared.NextPublicKey),
				HaveKeyWithValue("nextFingerprint", nextFingerprint),
			))

			By("rotating: the shoot switches to exactly the prepared key")
			annotate(constants.AnnotationRotate)
			Expect(reconcile()).To(Succeed())
			rotated := providerStatus(ex)
			Expect(rotated.Fingerprint).To(Equal(nextFingerprint))
			Expect(rotated.PublicKey).To(Equal(prepared.NextPublicKey))
			Expect(rotated.NextPublicKey).To(BeEmpty())
			Expect(rotated.NextFingerprint).To(BeEmpty())
			Expect(statusData()).To(SatisfyAll(
				HaveKeyWithValue("fingerprint", nextFingerprint),
				Not(HaveKey("nextPublicKey")),
			))
		})

		It("warns once about data keys a requested rotation left alone", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := providerStatus(ex).Fingerprint

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			key.Data["notes.identity"] = []byte("the project admin's")
			metav1.SetMetaDataAnnotation(&key.ObjectMeta, constants.AnnotationRotate, "true")
			Expect(garden.Update(ctx, key)).To(Succeed())

			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.Fingerprint).NotTo(Equal(before))
			Expect(status.Warnings).To(ConsistOf(`The rotation requested on Secret garden-foo/shoot-flux-deploy-keys left data keys alone that are no key pairs of the extension: "notes.identity".`))
			Expect(garden.Get(ctx, client.ObjectKeyFromObject(key), key)).To(Succeed())
			Expect(key.Data).To(HaveKeyWithValue("notes.identity", []byte("the project admin's")))

			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).Warnings).To(BeEmpty())
		})

		It("keeps the last good deployment when the deploy key Secret has too many data keys, as a configuration problem", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := managedResourceObjects(seed, constants.ManagedResourceBootstrap)

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			for i := len(key.Data); i <= constants.DefaultDeployKeysMaxDataKeys; i++ {
				key.Data[fmt.Sprintf("dummy%d", i)] = nil
			}
			Expect(garden.Update(ctx, key)).To(Succeed())
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"ref":{"branch":"other"}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())

			err := reconcile()
			Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("deploy key Secret garden-foo/shoot-flux-deploy-keys: data: %d keys, more than the %d allowed", constants.DefaultDeployKeysMaxDataKeys+1, constants.DefaultDeployKeysMaxDataKeys))))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(before))
		})

		Describe("moving the deploy keys of earlier releases", func() {
			const repoURL = "ssh://git@git.example.com/org/repo"
			var (
				inUse       *sshkey.KeyPair
				identityKey string
			)

			BeforeEach(func() {
				var err error
				inUse, err = sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux garden-foo")
				Expect(err).NotTo(HaveOccurred())
				identityKey, _ = deploykey.DataKeys(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.com:22/org/repo"))
			})

			// recordEarlierRelease writes the providerStatus an earlier release left for the shoot.
			recordEarlierRelease := func(secretName, repository string) {
				ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
				raw, err := helper.EncodeStatus(&fluxv1alpha1.FluxStatus{
					Repository: repository, Fingerprint: inUse.Fingerprint, PublicKey: inUse.AuthorizedKey,
					DeployKeySecret: projectNamespace + "/" + secretName,
				})
				ExpectWithOffset(1, err).NotTo(HaveOccurred())
				ex.Status.ProviderStatus = raw
				ExpectWithOffset(1, seed.Status().Update(ctx, ex)).To(Succeed())
			}
			storedKey := func() []byte {
				secret := &corev1.Secret{}
				ExpectWithOffset(1, garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, secret)).To(Succeed())
				return secret.Data[identityKey]
			}
			// deliver makes the seed deliver inUse to the shoot, as an earlier release did.
			deliver := func() {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"})},
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity: inUse.PrivateKey, constants.SecretKeyKnownHosts: []byte(hostKeyLine),
					}})
				ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
				ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
				ExpectWithOffset(1, reconcile()).To(Succeed())
				ex.Spec.ProviderConfig = nil
				ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
			}

			It("keeps the key of the project's old Secret for the repository the shoot used", func() {
				build([]client.Object{
					legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"}),
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: constants.LegacyDeployKeySecretName, Namespace: projectNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity: inUse.PrivateKey, constants.SecretKeyIdentityPub: []byte(inUse.AuthorizedKey),
					}},
				})
				recordEarlierRelease(constants.LegacyDeployKeySecretName, "git@git.example.com:org/repo.git")
				Expect(reconcile()).To(Succeed())

				Expect(storedKey()).To(Equal(inUse.PrivateKey))
				status := providerStatus(ex)
				Expect(status.Fingerprint).To(Equal(inUse.Fingerprint))
				Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
				Expect(status.Warnings).To(BeEmpty())
				docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
				Expect(docs).To(ContainSubstring(b64(inUse.PrivateKey)))
			})

			It("keeps the key the shoot was delivered when its old Secret cannot be read", func() {
				deliver()
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", repoURL)
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).To(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Fingerprint).To(Equal(inUse.Fingerprint))
			})

			It("generates a new key when the shoot moved to another repository", func() {
				deliver()
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", "ssh://git@git.example.com/org/other")
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).NotTo(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Warnings).To(BeEmpty())
			})

			It("generates a new key and warns when the key in use is gone", func() {
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"})})
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", repoURL)
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).NotTo(BeEmpty())
				Expect(storedKey()).NotTo(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Warnings).To(ConsistOf(ContainSubstring("could not be moved into Secret shoot-flux-deploy-keys, so a new key was generated")))
			})
		})
	})
})
