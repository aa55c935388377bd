package manifests

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

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
