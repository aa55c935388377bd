// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("A shoot whose OCIRepository CRD another installer of Flux v2.4 left", func() {
	It("gets its objects migrated off v1beta2 before the controllers are deployed, each object kept, and reported", func(ctx SpecContext) {
		const (
			project   = "storedver"
			namespace = "tenant"
			objects   = 20
			crdName   = "ocirepositories.source.toolkit.fluxcd.io"
		)
		newProject(ctx, project)
		h := createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "adopted", DeferExtension: true})

		By("installing the CRD of source-controller/api v1.4.1, which stores v1beta2, and objects")
		data, err := os.ReadFile("../storedversions/testdata/ocirepositories-v1.4.1.yaml")
		Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &crd.Object)).To(Succeed())
		Expect(h.Shoot.Client.Create(ctx, crd)).To(Succeed())
		Expect(h.Shoot.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		older := schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1beta2", Kind: "OCIRepository"}
		uids := map[string]types.UID{}
		for i := range objects {
			repo := unstructuredObject(older)
			repo.SetNamespace(namespace)
			repo.SetName(fmt.Sprintf("app-%02d", i))
			Expect(unstructured.SetNestedField(repo.Object, "oci://registry.example.com/app", "spec", "url")).To(Succeed())
			Expect(unstructured.SetNestedField(repo.Object, "5m", "spec", "interval")).To(Succeed())
			Eventually(func() error { return h.Shoot.Client.Create(ctx, repo) }).WithContext(ctx).WithTimeout(reconcileTimeout).Should(Succeed(), "the CRD is served")
			uids[repo.GetName()] = repo.GetUID()
		}

		By("enabling the extension")
		Expect(h.CreateExtension(ctx)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.StoredVersions).NotTo(BeNil())
		Expect(status.StoredVersions.Migrated).To(Equal([]fluxv1alpha1.MigratedKind{{CRD: crdName, Kind: "OCIRepository", From: []string{"v1beta2"}, To: "v1", Objects: objects}}))

		By("checking that the delivered CRD replaced it and every object is the same, readable at v1")
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		Expect(h.Shoot.Client.Get(ctx, client.ObjectKey{Name: crdName}, live)).To(Succeed())
		stored, _, _ := unstructured.NestedStringSlice(live.Object, "status", "storedVersions")
		Expect(stored).To(Equal([]string{"v1"}))
		versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
		Expect(versions).To(HaveLen(1), "the delivered CRD, which has v1 only")
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepositoryList"})
		Expect(h.Shoot.Client.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		Expect(list.Items).To(HaveLen(objects))
		for _, repo := range list.Items {
			Expect(repo.GetUID()).To(Equal(uids[repo.GetName()]), repo.GetName())
		}
	})
})
