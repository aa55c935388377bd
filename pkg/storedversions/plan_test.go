// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

const ociRepositories = "ocirepositories.source.toolkit.fluxcd.io"

// stored returns the CRDs as live in a shoot whose objects were stored in every version each
// CRD has: every version was a storage version at some point.
func storedInEveryVersion(crds []apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinition {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		out = append(out, live(c, versionNames(c)...))
	}
	return out
}

// storedInStorageVersion returns the CRDs as live in a shoot that only ever ran their release.
func storedInStorageVersion(crds []apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinition {
	var out []apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			if v.Storage {
				out = append(out, live(c, v.Name))
			}
		}
	}
	return out
}

func staleByCRD(plan []storedversions.Migration) map[string][]string {
	out := map[string][]string{}
	for _, m := range plan {
		out[m.CRD] = m.Stale
	}
	return out
}

var _ = Describe("Plan", func() {
	It("plans nothing between the embedded releases for objects stored by the release installed", func() {
		for _, from := range manifests.FluxVersions() {
			for _, to := range manifests.FluxVersions() {
				Expect(storedversions.Plan(storedInStorageVersion(releaseCRDs(from)), releaseCRDs(to))).To(BeEmpty(), "%s -> %s", from, to)
			}
		}
	})

	It("plans every embedded release pair: a planned version is stored and not in the desired CRD, the target is its storage version", func() {
		for _, from := range manifests.FluxVersions() {
			for _, to := range manifests.FluxVersions() {
				desired := releaseCRDs(to)
				for _, m := range storedversions.Plan(storedInEveryVersion(releaseCRDs(from)), desired) {
					d := crdNamed(desired, m.CRD)
					Expect(m.Stale).NotTo(BeEmpty())
					for _, v := range m.Stale {
						Expect(versionNames(d)).NotTo(ContainElement(v), "%s -> %s: %s", from, to, m.CRD)
					}
					Expect(d.Spec.Versions).To(ContainElement(And(
						HaveField("Name", m.StorageVersion), HaveField("Storage", true))))
					Expect(m.Version.Name).To(Equal(m.StorageVersion))
				}
			}
		}
	})

	It("plans the versions Flux v2.8 removed for an upgrade from v2.7.5 to v2.9.5", func() {
		plan := storedversions.Plan(storedInEveryVersion(releaseCRDs("v2.7.5")), releaseCRDs("v2.9.5"))
		Expect(staleByCRD(plan)).To(Equal(map[string][]string{
			"helmreleases.helm.toolkit.fluxcd.io":        {"v2beta2"},
			"kustomizations.kustomize.toolkit.fluxcd.io": {"v1beta2"},
			"providers.notification.toolkit.fluxcd.io":   {"v1beta2"},
			"alerts.notification.toolkit.fluxcd.io":      {"v1beta2"},
			"receivers.notification.toolkit.fluxcd.io":   {"v1beta2"},
			"gitrepositories.source.toolkit.fluxcd.io":   {"v1beta2"},
			"helmrepositories.source.toolkit.fluxcd.io":  {"v1beta2"},
			"helmcharts.source.toolkit.fluxcd.io":        {"v1beta2"},
			"buckets.source.toolkit.fluxcd.io":           {"v1beta2"},
			"ocirepositories.source.toolkit.fluxcd.io":   {"v1beta2"},
		}))
		for _, m := range plan {
			// v2.7.5 stores at the version v2.9.5 stores at: no change of the storage version.
			Expect(m.LiveStorageVersion).To(Equal(m.StorageVersion), m.CRD)
		}
		Expect(storedversions.Plan(storedInEveryVersion(releaseCRDs("v2.9.5")), releaseCRDs("v2.7.5"))).To(BeEmpty())
	})

	It("plans a change of the storage version for a CRD of an older release that lacks the desired storage version", func() {
		desired := releaseCRDs("v2.9.5")
		// source-controller/api v1.4.1 (Flux v2.4): OCIRepository has v1beta2 only.
		older := live(olderCRD(crdNamed(desired, ociRepositories), "v1beta2"), "v1beta2")
		plan := storedversions.Plan([]apiextensionsv1.CustomResourceDefinition{older}, desired)
		Expect(plan).To(HaveLen(1))
		m := plan[0]
		Expect(m).To(And(
			HaveField("CRD", ociRepositories), HaveField("Group", "source.toolkit.fluxcd.io"), HaveField("Kind", "OCIRepository"),
			HaveField("Resource", "ocirepositories"), HaveField("Namespaced", true), HaveField("Stale", []string{"v1beta2"}),
			HaveField("StorageVersion", "v1"), HaveField("LiveStorageVersion", "v1beta2")))
		Expect(m.Version.Schema).NotTo(BeNil())
		Expect(m.GroupVersionKind()).To(Equal(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}))
	})

	It("plans every stale stored version of a CRD, and none of a CRD not live or not desired", func() {
		desired := releaseCRDs("v2.9.5")
		helm := live(olderCRD(crdNamed(desired, "helmreleases.helm.toolkit.fluxcd.io"), "v2beta2", "v2beta1"), "v2beta1", "v2beta2")
		kluctl := live(olderCRD(crdNamed(desired, ociRepositories), "v1alpha1"), "v1alpha1")
		kluctl.Name = "kluctldeployments.gitops.kluctl.io"
		plan := storedversions.Plan([]apiextensionsv1.CustomResourceDefinition{helm, kluctl}, desired)
		Expect(staleByCRD(plan)).To(Equal(map[string][]string{"helmreleases.helm.toolkit.fluxcd.io": {"v2beta1", "v2beta2"}}))
	})
})

var _ = Describe("CRDs", func() {
	It("returns the CRDs of a rendered release and skips the other objects", func() {
		crds := releaseCRDs("v2.9.5")
		Expect(crds).To(HaveLen(11))
		Expect(crds).To(ContainElement(HaveField("ObjectMeta.Name", ociRepositories)))
	})

	It("fails on a stream that is no YAML", func() {
		_, err := storedversions.CRDs([]byte("apiVersion: apiextensions.k8s.io/v1\nkind: [CustomResourceDefinition\n"))
		Expect(err).To(HaveOccurred())
	})
})

var _ = Describe("RESTMapper", func() {
	It("maps the CRD kind cluster-wide and each desired kind at its storage version", func() {
		m := storedversions.RESTMapper(releaseCRDs("v2.9.5"))
		crd, err := m.RESTMapping(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(crd.Scope.Name()).To(Equal(meta.RESTScopeNameRoot))
		Expect(crd.Resource.Resource).To(Equal("customresourcedefinitions"))
		oci, err := m.RESTMapping(schema.GroupKind{Group: "source.toolkit.fluxcd.io", Kind: "OCIRepository"}, "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(oci.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
		Expect(oci.Resource.Resource).To(Equal("ocirepositories"))
		_, err = m.RESTMapping(schema.GroupKind{Group: "source.toolkit.fluxcd.io", Kind: "OCIRepository"}, "v1beta2")
		Expect(meta.IsNoMatchError(err)).To(BeTrue())
	})
})
