// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension_test

import (
	"encoding/json"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/secrets"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

const (
	projectNamespace = "garden-foo"
	seedNamespace    = "shoot--foo--bar"
	// fluxNamespace and kluctlNamespace are the defaults of flux.namespace and kluctl.namespace.
	fluxNamespace   = "flux-system"
	kluctlNamespace = "kluctl-system"
)

// The specs are ordered: one shoot goes through enable, a project change and disable.
var _ = Describe("The shoot-flux Extension controller", Ordered, func() {
	var (
		projectConfig *corev1.ConfigMap
		ex            *extensionsv1alpha1.Extension
	)

	BeforeAll(func() {
		By("the project's ConfigMap in the garden")
		Expect(seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: projectNamespace}})).To(Succeed())
		projectConfig = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: projectNamespace},
			Data:       map[string]string{"repositoryUrl": "https://git.example.com/org/fleet.git", "repositoryBranch": "main"},
		}
		Expect(seed.Client.Create(ctx, projectConfig)).To(Succeed())

		By("the shoot in the seed, as gardenlet sets it up: seed namespace, shoot access, Cluster")
		Expect(seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   seedNamespace,
			Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot},
		}})).To(Succeed())
		kubeconfig, err := shoot.Kubeconfig()
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{v1beta1constants.SecretNameGardener, v1beta1constants.SecretNameGardenerInternal} {
			Expect(seed.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seedNamespace},
				Data:       map[string][]byte{secrets.DataKeyKubeconfig: kubeconfig},
			})).To(Succeed())
		}
		cluster := &extensionsv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: seedNamespace},
			Spec: extensionsv1alpha1.ClusterSpec{
				Shoot: raw(&gardencorev1beta1.Shoot{
					TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
					ObjectMeta: metav1.ObjectMeta{Name: "bar", Namespace: projectNamespace},
					Spec: gardencorev1beta1.ShootSpec{
						Kubernetes: gardencorev1beta1.Kubernetes{Version: "1.35.1"},
						Extensions: []gardencorev1beta1.Extension{{Type: constants.ExtensionType}},
					},
				}),
				CloudProfile: raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"}),
				Seed:         ptr.To(raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"})),
			},
		}
		Expect(seed.Client.Create(ctx, cluster)).To(Succeed())
		// The controller reads the Cluster from its cache when it admits an Extension event.
		Eventually(func() error {
			return extensionCache.Get(ctx, client.ObjectKeyFromObject(cluster), &extensionsv1alpha1.Cluster{})
		}).WithTimeout(timeout).Should(Succeed())
	})

	It("deploys the controllers and the project's bootstrap into the shoot and reports Succeeded", func() {
		By("gardenlet's request: an Extension with the operation annotation")
		ex = &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{
				Name:        constants.ExtensionType,
				Namespace:   seedNamespace,
				Annotations: map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile},
			},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ExtensionType}},
		}
		Expect(seed.Client.Create(ctx, ex)).To(Succeed())
		Eventually(lastOperation).WithArguments(ex).WithTimeout(timeout).Should(HaveField("State", gardencorev1beta1.LastOperationStateSucceeded))
		Expect(ex.Annotations).NotTo(HaveKey(v1beta1constants.GardenerOperation), "the request is answered")

		By("the ManagedResources in the seed namespace, applied")
		for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
			Expect(mr.Status.Conditions).To(ContainElement(And(
				HaveField("Type", resourcesv1alpha1.ResourcesApplied),
				HaveField("Status", gardencorev1beta1.ConditionTrue),
			)), "ManagedResource %s", name)
		}

		By("their objects in the shoot")
		Expect(shoot.Client.Get(ctx, client.ObjectKey{Namespace: fluxNamespace, Name: "source-controller"}, &appsv1.Deployment{})).To(Succeed())
		Expect(shoot.Client.Get(ctx, client.ObjectKey{Namespace: kluctlNamespace, Name: "kluctl-controller"}, &appsv1.Deployment{})).To(Succeed())
		Expect(bootstrapURL()).To(Equal("https://git.example.com/org/fleet.git"))

		By("the providerStatus")
		status := providerStatus(ex)
		Expect(status.FluxVersion).To(Equal("v2.9.5"), "the newest embedded release for Kubernetes 1.35")
		Expect(status.ProjectConfigHash).To(Equal(fluxconfig.ConfigMapHash(projectConfig)))
	})

	It("brings a change of the project's ConfigMap to the shoot without a request of gardenlet", func() {
		projectConfig.Data["repositoryUrl"] = "https://git.example.com/org/fleet-moved.git"
		Expect(seed.Client.Update(ctx, projectConfig)).To(Succeed())

		Eventually(bootstrapURL).WithTimeout(timeout).Should(Equal("https://git.example.com/org/fleet-moved.git"))
		Eventually(func(g Gomega) string {
			g.Expect(seed.Client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			return providerStatus(ex).ProjectConfigHash
		}).WithTimeout(timeout).Should(Equal(fluxconfig.ConfigMapHash(projectConfig)))
	})

	It("removes the ManagedResources and the controllers from the shoot when the Extension is deleted", func() {
		Expect(seed.Client.Delete(ctx, ex)).To(Succeed())
		Eventually(func() error {
			return seed.Client.Get(ctx, client.ObjectKeyFromObject(ex), &extensionsv1alpha1.Extension{})
		}).WithTimeout(timeout).Should(Satisfy(apierrors.IsNotFound), "the controller removes its finalizer")

		for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
			err := seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManagedResource %s: %v", name, err)
		}
		err := shoot.Client.Get(ctx, client.ObjectKey{Namespace: fluxNamespace, Name: "source-controller"}, &appsv1.Deployment{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the controllers are gone: %v", err)
		_, err = bootstrapObject()
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the bootstrap object is gone: %v", err)
		Expect(shoot.Client.Get(ctx, client.ObjectKey{Name: fluxNamespace}, &corev1.Namespace{})).To(Succeed(), "the namespace stays, with the users' objects")
	})
})

func raw(o any) runtime.RawExtension {
	GinkgoHelper()
	b, err := json.Marshal(o)
	Expect(err).NotTo(HaveOccurred())
	return runtime.RawExtension{Raw: b}
}

// lastOperation reads the Extension into ex and returns its lastOperation.
func lastOperation(ex *extensionsv1alpha1.Extension) (*gardencorev1beta1.LastOperation, error) {
	if err := seed.Client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
		return nil, err
	}
	return ex.Status.LastOperation, nil
}

func providerStatus(ex *extensionsv1alpha1.Extension) *fluxv1alpha1.FluxStatus {
	GinkgoHelper()
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	Expect(err).NotTo(HaveOccurred())
	Expect(status).NotTo(BeNil())
	return status
}

// bootstrapObject reads the bootstrap KluctlDeployment from the shoot.
func bootstrapObject() (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(bootstrap.KluctlDeploymentGVK)
	err := shoot.Client.Get(ctx, client.ObjectKey{Namespace: kluctlNamespace, Name: constants.BootstrapName}, obj)
	return obj, err
}

// bootstrapURL returns the repository URL of the bootstrap KluctlDeployment in the shoot.
func bootstrapURL() (string, error) {
	obj, err := bootstrapObject()
	if err != nil {
		return "", err
	}
	url, _, err := unstructured.NestedString(obj.Object, "spec", "source", "git", "url")
	return url, err
}
