// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
)

var _ = Describe("ValuesFor", func() {
	config := func() *flux.FluxConfig {
		return &flux.FluxConfig{
			Flux:   flux.Flux{Version: "v2.9.5", Components: []string{"source-controller"}, Namespace: "flux-system"},
			Kluctl: flux.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"},
			Controllers: map[string]flux.ControllerSettings{
				"source-controller": {Concurrent: ptr.To[int32](2)},
				"kluctl-controller": {Concurrent: ptr.To[int32](3)},
			},
		}
	}

	It("gives each release its own components' settings and both the operator's registry and pull secret", func() {
		v := ValuesFor(config(), "registry.example.com", []byte("pull"), true)
		Expect(v.Flux.Version).To(Equal("v2.9.5"))
		Expect(v.Flux.Registry).To(Equal("registry.example.com"))
		Expect(v.Flux.Tuning.ImagePullSecret).To(Equal([]byte("pull")))
		Expect(v.Flux.Tuning.Controllers).To(HaveKey("source-controller"))
		Expect(v.Flux.Tuning.Controllers).NotTo(HaveKey("kluctl-controller"), "a kluctl setting must not invalidate the cached Flux render")
		Expect(v.Kluctl).NotTo(BeNil())
		Expect(v.Kluctl.Registry).To(Equal("registry.example.com"))
		Expect(v.Kluctl.DisableStrictHostKeyChecking).To(BeTrue())
		Expect(v.Kluctl.Tuning.Controllers).To(HaveKey("kluctl-controller"))
		Expect(v.Kluctl.Tuning.Controllers).NotTo(HaveKey("source-controller"))
	})

	It("leaves the kluctl controller out when it is disabled, and the settings empty when none are set", func() {
		cfg := config()
		cfg.Kluctl.Enabled = false
		cfg.Controllers = nil
		v := ValuesFor(cfg, "", nil, false)
		Expect(v.Kluctl).To(BeNil())
		Expect(v.Flux.Tuning.Controllers).To(BeNil())
	})
})
