// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// restartQuietPeriod is how long a shoot whose configuration did not change is watched after a
// restart of the extension for a reconcile that should not happen.
var restartQuietPeriod = 5 * time.Second

var _ = Describe("Configuration layers", func() {
	It("applies the providerConfig over the project ConfigMap", func(ctx SpecContext) {
		const url = "https://git.example.com/platform/fleet.git"
		project := "override"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(url, "main", "public"))

		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", ProviderConfig: []byte(`
apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
flux:
  components: [source-controller, kustomize-controller]
source:
  ref:
    tag: v1.2.3
  path: clusters/dev
bootstrap:
  kluctl:
    target: dev
    args:
      environment: dev
      replicas: 2
`)})

		expectControllers(ctx, h, true)
		Eventually(func(g Gomega) {
			g.Expect(get(ctx, h.Shoot.Client, &appsv1.Deployment{}, fluxNamespace, "kustomize-controller")).To(Succeed())
			g.Expect(get(ctx, h.Shoot.Client, &apiextensionsv1.CustomResourceDefinition{}, "", "kustomizations.kustomize.toolkit.fluxcd.io")).To(Succeed())
		}).Should(Succeed())

		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "url")).To(Equal(url), "the URL comes from the ConfigMap")
		Expect(nestedString(kd, "spec", "source", "git", "ref", "tag")).To(Equal("v1.2.3"))
		Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(BeEmpty(), "a ref in the providerConfig replaces the ConfigMap's branch")
		Expect(nestedString(kd, "spec", "source", "git", "path")).To(Equal("clusters/dev"))
		Expect(nestedString(kd, "spec", "target")).To(Equal("dev"))
		args, _, err := unstructured.NestedMap(kd.Object, "spec", "args")
		Expect(err).NotTo(HaveOccurred())
		// The user's args, next to the shoot's identity the bootstrap adds under "shoot".
		Expect(args).To(HaveKeyWithValue("environment", "dev"))
		Expect(args).To(HaveKeyWithValue("replicas", int64(2)))
		Expect(args).To(HaveKeyWithValue("shoot", HaveKeyWithValue("name", "one")))
		Expect(args).To(HaveLen(3))

		By("changing the providerConfig: kustomize-controller removed, another tag")
		Expect(h.UpdateProviderConfig(ctx, []byte(`
apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1
kind: FluxConfig
source:
  ref:
    tag: v1.3.0
`))).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())

		Eventually(func(g Gomega) {
			err := get(ctx, h.Shoot.Client, &appsv1.Deployment{}, fluxNamespace, "kustomize-controller")
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kustomize-controller should be removed, got %v", err)
		}).Should(Succeed())
		kd, err = kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "ref", "tag")).To(Equal("v1.3.0"))
		Expect(nestedString(kd, "spec", "source", "git", "path")).To(Equal("."))
		Expect(nestedString(kd, "spec", "target")).To(BeEmpty())
		Expect(get(ctx, h.Shoot.Client, &appsv1.Deployment{}, fluxNamespace, "source-controller")).To(Succeed())
	})

	It("propagates a project ConfigMap change to all shoots of the project without touching their Extensions", Label(labelDeployed), func(ctx SpecContext) {
		project := "propagate"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig("https://git.example.com/old/fleet.git", "main", "public"))

		var shoots []*sandbox.ShootHandle
		generations := map[string]int64{}
		for i := range 3 {
			h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: fmt.Sprintf("shoot%d", i)})
			ex, err := h.Extension(ctx)
			Expect(err).NotTo(HaveOccurred())
			generations[h.SeedNamespace] = ex.Generation
			shoots = append(shoots, h)
		}

		for _, h := range shoots {
			Expect(h.Checkpoint(ctx)).To(Succeed())
		}
		const newURL = "https://git.example.com/new/fleet.git"
		setProjectConfig(ctx, projectNamespace, legacyConfig(newURL, "develop", "public"))

		for _, h := range shoots {
			_, err := h.WaitSucceeded(ctx, reconcileTimeout)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				kd, err := kluctlDeployment(ctx, h)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(nestedString(kd, "spec", "source", "git", "url")).To(Equal(newURL))
				g.Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("develop"))
			}).Should(Succeed(), "shoot %s", h.SeedNamespace)

			ex, err := h.Extension(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(ex.Generation).To(Equal(generations[h.SeedNamespace]), "the Extension spec of %s must not change", h.SeedNamespace)
			Expect(ex.Annotations).NotTo(HaveKey("gardener.cloud/operation"))
		}
	})

	It("after a restart, reconciles only the shoots whose project ConfigMap changed while the extension was down", Label(labelDeployed), func(ctx SpecContext) {
		steadyNamespace := newProject(ctx, "rsteady")
		setProjectConfig(ctx, steadyNamespace, legacyConfig(publicURL, "main", "public"))
		changedNamespace := newProject(ctx, "rchanged")
		setProjectConfig(ctx, changedNamespace, legacyConfig(publicURL, "main", "public"))
		steady := createShootSucceeded(ctx, sandbox.ShootSpec{Project: "rsteady", Name: "one", SharedControlPlane: true})
		changed := createShootSucceeded(ctx, sandbox.ShootSpec{Project: "rchanged", Name: "one", SharedControlPlane: true})
		before, err := steady.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("changing one project's ConfigMap while the extension is stopped")
		Expect(sb.StopExtension()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error {
			if sb.ExtensionRunning() {
				return nil
			}
			return sb.StartExtension(ctx)
		})
		Expect(steady.Checkpoint(ctx)).To(Succeed())
		Expect(changed.Checkpoint(ctx)).To(Succeed())
		setProjectConfig(ctx, changedNamespace, legacyConfig(publicURL, "next", "public"))
		Expect(sb.StartExtension(ctx)).To(Succeed())

		By("waiting for the shoot that missed the change")
		_, err = changed.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err := changed.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Ref).To(Equal("branch:next"))

		By("checking that the other shoot is left alone")
		Expect(steady.WatchExtension(ctx, restartQuietPeriod, func(ex *extensionsv1alpha1.Extension, _ bool) (bool, error) {
			if op := ex.Status.LastOperation; op != nil && !op.LastUpdateTime.Equal(&before.Status.LastOperation.LastUpdateTime) {
				return false, fmt.Errorf("the extension reconciled the unchanged shoot again: %s %s", op.Type, op.State)
			}
			return false, nil
		})).To(Succeed())
	})

	It("after a restart, drops the bootstrap of a shoot whose project ConfigMap was deleted while the extension was down", func(ctx SpecContext) {
		projectNamespace := newProject(ctx, "rdeleted")
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: "rdeleted", Name: "one", SharedControlPlane: true})
		Expect(appliedManagedResource(ctx, h, constants.ManagedResourceBootstrap)).To(Succeed())

		By("deleting the project ConfigMap while the extension is stopped")
		Expect(sb.StopExtension()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error {
			if sb.ExtensionRunning() {
				return nil
			}
			return sb.StartExtension(ctx)
		})
		Expect(h.Checkpoint(ctx)).To(Succeed())
		Expect(sb.Garden.Client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: constants.ProjectConfigMapName}})).To(Succeed())
		Expect(sb.StartExtension(ctx)).To(Succeed())

		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Message).To(ContainSubstring("No source configured"))
		Expect(status.ProjectConfigHash).To(BeEmpty())
		err = sb.Seed.Client.Get(ctx, client.ObjectKey{Namespace: h.SeedNamespace, Name: constants.ManagedResourceBootstrap}, &resourcesv1alpha1.ManagedResource{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the bootstrap ManagedResource must be gone, got %v", err)
	})
})
