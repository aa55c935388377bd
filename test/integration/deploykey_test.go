package integration

import (
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Deploy keys", func() {
	It("gives two shoots of a project that are created at the same time one key", func(ctx SpecContext) {
		project := "race"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))

		shoots := []*sandbox.ShootHandle{
			createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "first", DeferExtension: true}),
			createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "second", DeferExtension: true}),
		}
		By("creating both Extensions at once")
		var wg sync.WaitGroup
		errs := make([]error, len(shoots))
		for i, h := range shoots {
			wg.Go(func() { errs[i] = h.CreateExtension(ctx) })
		}
		wg.Wait()
		for _, err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}
		for _, h := range shoots {
			_, err := h.WaitSucceeded(ctx, reconcileTimeout)
			Expect(err).NotTo(HaveOccurred())
		}

		keys := deployKeySecrets(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))
		identity := keys[0].Data[constants.SecretKeyIdentity]
		Expect(identity).NotTo(BeEmpty())
		for _, h := range shoots {
			secret, err := credentials(ctx, h, kluctlNamespace)
			Expect(err).NotTo(HaveOccurred())
			Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(identity), "shoot %s", h.SeedNamespace)
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.PublicKey).To(Equal(string(keys[0].Data[constants.SecretKeyIdentityPub])))
		}
	})

	It("rotates the key when the garden Secret is annotated", Label(labelDeployed), func(ctx SpecContext) {
		project := "rotation"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		before, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(before.Fingerprint).NotTo(BeEmpty())
		oldSecret, err := credentials(ctx, h, kluctlNamespace)
		Expect(err).NotTo(HaveOccurred())

		key := &corev1.Secret{}
		Expect(get(ctx, sb.Garden.Client, key, projectNamespace, constants.DeployKeySecretPrefix)).To(Succeed())
		patch := client.MergeFrom(key.DeepCopy())
		metav1.SetMetaDataAnnotation(&key.ObjectMeta, constants.AnnotationRotate, "true")
		Expect(sb.Garden.Client.Patch(ctx, key, patch)).To(Succeed())

		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())

		after, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Fingerprint).NotTo(Equal(before.Fingerprint))
		Expect(after.PublicKey).NotTo(Equal(before.PublicKey))

		Expect(get(ctx, sb.Garden.Client, key, projectNamespace, constants.DeployKeySecretPrefix)).To(Succeed())
		Expect(key.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
		Expect(string(key.Data[constants.SecretKeyIdentityPub])).To(Equal(after.PublicKey))

		Eventually(func(g Gomega) {
			secret, err := credentials(ctx, h, kluctlNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(key.Data[constants.SecretKeyIdentity]))
			g.Expect(secret.Data[constants.SecretKeyIdentity]).NotTo(Equal(oldSecret.Data[constants.SecretKeyIdentity]))
		}).Should(Succeed())
	})

	DescribeTable("ends with the first key per scope when the extension restarts in the middle of the first reconciles",
		func(ctx SpecContext, scope config.KeyScope) {
			project := "restart-" + string(scope)
			projectNamespace := newProject(ctx, project)
			setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
			cfg := sb.ExtensionConfig()
			cfg.SSHKey.Scope = scope
			settings := sandbox.ExtensionSettings{Config: &cfg}
			restartExtension(ctx, settings)
			shoots := []*sandbox.ShootHandle{
				createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "one", DeferExtension: true}),
				createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "two", DeferExtension: true}),
			}
			wantKeys := 1
			if scope == config.KeyScopeShoot {
				wantKeys = len(shoots)
			}

			By("letting the first reconciles wait for the resource managers, which are down")
			for _, h := range shoots {
				Expect(h.StopResourceManager()).To(Succeed())
				Expect(h.CreateExtension(ctx)).To(Succeed())
			}
			var firstKeys []corev1.Secret
			Eventually(func(g Gomega) {
				for _, h := range shoots {
					_, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
					g.Expect(err).NotTo(HaveOccurred())
				}
				firstKeys = deployKeySecrets(ctx, projectNamespace)
				g.Expect(firstKeys).To(HaveLen(wantKeys))
			}).WithTimeout(reconcileTimeout).Should(Succeed())

			By("restarting the extension")
			Expect(sb.StopExtension()).To(Succeed())
			for _, h := range shoots {
				ex, err := h.Extension(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(lastOperation(ex)).To(Equal("Create/Processing"), "the reconcile of %s should have been interrupted", h.Name)
				Expect(h.StartResourceManager(ctx)).To(Succeed())
				Expect(h.Checkpoint(ctx)).To(Succeed())
			}
			Expect(sb.StartExtensionWith(ctx, settings)).To(Succeed())
			for _, h := range shoots {
				_, err := h.WaitSucceeded(ctx, reconcileTimeout)
				Expect(err).NotTo(HaveOccurred())
			}

			keys := deployKeySecrets(ctx, projectNamespace)
			Expect(keys).To(HaveLen(wantKeys))
			for i := range keys {
				Expect(keys[i].UID).To(Equal(firstKeys[i].UID))
				Expect(keys[i].Data).To(Equal(firstKeys[i].Data))
			}
			for _, h := range shoots {
				key := keys[0]
				if scope == config.KeyScopeShoot {
					idx := slices.IndexFunc(keys, func(s corev1.Secret) bool { return s.Name == constants.DeployKeySecretPrefix+"-"+h.Name })
					Expect(idx).NotTo(BeNumerically("<", 0), "no key of shoot %s", h.Name)
					key = keys[idx]
				}
				expectControllers(ctx, h, true)
				secret, err := credentials(ctx, h, kluctlNamespace)
				Expect(err).NotTo(HaveOccurred())
				Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(key.Data[constants.SecretKeyIdentity]), "shoot %s", h.Name)
			}
		},
		Entry("project-scoped keys", config.KeyScopeProject),
		Entry("shoot-scoped keys", config.KeyScopeShoot),
	)
})
