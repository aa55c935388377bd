// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rollout"
)

var _ = Describe("CheckDowngrade", func() {
	handedOverAt := metav1.Now()
	handover := func(cfg *fluxapi.FluxConfig) *fluxapi.FluxConfig {
		cfg.Flux.Management = fluxapi.ManagementHandover
		return cfg
	}
	config := func(flux, kluctl string, kluctlEnabled bool) *fluxapi.FluxConfig {
		return &fluxapi.FluxConfig{Flux: fluxapi.Flux{Version: flux}, Kluctl: fluxapi.Kluctl{Enabled: kluctlEnabled, Version: kluctl}}
	}

	DescribeTable("accepts",
		func(previous *fluxv1alpha1.FluxStatus, cfg *fluxapi.FluxConfig) {
			Expect(rollout.CheckDowngrade(previous, cfg)).To(Succeed())
		},
		Entry("a new shoot", nil, config("v2.7.5", "v2.28.2", true)),
		Entry("a status without versions", &fluxv1alpha1.FluxStatus{}, config("v2.7.5", "v2.28.2", true)),
		Entry("the same releases", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2"}, config("v2.9.5", "v2.28.2", true)),
		Entry("an older patch", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.6", KluctlVersion: "v2.28.3"}, config("v2.9.5", "v2.28.2", true)),
		Entry("a newer minor", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.7.5"}, config("v2.9.5", "v2.28.2", true)),
		Entry("a newer major", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5"}, config("v3.0.0", "v2.28.2", true)),
		Entry("any kluctl while kluctl is not installed", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", KluctlVersion: "v2.29.0"}, config("v2.9.5", "v2.28", false)),
		Entry("a status an unknown writer left", &fluxv1alpha1.FluxStatus{FluxVersion: "latest"}, config("v2.7.5", "v2.28.2", true)),
		Entry("an older Flux minor while a newer one stays handed over", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.10.0", HandedOverAt: &handedOverAt},
			handover(config("v2.9.5", "v2.28.2", false))),
	)

	DescribeTable("refuses",
		func(previous *fluxv1alpha1.FluxStatus, cfg *fluxapi.FluxConfig, message string) {
			err := rollout.CheckDowngrade(previous, cfg)
			Expect(err).To(MatchError(HavePrefix(message)))
		},
		Entry("an older Flux minor", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5"}, config("v2.7.5", "v2.28.2", true),
			"flux.version: selects Flux v2.7.5, but the shoot runs v2.9.5 (providerStatus.fluxVersion); downgrading Flux to an older minor is not supported"),
		Entry("an older Flux major", &fluxv1alpha1.FluxStatus{FluxVersion: "v3.0.0"}, config("v2.9.5", "v2.28.2", true),
			"flux.version: selects Flux v2.9.5, but the shoot runs v3.0.0"),
		Entry("an older Flux minor when the owner takes handed-over controllers back", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.10.0", HandedOverAt: &handedOverAt},
			config("v2.9.5", "v2.28.2", false), "flux.version: selects Flux v2.9.5, but the shoot runs v2.10.0"),
		Entry("an older kluctl minor", &fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", KluctlVersion: "v2.29.0"}, config("v2.9.5", "v2.28.2", true),
			"kluctl.version: selects kluctl v2.28.2, but the shoot runs v2.29.0 (providerStatus.kluctlVersion)"),
	)
})
