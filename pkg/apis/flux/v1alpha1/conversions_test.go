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

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

var _ = Describe("Conversion", func() {
	var scheme *runtime.Scheme

	BeforeEach(func() {
		scheme = install.NewScheme()
	})

	internal := func() *flux.FluxConfig {
		return &flux.FluxConfig{
			Flux:   flux.Flux{Version: "v2.9.5", Components: []string{flux.ComponentSourceController, flux.ComponentKustomizeController}, Namespace: "flux-system", Management: flux.ManagementHandover},
			Kluctl: flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"},
			Source: &flux.Source{
				URL:                "ssh://git@host/r",
				Ref:                flux.GitRef{Tag: "v1.0.0"},
				Path:               "clusters/a",
				Type:               flux.RepositoryTypePrivate,
				KnownHosts:         "host ssh-ed25519 AAAA",
				SecretResourceName: "creds",
			},
			Bootstrap: flux.Bootstrap{
				Mode: flux.BootstrapModeKluctl,
				Kluctl: flux.KluctlBootstrap{
					Target:        "prod",
					Context:       "default",
					Args:          &runtime.RawExtension{Raw: []byte(`{"a":1}`)},
					Prune:         true,
					Delete:        true,
					Interval:      metav1.Duration{Duration: 5 * time.Minute},
					RetryInterval: &metav1.Duration{Duration: time.Minute},
					Timeout:       &metav1.Duration{Duration: 10 * time.Minute},
					DryRun:        true,
					Decryption:    &flux.Decryption{SecretResourceName: "sops"},
				},
				Flux: flux.FluxBootstrap{Path: "clusters/a", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}, TargetNamespace: "apps"},
			},
			AdditionalSecretResources: []flux.AdditionalSecretResource{{Name: "a", TargetName: "b", Namespace: "c"}},
		}
	}

	It("converts internal to v1alpha1 and back without loss", func() {
		in := internal()
		versioned := &FluxConfig{}
		Expect(scheme.Convert(in, versioned, nil)).To(Succeed())

		Expect(versioned.Source.Ref).To(Equal(&GitRef{Tag: ptr.To("v1.0.0")}), "unset ref fields must stay unset")
		Expect(versioned.Bootstrap.Mode).To(PointTo(Equal(BootstrapModeKluctl)))
		Expect(versioned.Kluctl.Enabled).To(PointTo(BeTrue()))

		out := &flux.FluxConfig{}
		Expect(scheme.Convert(versioned, out, nil)).To(Succeed())
		Expect(out).To(Equal(in))
	})

	It("converts a complete v1alpha1 configuration to internal and back without loss", func() {
		versioned := &FluxConfig{}
		Expect(scheme.Convert(internal(), versioned, nil)).To(Succeed())
		want := versioned.DeepCopy()

		in := &flux.FluxConfig{}
		Expect(scheme.Convert(versioned, in, nil)).To(Succeed())
		out := &FluxConfig{}
		Expect(scheme.Convert(in, out, nil)).To(Succeed())
		Expect(out).To(Equal(want))
	})

	It("converts an OCI source without loss, leaving the unset ref field unset", func() {
		in := internal()
		in.Source = &flux.Source{OCI: &flux.OCISource{URL: "oci://ghcr.io/org/fleet", Ref: flux.OCIRef{Digest: "sha256:abc"}, Path: "deploy", SecretResourceName: "registry"}}
		versioned := &FluxConfig{}
		Expect(scheme.Convert(in, versioned, nil)).To(Succeed())
		Expect(versioned.Source.OCI.Ref).To(Equal(&OCIRef{Digest: ptr.To("sha256:abc")}))

		out := &flux.FluxConfig{}
		Expect(scheme.Convert(versioned, out, nil)).To(Succeed())
		Expect(out).To(Equal(in))
	})

	It("converts nil sections to zero values", func() {
		out := &flux.FluxConfig{}
		Expect(scheme.Convert(&FluxConfig{}, out, nil)).To(Succeed())
		Expect(out).To(Equal(&flux.FluxConfig{}))
	})

	It("converts a status", func() {
		in := &flux.FluxStatus{
			FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2", Repository: "ssh://git@host/r", Ref: "branch:main",
			BootstrapMode: "kluctl", PublicKey: "ssh-ed25519 AAAA", Fingerprint: "SHA256:x", DeployKeySecret: "garden-a/key",
			Warnings: []string{"w"}, Message: "m",
		}
		versioned := &FluxStatus{}
		Expect(scheme.Convert(in, versioned, nil)).To(Succeed())
		Expect(versioned.Warnings).To(Equal([]string{"w"}))
		out := &flux.FluxStatus{}
		Expect(scheme.Convert(versioned, out, nil)).To(Succeed())
		Expect(out).To(Equal(in))
	})
})
