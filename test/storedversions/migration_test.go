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
	helmReleases    = "helmreleases.helm.toolkit.fluxcd.io"
	objects         = 100
	namespace       = "flux-system"
	// helmNamespace holds the HelmReleases, apart from the OCIRepositories' namespace.
	helmNamespace = "apps"
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

// olderHelmReleaseCRD is the v2beta2 HelmRelease of helm-controller/api v1.1.0 (Flux v2.4), the
// storage version up to Flux v2.2: v2beta2 only.
func olderHelmReleaseCRD() *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile("testdata/helmreleases-v1.1.0.yaml")
	Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(yaml.Unmarshal(data, crd)).To(Succeed())
	Expect(crd.Name).To(Equal(helmReleases))
	Expect(crd.Spec.Versions).To(HaveLen(1))
	Expect(crd.Spec.Versions[0]).To(And(HaveField("Name", "v2beta2"), HaveField("Storage", true)))
	return crd
}

// applyDesired updates the live CRD name to the desired one, as the resource manager does.
func applyDesired(ctx context.Context, name string) error {
	live := &apiextensionsv1.CustomResourceDefinition{}
	Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, live)).To(Succeed())
	live.Spec = desiredCRD(name).Spec
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
		err := applyDesired(ctx, ociRepositories)
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
		Expect(applyDesired(ctx, ociRepositories)).To(Succeed())
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

func helmReleaseList(version string) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("helm.toolkit.fluxcd.io/" + version)
	list.SetKind("HelmReleaseList")
	return list
}

var _ = Describe("Migrating the HelmReleases of a shoot whose Flux stored them at v2beta2", Ordered, func() {
	var uids map[string]types.UID
	values := map[string]any{"replicaCount": int64(2), "ingress": map[string]any{"enabled": true}}

	BeforeAll(func(ctx SpecContext) {
		// The embedded releases' HelmRelease CRD has only v2, the storage version since Flux v2.3.
		Expect(desiredCRD(helmReleases).Spec.Versions).To(ConsistOf(And(HaveField("Name", "v2"), HaveField("Storage", true))))
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: helmNamespace}})).To(Succeed())
		Expect(k8s.Create(ctx, olderHelmReleaseCRD())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, helmReleaseList("v2beta2"), client.InNamespace(helmNamespace))).To(Succeed())
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		uids = map[string]types.UID{}
		for i := range objects {
			release := &unstructured.Unstructured{}
			release.SetAPIVersion("helm.toolkit.fluxcd.io/v2beta2")
			release.SetKind("HelmRelease")
			release.SetNamespace(helmNamespace)
			release.SetName(fmt.Sprintf("app-%03d", i))
			Expect(unstructured.SetNestedMap(release.Object, map[string]any{
				"interval": "10m",
				"chart": map[string]any{"spec": map[string]any{
					"chart": "podinfo", "version": "6.x",
					"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo", "namespace": namespace},
				}},
				"values": values,
			}, "spec")).To(Succeed())
			Expect(k8s.Create(ctx, release, client.FieldOwner("flux-v2.2"))).To(Succeed())
			uids[release.GetName()] = release.GetUID()
		}
	})

	It("is needed: the API server refuses the new CRD while v2beta2 is a stored version", func(ctx SpecContext) {
		err := applyDesired(ctx, helmReleases)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(ContainSubstring(`status.storedVersions[0]: Invalid value: "v2beta2": missing from spec.versions; v2beta2 was previously a storage version`)))
	})

	It("rewrites every object at v2 and trims storedVersions, keeping v2beta2 served for the running controllers", func(ctx SpecContext) {
		c := shootClient()
		live := &apiextensionsv1.CustomResourceDefinition{}
		Expect(c.Get(ctx, client.ObjectKey{Name: helmReleases}, live)).To(Succeed())
		plan := storedversions.Plan([]apiextensionsv1.CustomResourceDefinition{*live}, desired)
		Expect(plan).To(ConsistOf(And(HaveField("CRD", helmReleases), HaveField("Stale", []string{"v2beta2"}),
			HaveField("StorageVersion", "v2"), HaveField("LiveStorageVersion", "v2beta2"))))

		result, err := storedversions.Migrate(ctx, c, plan, storedversions.DefaultLimits())
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Kinds).To(Equal([]storedversions.Kind{{CRD: helmReleases, Kind: "HelmRelease", From: []string{"v2beta2"}, To: "v2", Objects: objects}}))

		Expect(k8s.Get(ctx, client.ObjectKey{Name: helmReleases}, live)).To(Succeed())
		Expect(live.Status.StoredVersions).To(Equal([]string{"v2"}))
		Expect(live.Spec.Versions).To(ConsistOf(
			And(HaveField("Name", "v2beta2"), HaveField("Served", true), HaveField("Storage", false)),
			And(HaveField("Name", "v2"), HaveField("Served", true), HaveField("Storage", true))))
		old := helmReleaseList("v2beta2")
		Expect(k8s.List(ctx, old, client.InNamespace(helmNamespace))).To(Succeed())
		Expect(old.Items).To(HaveLen(objects))
	})

	It("lets the new CRD apply, and every object stays the same object, readable without v2beta2", func(ctx SpecContext) {
		Expect(applyDesired(ctx, helmReleases)).To(Succeed())
		live := &apiextensionsv1.CustomResourceDefinition{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: helmReleases}, live)).To(Succeed())
		Expect(live.Status.StoredVersions).To(Equal([]string{"v2"}))
		Expect(live.Spec.Versions).To(ConsistOf(HaveField("Name", "v2")))

		// An object still stored at v2beta2 would now fail the list: the API server cannot
		// decode a version the CRD no longer has.
		list := helmReleaseList("v2")
		Eventually(func(g Gomega) {
			g.Expect(k8s.List(ctx, list, client.InNamespace(helmNamespace))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(objects))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		for _, release := range list.Items {
			Expect(release.GetUID()).To(Equal(uids[release.GetName()]), release.GetName())
			chart, _, _ := unstructured.NestedString(release.Object, "spec", "chart", "spec", "chart")
			Expect(chart).To(Equal("podinfo"))
			got, _, _ := unstructured.NestedMap(release.Object, "spec", "values")
			Expect(got).To(Equal(values))
			for _, f := range release.GetManagedFields() {
				Expect(f.APIVersion).To(Equal("helm.toolkit.fluxcd.io/v2"), "%s: managedFields of %s", release.GetName(), f.Manager)
			}
		}
	})
})
