// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

// representativeCRDs has one CRD per component, to tell which components were rendered.
var representativeCRDs = map[string]string{
	SourceController:       "gitrepositories.source.toolkit.fluxcd.io",
	KustomizeController:    "kustomizations.kustomize.toolkit.fluxcd.io",
	HelmController:         "helmreleases.helm.toolkit.fluxcd.io",
	NotificationController: "alerts.notification.toolkit.fluxcd.io",
}

// componentSets returns every subset of the Flux components that contains source-controller.
func componentSets() [][]string {
	others := fluxComponents[1:]
	var sets [][]string
	for mask := range 1 << len(others) {
		set := []string{SourceController}
		for i, c := range others {
			if mask&(1<<i) != 0 {
				set = append(set, c)
			}
		}
		sets = append(sets, set)
	}
	return sets
}

func expectedFluxImage(vector gardenerimagevector.ImageVector, version, component, registry string) string {
	GinkgoHelper()
	image, err := vector.FindImage(fluxImageNames[component], gardenerimagevector.TargetVersion(version))
	Expect(err).NotTo(HaveOccurred())
	return overrideRegistry(image.String(), registry)
}

var _ = Describe("RenderFlux", func() {
	var r *renderer

	BeforeEach(func() {
		r = newRenderer(fluximagevector.ImageVector())
	})

	It("offers the four controllers", func() {
		Expect(FluxComponents()).To(Equal([]string{SourceController, KustomizeController, HelmController, NotificationController}))
	})

	for _, version := range FluxVersions() {
		for _, components := range componentSets() {
			It(fmt.Sprintf("renders flux %s with %s offline with images from the image vector", version, strings.Join(components, ",")), func() {
				data, err := r.renderFlux(FluxOptions{Version: version, Components: components, Namespace: "flux-system"})
				Expect(err).NotTo(HaveOccurred())
				objects := parseObjects(data)

				deploys := deployments(objects)
				Expect(deploys).To(HaveLen(len(components)))
				for _, c := range components {
					Expect(deploys).To(HaveKey(c))
					Expect(containerImages(deploys[c])).To(ConsistOf(expectedFluxImage(r.imageVector, version, c, "")))
				}

				crds := objectsOfKind(objects, "CustomResourceDefinition")
				for c, crd := range representativeCRDs {
					if slices.Contains(components, c) {
						Expect(crds).To(HaveKey(crd))
					} else {
						Expect(crds).NotTo(HaveKey(crd))
					}
				}
				Expect(objectsOfKind(objects, "Namespace")).To(HaveKey("flux-system"))
				Expect(objectsOfKind(objects, "NetworkPolicy")).To(HaveKey("allow-egress"))
			})
		}
	}

	It("applies the namespace to every namespaced object and to the RBAC subjects", func() {
		data, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: fluxComponents, Namespace: "gitops"})
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).NotTo(ContainSubstring("flux-system"))

		objects := parseObjects(data)
		Expect(objectsOfKind(objects, "Namespace")).To(HaveKey("gitops"))
		clusterScoped := []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
		for _, obj := range objects {
			if slices.Contains(clusterScoped, obj.GetKind()) {
				Expect(obj.GetNamespace()).To(BeEmpty(), "%s %s", obj.GetKind(), obj.GetName())
			} else {
				Expect(obj.GetNamespace()).To(Equal("gitops"), "%s %s", obj.GetKind(), obj.GetName())
			}
		}
		bindings := objectsOfKind(objects, "ClusterRoleBinding")
		Expect(bindings).NotTo(BeEmpty())
		for _, obj := range bindings {
			binding := &rbacv1.ClusterRoleBinding{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, binding)).To(Succeed())
			for _, subject := range binding.Subjects {
				if subject.Kind == rbacv1.ServiceAccountKind {
					Expect(subject.Namespace).To(Equal("gitops"))
				}
			}
		}
	})

	It("keeps the CRDs and the namespace when the extension is disabled", func() {
		data, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: fluxComponents, Namespace: "gitops"})
		Expect(err).NotTo(HaveOccurred())
		expectKeptOnDisable(parseObjects(data))
	})

	It("moves every image to the override registry", func() {
		data, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: fluxComponents, Namespace: "flux-system", Registry: "my.mirror:5000/cache"})
		Expect(err).NotTo(HaveOccurred())
		deploys := deployments(parseObjects(data))
		for _, c := range fluxComponents {
			image := expectedFluxImage(r.imageVector, newestFlux, c, "my.mirror:5000/cache")
			Expect(image).To(HavePrefix("my.mirror:5000/cache/fluxcd/" + c + ":"))
			Expect(containerImages(deploys[c])).To(ConsistOf(image))
		}
	})

	It("takes the images from an IMAGEVECTOR_OVERWRITE", func() {
		setImageVectorOverwrite(`images:
- name: flux-source-controller
  repository: registry.example.com/flux/source-controller
  tag: v1.9.5-patched
  targetVersion: "= 2.9.5"
- name: flux-helm-controller
  repository: registry.example.com/flux/helm-controller
  targetVersion: "= 2.9.5"
`)
		vector, err := fluximagevector.Load()
		Expect(err).NotTo(HaveOccurred())

		data, err := newRenderer(vector).renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController, HelmController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		deploys := deployments(parseObjects(data))
		Expect(containerImages(deploys[SourceController])).To(ConsistOf("registry.example.com/flux/source-controller:v1.9.5-patched"))
		// An overwrite without tag keeps the tag of the embedded entry.
		Expect(containerImages(deploys[HelmController])).To(ConsistOf("registry.example.com/flux/helm-controller:" + imageTag(newestFlux, HelmController)))
	})

	It("returns the cached bytes for the same options in any order", func() {
		first, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{HelmController, SourceController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		second, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController, HelmController, SourceController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		Expect(&second[0]).To(BeIdenticalTo(&first[0]))

		other, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		Expect(other).NotTo(Equal(first))
	})

	It("renders once for concurrent callers", func() {
		const callers = 8
		results := make([][]byte, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				defer GinkgoRecover()
				data, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"})
				Expect(err).NotTo(HaveOccurred())
				results[i] = data
			})
		}
		wg.Wait()
		for _, data := range results[1:] {
			Expect(&data[0]).To(BeIdenticalTo(&results[0][0]))
		}
	})

	It("cleans up its temporary directory", func() {
		tmp := GinkgoT().TempDir()
		GinkgoT().Setenv("TMPDIR", tmp)
		_, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		Expect(os.ReadDir(tmp)).To(BeEmpty())
	})

	DescribeTable("rejects invalid options",
		func(opts FluxOptions, message string) {
			_, err := r.renderFlux(opts)
			Expect(err).To(MatchError(HavePrefix(message)))
		},
		Entry("unsupported version", FluxOptions{Version: "v0.29.5", Components: []string{SourceController}, Namespace: "flux-system"},
			`unsupported flux version "v0.29.5", supported: `+strings.Join(FluxVersions(), ", ")),
		Entry("unknown component", FluxOptions{Version: newestFlux, Components: []string{SourceController, "image-reflector-controller"}, Namespace: "flux-system"},
			`unknown flux component "image-reflector-controller", supported: source-controller, kustomize-controller, helm-controller, notification-controller`),
		Entry("no source-controller", FluxOptions{Version: newestFlux, Components: []string{KustomizeController}, Namespace: "flux-system"},
			`flux components [kustomize-controller] lack source-controller, which the other controllers depend on`),
		Entry("no components", FluxOptions{Version: newestFlux, Namespace: "flux-system"},
			`flux components [] lack source-controller, which the other controllers depend on`),
		Entry("invalid namespace", FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "Flux_System"},
			`invalid namespace "Flux_System": a lowercase RFC 1123 label must consist of`),
		Entry("registry with scheme", FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system", Registry: "https://my.mirror"},
			`invalid registry "https://my.mirror": expected a host with optional port and path, e.g. my.mirror:5000/cache, without scheme`),
	)

	It("does not cache failures", func() {
		broken := newRenderer(gardenerimagevector.ImageVector{})
		opts := FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"}
		_, err := broken.renderFlux(opts)
		Expect(err).To(MatchError(ContainSubstring(`finding image flux-source-controller for ` + newestFlux)))

		broken.imageVector = r.imageVector
		Expect(broken.renderFlux(opts)).NotTo(BeEmpty())
	})
})

// imageTag returns the tag the embedded manifests of a Flux version pin for a component.
func imageTag(version, component string) string {
	GinkgoHelper()
	data, err := embedded.ReadFile("flux/" + version + "/" + component + ".yaml")
	Expect(err).NotTo(HaveOccurred())
	deploy, ok := deployments(parseObjects(data))[component]
	Expect(ok).To(BeTrue(), "no deployment %s in flux %s", component, version)
	images := containerImages(deploy)
	Expect(images).To(HaveLen(1))
	repo, tag, found := strings.Cut(images[0], ":")
	Expect(found).To(BeTrue())
	Expect(repo).To(Equal("fluxcd/" + component))
	return tag
}

var _ = Describe("image vector", func() {
	It("pins the tags of the embedded Flux manifests", func() {
		// The overwrite of the environment the tests run in must not hide a stale images.yaml.
		GinkgoT().Setenv("IMAGEVECTOR_OVERWRITE", "")
		vector, err := fluximagevector.Load()
		Expect(err).NotTo(HaveOccurred())

		for _, version := range FluxVersions() {
			for _, c := range fluxComponents {
				image, err := vector.FindImage(fluxImageNames[c], gardenerimagevector.TargetVersion(version))
				Expect(err).NotTo(HaveOccurred())
				Expect(image.String()).To(Equal("ghcr.io/fluxcd/"+c+":"+imageTag(version, c)), "flux %s", version)
			}
		}
		for _, version := range KluctlVersions() {
			image, err := vector.FindImage(fluximagevector.KluctlController, gardenerimagevector.TargetVersion(version))
			Expect(err).NotTo(HaveOccurred())
			Expect(image.String()).To(Equal("ghcr.io/kluctl/kluctl:" + version))
		}
	})
})
