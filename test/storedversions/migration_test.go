// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions_test

import (
	"context"
	"fmt"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

const (
	ociRepositories = "ocirepositories.source.toolkit.fluxcd.io"
	objects         = 100
	namespace       = "flux-system"
)

// olderOCIRepositoryCRD is the CRD of source-controller/api v1.4.1 (Flux v2.4): v1beta2 only.
func olderOCIRepositoryCRD() *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile("testdata/ocirepositories-v1.4.1.yaml")
	Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(yaml.Unmarshal(data, crd)).To(Succeed())
	Expect(crd.Spec.Versions).To(HaveLen(1))
	Expect(crd.Spec.Versions[0]).To(And(HaveField("Name", "v1beta2"), HaveField("Storage", true)))
	return crd
}

func desiredCRD(name string) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range desired {
		if c.Name == name {
			return c.DeepCopy()
		}
	}
	Fail("no desired CRD " + name)
	return nil
}

// applyDesired updates the live CRD to the desired one, as the resource manager does.
func applyDesired(ctx context.Context) error {
	live := &apiextensionsv1.CustomResourceDefinition{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: ociRepositories}, live)).To(Succeed())
	live.Spec = desiredCRD(ociRepositories).Spec
	return k8s.Update(ctx, live)
}

func ociRepositoryList(version string) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("source.toolkit.fluxcd.io/" + version)
	list.SetKind("OCIRepositoryList")
	return list
}

var _ = Describe("Migrating the stored versions of a CRD of Flux v2.4", Ordered, func() {
	var uids map[string]types.UID

	BeforeAll(func(ctx SpecContext) {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
		Expect(k8s.Create(ctx, olderOCIRepositoryCRD())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, ociRepositoryList("v1beta2"), client.InNamespace(namespace))).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		uids = map[string]types.UID{}
		for i := range objects {
			repo := &unstructured.Unstructured{}
			repo.SetAPIVersion("source.toolkit.fluxcd.io/v1beta2")
			repo.SetKind("OCIRepository")
			repo.SetNamespace(namespace)
			repo.SetName(fmt.Sprintf("tenant-%03d", i))
			Expect(unstructured.SetNestedField(repo.Object, "oci://registry.example.com/tenant/manifests", "spec", "url")).To(Succeed())
			Expect(unstructured.SetNestedField(repo.Object, "10m", "spec", "interval")).To(Succeed())
			Expect(unstructured.SetNestedField(repo.Object, "latest", "spec", "ref", "tag")).To(Succeed())
			Expect(k8s.Create(ctx, repo, client.FieldOwner("flux-v2.4"))).To(Succeed())
			uids[repo.GetName()] = repo.GetUID()
		}
	})

	It("is needed: the API server refuses the new CRD while v1beta2 is a stored version", func(ctx SpecContext) {
		err := applyDesired(ctx)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(ContainSubstring(`status.storedVersions[0]: Invalid value: "v1beta2": missing from spec.versions; v1beta2 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta2 and removes v1beta2 from status.storedVersions`)))
	})

	It("rewrites every object at v1 and trims storedVersions, keeping v1beta2 served for the running controllers", func(ctx SpecContext) {
		c := shootClient()
		live := &apiextensionsv1.CustomResourceDefinition{}
		Expect(c.Get(ctx, client.ObjectKey{Name: ociRepositories}, live)).To(Succeed())
		plan := storedversions.Plan([]apiextensionsv1.CustomResourceDefinition{*live}, desired)
		Expect(plan).To(HaveLen(1))

		start := time.Now()
		result, err := storedversions.Migrate(ctx, c, plan, storedversions.DefaultLimits())
		elapsed := time.Since(start)
		Expect(err).NotTo(HaveOccurred())
		// The figures for docs/performance.md; the settle after the change of the storage version
		// is a fixed wait.
		rewrite := elapsed - storedversions.StorageSwitchSettle
		GinkgoWriter.Printf("migrated %d objects in %s, of which %s without the settle (%.0f objects/s)\n", objects, elapsed, rewrite, float64(objects)/rewrite.Seconds())
		Expect(result.Kinds).To(Equal([]storedversions.Kind{{CRD: ociRepositories, Kind: "OCIRepository", From: []string{"v1beta2"}, To: "v1", Objects: objects}}))

		Expect(k8s.Get(ctx, client.ObjectKey{Name: ociRepositories}, live)).To(Succeed())
		Expect(live.Status.StoredVersions).To(Equal([]string{"v1"}))
		Expect(live.Spec.Versions).To(ConsistOf(
			And(HaveField("Name", "v1beta2"), HaveField("Served", true), HaveField("Storage", false)),
			And(HaveField("Name", "v1"), HaveField("Served", true), HaveField("Storage", true))))
		old := ociRepositoryList("v1beta2")
		Expect(k8s.List(ctx, old, client.InNamespace(namespace))).To(Succeed())
		Expect(old.Items).To(HaveLen(objects))
	})

	It("lets the new CRD apply, and every object stays the same object, readable without v1beta2", func(ctx SpecContext) {
		Expect(applyDesired(ctx)).To(Succeed())
		live := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: ociRepositories}, live)).To(Succeed())
		Expect(live.Status.StoredVersions).To(Equal([]string{"v1"}))
		Expect(live.Spec.Versions).To(ConsistOf(HaveField("Name", "v1")))

		// An object still stored at v1beta2 would now fail the list: the API server cannot
		// decode a version the CRD no longer has.
		list := ociRepositoryList("v1")
		Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(objects))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		for _, repo := range list.Items {
			Expect(repo.GetUID()).To(Equal(uids[repo.GetName()]), repo.GetName())
			url, _, _ := unstructured.NestedString(repo.Object, "spec", "url")
			Expect(url).To(Equal("oci://registry.example.com/tenant/manifests"))
			for _, f := range repo.GetManagedFields() {
				Expect(f.APIVersion).To(Equal("source.toolkit.fluxcd.io/v1"), "%s: managedFields of %s", repo.GetName(), f.Manager)
			}
		}
	})
})
