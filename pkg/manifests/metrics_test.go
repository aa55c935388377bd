// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// expectMetricsEndpoint fails unless the Deployment of component in objects has the container and
// port that ControllerMetricsEndpoint names.
func expectMetricsEndpoint(byName map[string]*appsv1.Deployment, component string) {
	GinkgoHelper()
	endpoint, err := ControllerMetricsEndpoint(component)
	Expect(err).NotTo(HaveOccurred())
	deployment, ok := byName[endpoint.Deployment]
	Expect(ok).To(BeTrue(), "no Deployment %s", endpoint.Deployment)
	var ports []string
	for _, c := range deployment.Spec.Template.Spec.Containers {
		if c.Name != endpoint.Container {
			continue
		}
		for _, p := range c.Ports {
			ports = append(ports, p.Name)
		}
	}
	Expect(ports).To(ContainElement(endpoint.Port), "container %s of Deployment %s", endpoint.Container, endpoint.Deployment)

	// The most pods at once: the replicas, and one more while a rolling update surges.
	pods := int(ptr.Deref(deployment.Spec.Replicas, 1))
	if deployment.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		surge := intstr.FromString("25%")
		if ru := deployment.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
			surge = *ru.MaxSurge
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&surge, pods, true)
		Expect(err).NotTo(HaveOccurred())
		pods += n
	}
	Expect(pods).To(BeNumerically("<=", endpoint.MaxPods), "pods of Deployment %s at once", endpoint.Deployment)
	Expect(endpoint.Reconcilers).NotTo(BeEmpty())
	for _, c := range deployment.Spec.Template.Spec.Containers {
		for _, arg := range append(c.Command, c.Args...) {
			Expect(arg).NotTo(HavePrefix("--controller-name"), "the controller renames its reconciler")
		}
	}
}

var _ = Describe("ControllerMetricsEndpoint", func() {
	It("names the metrics port of every Flux controller of every embedded release", func() {
		for _, version := range fluxVersions {
			data, err := RenderFlux(FluxOptions{Version: version, Components: fluxComponents, Namespace: "flux-system"})
			Expect(err).NotTo(HaveOccurred(), version)
			byName := deployments(parseObjects(data))
			for _, component := range fluxComponents {
				By(version + " " + component)
				expectMetricsEndpoint(byName, component)
			}
		}
	})

	It("names the metrics port of the kluctl controller of every embedded release", func() {
		for _, version := range kluctlVersions {
			data, err := RenderKluctl(KluctlOptions{Version: version, Namespace: "kluctl-system"})
			Expect(err).NotTo(HaveOccurred(), version)
			expectMetricsEndpoint(deployments(parseObjects(data)), fluxapi.ComponentKluctlController)
		}
	})

	It("refuses an unknown controller", func() {
		_, err := ControllerMetricsEndpoint("image-reflector-controller")
		Expect(err).To(MatchError(ContainSubstring(`unknown controller "image-reflector-controller"`)))
	})
})
