// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const publicURL = "https://git.example.com/platform/fleet.git"

var _ = Describe("Extension lifecycle", func() {
	It("removes the bootstrap objects before the controllers and keeps user workloads when disabled", Label(labelDeployed), func(ctx SpecContext) {
		project := "disable"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
		expectControllers(ctx, h, true)
		_, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())

		By("creating a user workload in the shoot")
		userConfigMap, userDeployment := createUserWorkload(ctx, h.Shoot.Client, "apps")

		By("adding a user's Flux object and letting the bootstrap's controller be gone")
		// A GitRepository the user's repository created next to the bootstrap, with the finalizer
		// source-controller puts on it.
		userSource := &unstructured.Unstructured{}
		userSource.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"})
		userSource.SetNamespace(fluxNamespace)
		userSource.SetName("apps")
		userSource.SetFinalizers([]string{"finalizers.fluxcd.io"})
		Expect(unstructured.SetNestedField(userSource.Object, map[string]any{"url": "https://git.example.com/apps.git", "interval": "5m"}, "spec")).To(Succeed())
		Expect(h.Shoot.Client.Create(ctx, userSource)).To(Succeed())
		// The kluctl controller's finalizer on the bootstrap KluctlDeployment, with no controller
		// running to remove it, as when it was scaled down.
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		kd.SetFinalizers([]string{"gitops.kluctl.io/kluctl-deployment"})
		Expect(h.Shoot.Client.Update(ctx, kd)).To(Succeed())

		mrs := &resourcesv1alpha1.ManagedResourceList{}
		Expect(sb.Seed.Client.List(ctx, mrs, client.InNamespace(h.SeedNamespace))).To(Succeed())
		Expect(mrs.Items).To(HaveLen(2))

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed())
		AddReportEntry("disable", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))

		By("checking the order of the ManagedResource deletions")
		order := managedResourceDeletionOrder(ctx, h.SeedNamespace, mrs.ResourceVersion)
		Expect(order).To(Equal([]string{
			"deleting " + constants.ManagedResourceBootstrap,
			"deleted " + constants.ManagedResourceBootstrap,
			"deleting " + constants.ManagedResourceControllers,
			"deleted " + constants.ManagedResourceControllers,
		}))

		By("checking the shoot: the controllers are gone, their CRDs, namespaces and the Flux and kluctl objects stay")
		Eventually(func(g Gomega) {
			for _, ns := range []string{fluxNamespace, kluctlNamespace} {
				deployments := &appsv1.DeploymentList{}
				g.Expect(h.Shoot.Client.List(ctx, deployments, client.InNamespace(ns))).To(Succeed())
				g.Expect(deployments.Items).To(BeEmpty(), "deployments in %s", ns)
			}
		}).Should(Succeed())
		for _, ns := range []string{fluxNamespace, kluctlNamespace} {
			namespace := &corev1.Namespace{}
			Expect(get(ctx, h.Shoot.Client, namespace, "", ns)).To(Succeed())
			Expect(namespace.DeletionTimestamp).To(BeNil(), "namespace %s", ns)
		}
		for _, crd := range []string{"gitrepositories.source.toolkit.fluxcd.io", "kluctldeployments.gitops.kluctl.io"} {
			obj := &apiextensionsv1.CustomResourceDefinition{}
			Expect(get(ctx, h.Shoot.Client, obj, "", crd)).To(Succeed())
			Expect(obj.DeletionTimestamp).To(BeNil(), "CRD %s", crd)
		}
		Expect(get(ctx, h.Shoot.Client, userSource, fluxNamespace, "apps")).To(Succeed())
		Expect(userSource.GetDeletionTimestamp()).To(BeNil(), "the user's GitRepository must not be deleted")
		kd, err = kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred(), "a bootstrap object whose controller is gone is left in the shoot")
		Expect(kd.GetFinalizers()).To(ConsistOf("gitops.kluctl.io/kluctl-deployment"))
		for _, obj := range []client.Object{userConfigMap, userDeployment} {
			Expect(get(ctx, h.Shoot.Client, obj, obj.GetNamespace(), obj.GetName())).To(Succeed())
			Expect(obj.GetDeletionTimestamp()).To(BeNil())
		}
		Expect(get(ctx, h.Shoot.Client, &corev1.Namespace{}, "", "apps")).To(Succeed())

		for _, mr := range mrs.Items {
			for _, ref := range mr.Spec.SecretRefs {
				err := get(ctx, sb.Seed.Client, &corev1.Secret{}, h.SeedNamespace, ref.Name)
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s of %s should be deleted, got %v", ref.Name, mr.Name, err)
			}
		}
	})

	It("releases the ManagedResources on migration and takes them back on restoration", Label(labelDeployed), func(ctx SpecContext) {
		project := "migrate"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
		expectControllers(ctx, h, true)

		Expect(h.Migrate(ctx, reconcileTimeout)).To(Succeed())

		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			_, err := h.ManagedResource(ctx, name)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "managed resource %s should be gone, got %v", name, err)
		}
		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(ex.Finalizers).To(BeEmpty(), "a migrated Extension must not block its deletion in the old seed")

		By("checking that the shoot keeps running its GitOps objects")
		Consistently(func(g Gomega) {
			deployment := &appsv1.Deployment{}
			g.Expect(get(ctx, h.Shoot.Client, deployment, fluxNamespace, "source-controller")).To(Succeed())
			g.Expect(deployment.DeletionTimestamp).To(BeNil())
			kd, err := kluctlDeployment(ctx, h)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kd.GetDeletionTimestamp()).To(BeNil())
			_, err = h.ManagedResource(ctx, constants.ManagedResourceControllers)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a migrated Extension must not be reconciled")
		}).Should(Succeed())

		By("restoring")
		Expect(h.Restore(ctx)).To(Succeed())
		_, err = h.WaitRestored(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			Expect(appliedManagedResource(ctx, h, name)).To(Succeed())
		}
		expectControllers(ctx, h, true)
		_, err = kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
	})

	It("reconciles a hibernated shoot without waiting for its resource manager", Label(labelDeployed), func(ctx SpecContext) {
		project := "hibernate"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", Hibernated: true})

		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			mr, err := h.ManagedResource(ctx, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(mr.Status.ObservedGeneration).To(BeZero(), "nobody applies %s while the shoot sleeps", name)
		}
		err := get(ctx, h.Shoot.Client, &corev1.Namespace{}, "", fluxNamespace)
		Expect(apierrors.IsNotFound(err)).To(BeTrue())

		By("waking the shoot up")
		Expect(h.SetHibernated(ctx, false)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			Expect(appliedManagedResource(ctx, h, name)).To(Succeed())
		}
		expectControllers(ctx, h, true)

		By("hibernating and changing the configuration meanwhile")
		Expect(h.SetHibernated(ctx, true)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.UpdateProviderConfig(ctx, []byte(`{"source":{"path":"clusters/sleepy"}}`))).To(Succeed())
		// Shorter than the extension's wait for the ManagedResource, so a reconcile that waits for
		// the stopped resource manager fails this step.
		_, err = h.WaitSucceeded(ctx, hibernatedReconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceBootstrap)
		Expect(err).NotTo(HaveOccurred())
		Expect(mr.Status.ObservedGeneration).To(BeNumerically("<", mr.Generation), "the new bootstrap objects wait for the wake-up")
	})
})

var _ = Describe("Disabling the extension for a hibernated shoot", func() {
	It("takes nothing from the shoot when it wakes up", Label(labelDeployed), func(ctx SpecContext) {
		project := "disasleep"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		// The kluctl controller's finalizer, which nobody removes once the controller is gone.
		kd.SetFinalizers([]string{"gitops.kluctl.io/kluctl-deployment"})
		Expect(h.Shoot.Client.Update(ctx, kd)).To(Succeed())

		By("hibernating the shoot and disabling the extension")
		Expect(h.SetHibernated(ctx, true)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Expect(h.Delete(ctx, hibernatedReconcileTimeout)).To(Succeed(), "nothing to wait for while the shoot sleeps")
		AddReportEntry("disable while hibernated", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))

		By("waking the shoot up: its resource manager removes the controllers and releases the rest")
		Expect(h.StartResourceManager(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				_, err := h.ManagedResource(ctx, name)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "managed resource %s should be gone, got %v", name, err)
			}
			deployments := &appsv1.DeploymentList{}
			g.Expect(h.Shoot.Client.List(ctx, deployments, client.InNamespace(fluxNamespace))).To(Succeed())
			g.Expect(deployments.Items).To(BeEmpty())
		}).WithTimeout(deleteTimeout).Should(Succeed())
		kd, err = kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred(), "the bootstrap object stays")
		Expect(kd.GetDeletionTimestamp()).To(BeNil())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(get(ctx, h.Shoot.Client, crd, "", "kluctldeployments.gitops.kluctl.io")).To(Succeed())
		Expect(crd.DeletionTimestamp).To(BeNil())
		for _, ns := range []string{fluxNamespace, kluctlNamespace} {
			namespace := &corev1.Namespace{}
			Expect(get(ctx, h.Shoot.Client, namespace, "", ns)).To(Succeed())
			Expect(namespace.DeletionTimestamp).To(BeNil(), "namespace %s", ns)
		}
	})
})

// The extension deletes the Secret a new content superseded once the resource manager applied
// the new one; a reconcile that fails in between leaves the old one behind, unreferenced, and its
// retries find nothing superseded any more. In a landscape the garbage collector of the seed's
// gardener-resource-manager removes it, as it does in the sandbox.
var _ = Describe("ManagedResource Secrets", func() {
	It("leaves the Secret superseded by an unappliable bootstrap to gardener-resource-manager's garbage collector", func(ctx SpecContext) {
		project := "gcsupersed"
		newUnappliableProject(ctx, project)
		spec := unappliableShoot(project, "one", false)
		unappliable := spec.ProviderConfig
		spec.ProviderConfig = nil
		h := createShootSucceeded(ctx, spec)
		superseded := managedResourceSecret(ctx, h, constants.ManagedResourceBootstrap)
		controllers := managedResourceSecret(ctx, h, constants.ManagedResourceControllers)

		By("writing a bootstrap the resource manager cannot apply")
		Expect(h.UpdateProviderConfig(ctx, unappliable)).To(Succeed())
		lastErr, err := waitUnappliable(ctx, h, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectUnappliable(h, lastErr)
		current := managedResourceSecret(ctx, h, constants.ManagedResourceBootstrap)
		Expect(current).NotTo(Equal(superseded))

		// With the extension stopped, only the garbage collector deletes Secrets.
		By("stopping the extension and waiting for the garbage collector")
		Expect(sb.StopExtension()).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error {
			if sb.ExtensionRunning() {
				return nil
			}
			return sb.StartExtension(ctx)
		})
		Eventually(func() error {
			return get(ctx, sb.Seed.Client, &corev1.Secret{}, h.SeedNamespace, superseded)
		}).WithTimeout(garbageCollectionTimeout).Should(Satisfy(apierrors.IsNotFound), "Secret %s is still there", superseded)
		// The collection that removed it kept what the ManagedResources reference.
		for _, name := range []string{current, controllers} {
			Expect(get(ctx, sb.Seed.Client, &corev1.Secret{}, h.SeedNamespace, name)).To(Succeed(), "Secret %s", name)
		}
	})
})

// garbageCollectionTimeout bounds the wait for the garbage collector of the seed's resource
// manager to delete an unreferenced Secret: it does at its first run after the Secret reached the
// minimum age, and a loaded machine may delay that run.
var garbageCollectionTimeout = sandbox.ResourceManagerGarbageCollectionMinimumAge + sandbox.ResourceManagerGarbageCollectionPeriod + time.Minute

// managedResourceSecret returns the name of the one Secret a ManagedResource of the shoot references.
func managedResourceSecret(ctx context.Context, h *sandbox.ShootHandle, name string) string {
	GinkgoHelper()
	mr, err := h.ManagedResource(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	Expect(mr.Spec.SecretRefs).To(HaveLen(1), "Secrets of %s", name)
	return mr.Spec.SecretRefs[0].Name
}

// hibernatedReconcileTimeout is well below the extension's wait for a ManagedResource (2m).
var hibernatedReconcileTimeout = 45 * time.Second

// createUserWorkload creates a namespace with a ConfigMap and a Deployment that do not belong to
// the extension.
func createUserWorkload(ctx context.Context, c client.Client, namespace string) (*corev1.ConfigMap, *appsv1.Deployment) {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "user-config"}, Data: map[string]string{"owner": "user"}}
	Expect(c.Create(ctx, cm)).To(Succeed())
	labels := map[string]string{"app": "user-app"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "user-app"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:1.0"}}},
			},
		},
	}
	Expect(c.Create(ctx, deployment)).To(Succeed())
	return cm, deployment
}

// managedResourceDeletionOrder replays the changes of the shoot's ManagedResources after
// resourceVersion and returns when each got its deletion timestamp and when each was gone.
func managedResourceDeletionOrder(ctx context.Context, namespace, resourceVersion string) []string {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, shootTimeout)
	defer cancel()
	w, err := sb.Seed.Client.Watch(ctx, &resourcesv1alpha1.ManagedResourceList{}, &client.ListOptions{
		Namespace: namespace,
		Raw:       &metav1.ListOptions{ResourceVersion: resourceVersion},
	})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	var order []string
	deleting := map[string]bool{}
	deleted := 0
	for deleted < 2 {
		select {
		case <-ctx.Done():
			Fail(fmt.Sprintf("not all ManagedResources were deleted; seen: %v", order))
		case ev, ok := <-w.ResultChan():
			Expect(ok).To(BeTrue(), "watch ended early; seen: %v", order)
			Expect(ev.Type).NotTo(Equal(watch.Error), "watch failed: %v", ev.Object)
			mr := ev.Object.(*resourcesv1alpha1.ManagedResource)
			if mr.DeletionTimestamp != nil && !deleting[mr.Name] {
				deleting[mr.Name] = true
				order = append(order, "deleting "+mr.Name)
			}
			if ev.Type == watch.Deleted {
				order = append(order, "deleted "+mr.Name)
				deleted++
			}
		}
	}
	return order
}
