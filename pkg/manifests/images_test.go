// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
)

var _ = Describe("overrideRegistry", func() {
	DescribeTable("replaces only the registry host",
		func(ref, registry, expected string) {
			Expect(validateRegistry(registry)).To(Succeed())
			Expect(overrideRegistry(ref, registry)).To(Equal(expected))
		},
		Entry("no override", "ghcr.io/fluxcd/source-controller:v1.9.5", "", "ghcr.io/fluxcd/source-controller:v1.9.5"),
		Entry("host", "ghcr.io/fluxcd/source-controller:v1.9.5", "my.mirror", "my.mirror/fluxcd/source-controller:v1.9.5"),
		Entry("host with port and path", "ghcr.io/fluxcd/source-controller:v1.9.5", "my.mirror:5000/cache", "my.mirror:5000/cache/fluxcd/source-controller:v1.9.5"),
		Entry("source with port", "registry.local:5000/flux/source-controller:v1", "my.mirror", "my.mirror/flux/source-controller:v1"),
		Entry("localhost source", "localhost/flux/source-controller:v1", "my.mirror", "my.mirror/flux/source-controller:v1"),
		Entry("digest", "ghcr.io/kluctl/kluctl@sha256:0123", "localhost:5000", "localhost:5000/kluctl/kluctl@sha256:0123"),
		Entry("implicit docker.io", "fluxcd/source-controller:v1.9.5", "my.mirror", "my.mirror/fluxcd/source-controller:v1.9.5"),
		Entry("implicit docker.io library", "busybox:1", "my.mirror", "my.mirror/busybox:1"),
	)

	DescribeTable("rejects registries that are no host",
		func(registry string) {
			Expect(validateRegistry(registry)).To(MatchError(HavePrefix("invalid registry")))
		},
		Entry("scheme", "https://my.mirror"),
		Entry("trailing slash", "my.mirror/"),
		Entry("leading slash", "/my.mirror"),
		Entry("empty path segment", "my.mirror//cache"),
		Entry("whitespace", "my.mirror cache"),
		Entry("digest", "my.mirror@sha256"),
		Entry("docker hub namespace", "mirror"),
		Entry("docker hub namespace with path", "mirror/cache"),
	)
})

var _ = Describe("repository", func() {
	DescribeTable("strips tag and digest",
		func(ref, expected string) {
			Expect(repository(ref)).To(Equal(expected))
		},
		Entry("tag", "fluxcd/source-controller:v1.9.5", "fluxcd/source-controller"),
		Entry("digest", "fluxcd/source-controller@sha256:0123", "fluxcd/source-controller"),
		Entry("tag and digest", "fluxcd/source-controller:v1@sha256:0123", "fluxcd/source-controller"),
		Entry("port without tag", "localhost:5000/fluxcd/source-controller", "localhost:5000/fluxcd/source-controller"),
		Entry("port and tag", "localhost:5000/fluxcd/source-controller:v1", "localhost:5000/fluxcd/source-controller"),
	)
})

var _ = Describe("versions", func() {
	It("has releases for the operator's built-in defaults", func() {
		Expect(helper.ResolveVersion(configv1alpha1.DefaultFluxVersion, FluxVersions())).To(Equal(newestFlux))
		Expect(helper.ResolveVersion(configv1alpha1.DefaultKluctlVersion, KluctlVersions())).To(Equal(newestKluctl))
	})

	It("supports exactly the embedded releases, ascending", func() {
		supported := SupportedVersions()
		Expect(supported.Flux).To(Equal(FluxVersions()))
		Expect(supported.Kluctl).To(Equal(KluctlVersions()))
		Expect(slices.IsSortedFunc(supported.Flux, semver.Compare)).To(BeTrue())
	})

	It("names the newest embedded releases", func() {
		for _, version := range FluxVersions() {
			Expect(semver.Compare(NewestFluxVersion(), version)).To(BeNumerically(">=", 0), version)
		}
		for _, version := range KluctlVersions() {
			Expect(semver.Compare(NewestKluctlVersion(), version)).To(BeNumerically(">=", 0), version)
		}
		Expect(FluxVersions()).To(ContainElement(NewestFluxVersion()))
		Expect(KluctlVersions()).To(ContainElement(NewestKluctlVersion()))
	})

	It("returns copies", func() {
		FluxVersions()[0] = "changed"
		KluctlVersions()[0] = "changed"
		FluxComponents()[0] = "changed"
		Expect(FluxVersions()).NotTo(ContainElement("changed"))
		Expect(KluctlVersions()).NotTo(ContainElement("changed"))
		Expect(FluxComponents()).NotTo(ContainElement("changed"))
	})
})

var _ = Describe("Images", func() {
	var r *renderer

	BeforeEach(func() {
		r = newRenderer(fluximagevector.ImageVector())
	})

	for _, version := range FluxVersions() {
		for _, registry := range []string{"", "my.mirror:5000/cache"} {
			It(fmt.Sprintf("reports the images that Flux %s and kluctl deploy (registry %q)", version, registry), func() {
				flux := FluxOptions{Version: version, Components: []string{NotificationController, SourceController}, Namespace: "flux-system", Registry: registry}
				kluctl := &KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system", Registry: registry}
				images, err := r.images(flux, kluctl)
				Expect(err).NotTo(HaveOccurred())
				Expect(images).To(HaveLen(3))

				data, err := r.renderFlux(flux)
				Expect(err).NotTo(HaveOccurred())
				for name, deploy := range deployments(parseObjects(data)) {
					Expect(containerImages(deploy)).To(ConsistOf(images[name]), "deployment %s", name)
				}
				data, err = r.renderKluctl(*kluctl)
				Expect(err).NotTo(HaveOccurred())
				Expect(containerImages(deployments(parseObjects(data))[KluctlComponent])).To(ConsistOf(images[KluctlComponent]))
			})
		}
	}

	It("leaves kluctl out when it is not installed", func() {
		images, err := r.images(FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"}, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(images).To(HaveKeyWithValue(SourceController, HavePrefix("ghcr.io/fluxcd/source-controller:v")))
		Expect(images).To(HaveLen(1))
	})

	DescribeTable("rejects what the renderers reject",
		func(flux FluxOptions, kluctl *KluctlOptions, message string) {
			_, err := r.images(flux, kluctl)
			Expect(err).To(MatchError(HavePrefix(message)))
		},
		Entry("unsupported Flux version", FluxOptions{Version: "v2.9", Components: []string{SourceController}}, nil, `unsupported flux version "v2.9"`),
		Entry("unknown component", FluxOptions{Version: "v2.9.5", Components: []string{SourceController, "image-reflector-controller"}}, nil, `unknown flux component "image-reflector-controller"`),
		Entry("unsupported kluctl version", FluxOptions{Version: "v2.9.5", Components: []string{SourceController}}, &KluctlOptions{Version: "v2.0.0"}, `unsupported kluctl version "v2.0.0"`),
		Entry("invalid registry", FluxOptions{Version: "v2.9.5", Components: []string{SourceController}}, &KluctlOptions{Version: "v2.28.2", Registry: "mirror"}, `invalid registry "mirror"`),
	)
})
