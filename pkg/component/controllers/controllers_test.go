// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"strings"

	testutils "github.com/gardener/gardener/pkg/utils/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var _ = Describe("Data", func() {
	values := func() Values {
		return Values{
			Flux:   manifests.FluxOptions{Version: manifests.FluxVersions()[0], Components: []string{"source-controller"}, Namespace: "flux-system"},
			Kluctl: &manifests.KluctlOptions{Version: manifests.KluctlVersions()[0], Namespace: "kluctl-system"},
		}
	}
	manifestsOf := func(v Values) string {
		data, err := Data(v)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		docs, err := testutils.ExtractManifestsFromManagedResourceData(data)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return strings.Join(docs, "---\n")
	}

	It("contains Flux and the kluctl controller", func() {
		m := manifestsOf(values())
		Expect(m).To(ContainSubstring("name: source-controller"))
		Expect(m).To(ContainSubstring("kluctldeployments.gitops.kluctl.io"))
		Expect(m).NotTo(ContainSubstring(manifests.EnvDisableStrictHostKeyChecking))
	})

	It("leaves out the kluctl controller when disabled", func() {
		v := values()
		v.Kluctl = nil
		Expect(manifestsOf(v)).NotTo(ContainSubstring("kluctl"))
	})

	It("disables strict host key checking of the kluctl controller only", func() {
		v := values()
		v.Kluctl.DisableStrictHostKeyChecking = true
		m := manifestsOf(v)
		Expect(strings.Count(m, manifests.EnvDisableStrictHostKeyChecking)).To(Equal(1))
		Expect(manifestsOf(values())).NotTo(ContainSubstring(manifests.EnvDisableStrictHostKeyChecking), "the cached default must not be modified")
	})

	It("caches per value set, independent of the component order", func() {
		v := values()
		v.Flux.Components = []string{"kustomize-controller", "source-controller"}
		first, err := Data(v)
		Expect(err).NotTo(HaveOccurred())
		v.Flux.Components = []string{"source-controller", "kustomize-controller"}
		second, err := Data(v)
		Expect(err).NotTo(HaveOccurred())
		Expect(&second["data.yaml.br"][0]).To(BeIdenticalTo(&first["data.yaml.br"][0]))
	})

	It("caches per tuning and delivers the image pull secret into both namespaces", func() {
		untuned := manifestsOf(values())
		v := values()
		v.Flux.Tuning = manifests.Tuning{
			Controllers:     map[string]flux.ControllerSettings{manifests.SourceController: {Concurrent: ptr.To[int32](7)}},
			ImagePullSecret: []byte(`{"auths":{"registry.example.com":{}}}`),
		}
		v.Kluctl.Tuning = manifests.Tuning{ImagePullSecret: v.Flux.Tuning.ImagePullSecret}
		m := manifestsOf(v)
		Expect(m).To(ContainSubstring("--concurrent=7"))
		Expect(strings.Count(m, "name: "+constants.ImagePullSecretName)).To(Equal(4), "a Secret in each of the two namespaces, named by the pods of source-controller and kluctl-controller")
		Expect(manifestsOf(values())).To(Equal(untuned), "the cached untuned data must not change")

		v.Flux.Tuning.Controllers[manifests.SourceController] = flux.ControllerSettings{Concurrent: ptr.To[int32](9)}
		Expect(manifestsOf(v)).To(ContainSubstring("--concurrent=9"))
	})

	It("fails for an unsupported version", func() {
		v := values()
		v.Flux.Version = "v0.29.5"
		_, err := Data(v)
		Expect(err).To(MatchError(ContainSubstring(`unsupported flux version "v0.29.5"`)))
	})
})
