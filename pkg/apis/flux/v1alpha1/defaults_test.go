// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

var _ = Describe("Defaults", func() {
	var scheme *runtime.Scheme

	BeforeEach(func() {
		scheme = install.NewScheme()
	})

	It("defaults an empty configuration without inventing a source or versions", func() {
		obj := &FluxConfig{}
		scheme.Default(obj)

		Expect(obj).To(Equal(&FluxConfig{
			Flux:   &Flux{Components: []string{ComponentSourceController}, Namespace: ptr.To("flux-system"), Management: ptr.To(ManagementContinuous)},
			Kluctl: &Kluctl{Enabled: ptr.To(true), Namespace: ptr.To("kluctl-system")},
			Bootstrap: &Bootstrap{
				Mode: ptr.To(BootstrapModeKluctl),
				Kluctl: &KluctlBootstrap{
					Context:  ptr.To("default"),
					Interval: &metav1.Duration{Duration: 5 * time.Minute},
					Prune:    ptr.To(false),
					Delete:   ptr.To(false),
					DryRun:   ptr.To(false),
				},
				Flux: &FluxBootstrap{
					Path:     ptr.To("."),
					Prune:    ptr.To(true),
					Interval: &metav1.Duration{Duration: 10 * time.Minute},
				},
				ShootInfo: ptr.To(true),
			},
			Monitoring: &Monitoring{Shoot: &ShootMonitoring{Enabled: ptr.To(true)}},
		}))
	})

	It("defaults an OCI source without git defaults, and the Kustomization path from it", func() {
		obj := &FluxConfig{Source: &Source{OCI: &OCISource{URL: ptr.To("oci://ghcr.io/org/fleet"), Path: ptr.To("deploy")}}}
		scheme.Default(obj)

		Expect(obj.Source).To(Equal(&Source{OCI: &OCISource{URL: ptr.To("oci://ghcr.io/org/fleet"), Ref: &OCIRef{Tag: ptr.To("latest")}, Path: ptr.To("deploy")}}))
		Expect(obj.Bootstrap.Flux.Path).To(PointTo(Equal("deploy")))
	})

	It("defaults the source", func() {
		obj := &FluxConfig{Source: &Source{URL: ptr.To("ssh://git@host/r")}}
		scheme.Default(obj)

		Expect(obj.Source).To(Equal(&Source{
			URL:  ptr.To("ssh://git@host/r"),
			Ref:  &GitRef{Branch: ptr.To("main")},
			Path: ptr.To("."),
			Type: ptr.To(RepositoryTypePrivate),
		}))
	})

	It("defaults an empty ref to branch main but keeps a set ref", func() {
		obj := &FluxConfig{Source: &Source{URL: ptr.To("ssh://git@host/r"), Ref: &GitRef{}}}
		scheme.Default(obj)
		Expect(obj.Source.Ref).To(Equal(&GitRef{Branch: ptr.To("main")}))

		obj = &FluxConfig{Source: &Source{URL: ptr.To("ssh://git@host/r"), Ref: &GitRef{Tag: ptr.To("v1")}}}
		scheme.Default(obj)
		Expect(obj.Source.Ref).To(Equal(&GitRef{Tag: ptr.To("v1")}))
	})

	DescribeTable("defaults the repository type",
		func(source *Source, want RepositoryType) {
			scheme.Default(&FluxConfig{Source: source})
			Expect(source.Type).To(PointTo(Equal(want)))
		},
		Entry("ssh URL", &Source{URL: ptr.To("ssh://git@host/r")}, RepositoryTypePrivate),
		Entry("scp-like URL", &Source{URL: ptr.To("git@host:r")}, RepositoryTypePrivate),
		Entry("https URL", &Source{URL: ptr.To("https://host/r")}, RepositoryTypePublic),
		Entry("upper-case https URL", &Source{URL: ptr.To("HTTPS://host/r")}, RepositoryTypePublic),
		Entry("https URL with credentials", &Source{URL: ptr.To("https://host/r"), SecretResourceName: ptr.To("creds")}, RepositoryTypePrivate),
		Entry("explicit type", &Source{URL: ptr.To("ssh://git@host/r"), Type: ptr.To(RepositoryTypePublic)}, RepositoryTypePublic),
	)

	It("adds kustomize-controller to the default components in mode flux", func() {
		obj := &FluxConfig{Bootstrap: &Bootstrap{Mode: ptr.To(BootstrapModeFlux)}}
		scheme.Default(obj)
		Expect(obj.Flux.Components).To(Equal([]string{ComponentSourceController, ComponentKustomizeController}))
	})

	It("keeps explicit components, even in mode flux", func() {
		obj := &FluxConfig{Flux: &Flux{Components: []string{ComponentSourceController}}, Bootstrap: &Bootstrap{Mode: ptr.To(BootstrapModeFlux)}}
		scheme.Default(obj)
		Expect(obj.Flux.Components).To(Equal([]string{ComponentSourceController}))
	})

	It("defaults the Kustomization path to the source path", func() {
		obj := &FluxConfig{Source: &Source{URL: ptr.To("ssh://git@host/r"), Path: ptr.To("clusters/a")}}
		scheme.Default(obj)
		Expect(obj.Bootstrap.Flux.Path).To(PointTo(Equal("clusters/a")))

		obj = &FluxConfig{Source: &Source{Path: ptr.To("clusters/a")}, Bootstrap: &Bootstrap{Flux: &FluxBootstrap{Path: ptr.To("other")}}}
		scheme.Default(obj)
		Expect(obj.Bootstrap.Flux.Path).To(PointTo(Equal("other")))
	})

	It("keeps explicit values", func() {
		obj := &FluxConfig{
			Flux:   &Flux{Namespace: ptr.To("f"), Management: ptr.To(ManagementHandover)},
			Kluctl: &Kluctl{Enabled: ptr.To(false), Namespace: ptr.To("k")},
			Bootstrap: &Bootstrap{
				Mode:      ptr.To(BootstrapModeNone),
				Kluctl:    &KluctlBootstrap{Context: ptr.To("c"), Interval: &metav1.Duration{Duration: time.Minute}, Prune: ptr.To(true), Delete: ptr.To(true), DryRun: ptr.To(true)},
				Flux:      &FluxBootstrap{Prune: ptr.To(false), Interval: &metav1.Duration{Duration: time.Hour}},
				ShootInfo: ptr.To(false),
			},
			Monitoring: &Monitoring{Shoot: &ShootMonitoring{Enabled: ptr.To(false)}},
		}
		want := obj.DeepCopy()
		want.Flux.Components = []string{ComponentSourceController}
		want.Bootstrap.Flux.Path = ptr.To(".")
		scheme.Default(obj)
		Expect(obj).To(Equal(want))
	})

	Describe("additional secret resources", func() {
		It("default the target name to the name and the namespace to the kluctl namespace", func() {
			obj := &FluxConfig{
				Kluctl:                    &Kluctl{Namespace: ptr.To("kl")},
				AdditionalSecretResources: []AdditionalSecretResource{{Name: "a"}, {Name: "b", TargetName: ptr.To("bb"), Namespace: ptr.To("ns")}},
			}
			scheme.Default(obj)
			Expect(obj.AdditionalSecretResources).To(Equal([]AdditionalSecretResource{
				{Name: "a", TargetName: ptr.To("a"), Namespace: ptr.To("kl")},
				{Name: "b", TargetName: ptr.To("bb"), Namespace: ptr.To("ns")},
			}))
		})

		It("default the namespace to the Flux namespace in mode flux", func() {
			obj := &FluxConfig{
				Bootstrap:                 &Bootstrap{Mode: ptr.To(BootstrapModeFlux)},
				AdditionalSecretResources: []AdditionalSecretResource{{Name: "a"}},
			}
			scheme.Default(obj)
			Expect(obj.AdditionalSecretResources[0].Namespace).To(PointTo(Equal("flux-system")))
		})

		It("default the namespace to the Flux namespace if kluctl is disabled", func() {
			obj := &FluxConfig{
				Flux:                      &Flux{Namespace: ptr.To("fl")},
				Kluctl:                    &Kluctl{Enabled: ptr.To(false)},
				AdditionalSecretResources: []AdditionalSecretResource{{Name: "a"}},
			}
			scheme.Default(obj)
			Expect(obj.AdditionalSecretResources[0].Namespace).To(PointTo(Equal("fl")))
		})
	})
})
