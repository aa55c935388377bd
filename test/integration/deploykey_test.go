// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
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

		_, keys := deployKeys(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))
		identity := keys[0].Identity
		Expect(identity).NotTo(BeEmpty())
		for _, h := range shoots {
			secret, err := credentials(ctx, h, kluctlNamespace)
			Expect(err).NotTo(HaveOccurred())
			Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(identity), "shoot %s", h.SeedNamespace)
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.PublicKey).To(Equal(keys[0].Pub))
		}
	})

	// GitHub refuses a deploy key that another repository already has, so every repository gets
	// its own key, shared by the project's shoots that use it.
	It("gives each repository its own key and each shoot its repository's key", Label(labelDeployed), func(ctx SpecContext) {
		project := "two-repos"
		projectNamespace := newProject(ctx, project)
		const otherRepo = "fleet-two-repos"
		_, err := gitserver.NewKluctlProjectRepo(filepath.Join(gitRepoRoot, otherRepo))
		Expect(err).NotTo(HaveOccurred())
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		onB := func(name string) sandbox.ShootSpec {
			return sandbox.ShootSpec{Project: project, Name: name, ProviderConfig: []byte(`{"source":{"url":"` + git.URL(otherRepo) + `"}}`)}
		}
		shoots := map[string]*sandbox.ShootHandle{
			"a1": createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "a1"}),
			"a2": createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "a2"}),
			"b1": createShootSucceeded(ctx, onB("b1")),
		}

		_, keys := deployKeys(ctx, projectNamespace)
		Expect(keys).To(HaveLen(2))
		byRepository := map[string]keyPair{}
		for _, k := range keys {
			byRepository[k.Repository] = k
		}
		repository := func(raw string) string {
			u, err := helper.ParseGitURL(raw)
			Expect(err).NotTo(HaveOccurred())
			return u.Repository()
		}
		a, b := byRepository[repository(git.URL(repoName))], byRepository[repository(git.URL(otherRepo))]
		Expect(a.Identity).NotTo(BeEmpty())
		Expect(b.Identity).NotTo(BeEmpty())
		Expect(a.Identity).NotTo(Equal(b.Identity))
		for name, want := range map[string]keyPair{"a1": a, "a2": a, "b1": b} {
			h := shoots[name]
			secret, err := credentials(ctx, h, kluctlNamespace)
			Expect(err).NotTo(HaveOccurred())
			Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(want.Identity), "shoot %s", name)
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.DeployKey).To(Equal(want.Name), "shoot %s", name)
			Expect(status.PublicKey).To(Equal(want.Pub), "shoot %s", name)
		}

		By("moving a shoot to the other repository")
		Expect(shoots["a2"].UpdateProviderConfig(ctx, onB("a2").ProviderConfig)).To(Succeed())
		_, err = shoots["a2"].WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			secret, err := credentials(ctx, shoots["a2"], kluctlNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(b.Identity))
		}).WithTimeout(reconcileTimeout).Should(Succeed())
		_, after := deployKeys(ctx, projectNamespace)
		Expect(after).To(Equal(keys), "no key is generated or changed by the move")
	})

	// Releases before the one-Secret storage kept a project's key in shoot-flux-deploy-key and
	// shoot-scoped keys in shoot-flux-deploy-key-<shoot>. The key a shoot uses is registered at the
	// git host, so it must survive the upgrade.
	DescribeTable("keeps the key a shoot used with an earlier release",
		func(ctx SpecContext, project string, legacyName func(shoot string) string) {
			projectNamespace := newProject(ctx, project)
			setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
			h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
			inUse, err := credentials(ctx, h, kluctlNamespace)
			Expect(err).NotTo(HaveOccurred())
			identity := inUse.Data[constants.SecretKeyIdentity]

			By("turning the garden and the status into what an earlier release left")
			keySecret, _ := deployKeys(ctx, projectNamespace)
			Expect(sb.Garden.Client.Delete(ctx, keySecret)).To(Succeed())
			Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: legacyName(h.Name)},
				Data:       map[string][]byte{constants.SecretKeyIdentity: identity},
			})).To(Succeed())
			Expect(h.UpdateProviderStatus(ctx, func(status *fluxv1alpha1.FluxStatus) {
				status.DeployKeySecret = projectNamespace + "/" + legacyName(h.Name)
				status.DeployKey = ""
			})).To(Succeed())

			Expect(h.TriggerReconcile(ctx)).To(Succeed())
			_, err = h.WaitSucceeded(ctx, reconcileTimeout)
			Expect(err).NotTo(HaveOccurred())

			_, keys := deployKeys(ctx, projectNamespace)
			Expect(keys).To(HaveLen(1))
			Expect(keys[0].Identity).To(Equal(identity))
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
			Expect(status.Warnings).To(BeEmpty())
			secret, err := credentials(ctx, h, kluctlNamespace)
			Expect(err).NotTo(HaveOccurred())
			Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(identity))
		},
		Entry("from the project's Secret", Label(labelDeployed), "legacyprj", func(string) string { return constants.LegacyDeployKeySecretName }),
		Entry("from a shoot's Secret, which the extension may not read", Label(labelDeployed), "legacysht", func(shoot string) string {
			return constants.LegacyDeployKeySecretName + "-" + shoot
		}),
	)

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

		By("leaving a data key alone that a project admin added")
		key, _ := deployKeys(ctx, projectNamespace)
		patch := client.MergeFrom(key.DeepCopy())
		key.Data["notes"] = []byte("hands off")
		Expect(sb.Garden.Client.Patch(ctx, key, patch)).To(Succeed())

		rotateDeployKey(ctx, h, deploykey.RotateAll)

		after, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Fingerprint).NotTo(Equal(before.Fingerprint))
		Expect(after.PublicKey).NotTo(Equal(before.PublicKey))
		Expect(after.Warnings).To(ConsistOf(ContainSubstring(`left data keys alone that are no key pairs of the extension: "notes"`)))

		key, keys := deployKeys(ctx, projectNamespace)
		Expect(key.Annotations).NotTo(HaveKey(constants.AnnotationRotate))
		Expect(key.Data).To(HaveKeyWithValue("notes", []byte("hands off")))
		Expect(keys).To(HaveLen(1))
		Expect(keys[0].Pub).To(Equal(after.PublicKey))

		Eventually(func(g Gomega) {
			secret, err := credentials(ctx, h, kluctlNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(keys[0].Identity))
			g.Expect(secret.Data[constants.SecretKeyIdentity]).NotTo(Equal(oldSecret.Data[constants.SecretKeyIdentity]))
		}).Should(Succeed())
	})

	DescribeTable("ends with the first key per scope when the extension restarts in the middle of the first reconciles",
		func(ctx SpecContext, scope config.KeyScope) {
			// A project name has at most 10 characters (gardener-apiserver).
			project := "restart" + string(scope)[:1]
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
			var firstKeys []keyPair
			Eventually(func(g Gomega) {
				for _, h := range shoots {
					_, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
					g.Expect(err).NotTo(HaveOccurred())
				}
				_, firstKeys = deployKeys(ctx, projectNamespace)
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

			_, keys := deployKeys(ctx, projectNamespace)
			Expect(keys).To(Equal(firstKeys))
			for _, h := range shoots {
				key := keys[0]
				if scope == config.KeyScopeShoot {
					idx := slices.IndexFunc(keys, func(k keyPair) bool { return strings.HasPrefix(k.Name, "shoot."+h.Name+".") })
					Expect(idx).NotTo(BeNumerically("<", 0), "no key of shoot %s", h.Name)
					key = keys[idx]
				}
				expectControllers(ctx, h, true)
				secret, err := credentials(ctx, h, kluctlNamespace)
				Expect(err).NotTo(HaveOccurred())
				Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(key.Identity), "shoot %s", h.Name)
			}
		},
		Entry("repository-scoped keys", config.KeyScopeRepository),
		Entry("shoot-scoped keys", config.KeyScopeShoot),
	)
})
