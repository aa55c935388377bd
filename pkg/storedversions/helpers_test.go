// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

// releaseCRDs returns the CRDs of an embedded Flux release with every component.
func releaseCRDs(version string) []apiextensionsv1.CustomResourceDefinition {
	stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: version, Components: manifests.FluxComponents(), Namespace: "flux-system"})
	Expect(err).NotTo(HaveOccurred())
	crds, err := storedversions.CRDs(stream)
	Expect(err).NotTo(HaveOccurred())
	return crds
}

func crdNamed(crds []apiextensionsv1.CustomResourceDefinition, name string) apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Name == name {
			return *c.DeepCopy()
		}
	}
	Fail("no CRD " + name)
	return apiextensionsv1.CustomResourceDefinition{}
}

// live returns crd as the API server shows it after objects were stored in storedVersions.
func live(crd apiextensionsv1.CustomResourceDefinition, storedVersions ...string) apiextensionsv1.CustomResourceDefinition {
	c := *crd.DeepCopy()
	c.Status.StoredVersions = storedVersions
	return c
}

// olderCRD returns crd with only the given versions, the last one the storage version, as an
// older release defined it (v1.4.1's OCIRepository has v1beta2 only).
func olderCRD(crd apiextensionsv1.CustomResourceDefinition, versions ...string) apiextensionsv1.CustomResourceDefinition {
	c := *crd.DeepCopy()
	template := c.Spec.Versions[0]
	c.Spec.Versions = nil
	for i, v := range versions {
		cv := *template.DeepCopy()
		cv.Name, cv.Served, cv.Storage = v, true, i == len(versions)-1
		c.Spec.Versions = append(c.Spec.Versions, cv)
	}
	return c
}

func versionNames(crd apiextensionsv1.CustomResourceDefinition) []string {
	var names []string
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
	}
	return names
}
