// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package promrules_test

import (
	gardenertest "github.com/gardener/gardener/pkg/component/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const shootNamespace = "shoot--project--name"

// The shoots of the rule tests: what monitoringValues of the actuator makes of a kluctl-mode shoot
// with a generated deploy key, a flux-mode shoot and a controllers-only shoot.
var (
	kluctlShoot = monitoring.Values{
		Controllers: []monitoring.Controller{
			{Component: fluxapi.ComponentSourceController, Namespace: "flux-system"},
			{Component: fluxapi.ComponentKluctlController, Namespace: "kluctl-system"},
		},
		Bootstrap: &monitoring.Bootstrap{Mode: fluxapi.BootstrapModeKluctl, Namespace: "kluctl-system", DeployKey: true},
	}
	fluxShoot = monitoring.Values{
		Controllers: []monitoring.Controller{
			{Component: fluxapi.ComponentSourceController, Namespace: "flux-system"},
			{Component: fluxapi.ComponentKustomizeController, Namespace: "flux-system"},
		},
		Bootstrap: &monitoring.Bootstrap{Mode: fluxapi.BootstrapModeFlux, Namespace: "flux-system"},
	}
)

// shootRule returns the shoot's PrometheusRule under the name its test file loads.
func shootRule(name string, values monitoring.Values) *monitoringv1.PrometheusRule {
	rule := monitoring.PrometheusRule(shootNamespace, values)
	rule.Name = name
	return rule
}

// seedRule returns the PrometheusRule the extension's chart renders with its default values and
// gardenlet's.
func seedRule() *monitoringv1.PrometheusRule {
	GinkgoHelper()
	objs, err := sandbox.RenderExtensionChart("extension-shoot-flux-abcde", sandbox.GardenletValues())
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range objs {
		if obj.GetKind() != "PrometheusRule" {
			continue
		}
		rule := &monitoringv1.PrometheusRule{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rule)).To(Succeed())
		rule.Name = "seed"
		return rule
	}
	Fail("the chart renders no PrometheusRule")
	return nil
}

var _ = Describe("Rules", func() {
	It("of the seed fire on their failures and stay silent on a healthy seed", func() {
		gardenertest.PrometheusRule(seedRule(), "testdata/seed.prometheusrule.test.yaml")
	})

	It("of a kluctl shoot fire on their failures and stay silent on a healthy shoot", func() {
		gardenertest.PrometheusRule(shootRule("shoot-kluctl", kluctlShoot), "testdata/shoot-kluctl.prometheusrule.test.yaml")
	})

	It("of a flux shoot fire on their failures and stay silent on a healthy shoot", func() {
		gardenertest.PrometheusRule(shootRule("shoot-flux", fluxShoot), "testdata/shoot-flux.prometheusrule.test.yaml")
	})
})
