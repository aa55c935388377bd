package integration

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Health check", func() {
	It("reports the state of the bootstrap KluctlDeployment as condition BootstrapReady", func(ctx SpecContext) {
		project := "health"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		By("waiting for the check before the kluctl controller reported anything")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionProgressing, "has not reported readiness yet")

		By("reporting a failed deployment as the kluctl controller would")
		setKluctlReady(ctx, h, "False", "PrepareFailed", "failed to clone the repository")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionFalse, "failed to clone the repository")

		By("reporting success")
		setKluctlReady(ctx, h, "True", "ReconciliationSucceeded", "deployed")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")
	})
})

// setKluctlReady writes the Ready condition of the bootstrap KluctlDeployment's status.
func setKluctlReady(ctx SpecContext, h *sandbox.ShootHandle, status, reason, message string) {
	GinkgoHelper()
	kd, err := kluctlDeployment(ctx, h)
	Expect(err).NotTo(HaveOccurred())
	Expect(unstructured.SetNestedSlice(kd.Object, []any{map[string]any{
		"type":               "Ready",
		"status":             status,
		"reason":             reason,
		"message":            message,
		"lastTransitionTime": "2024-01-01T00:00:00Z",
		"observedGeneration": kd.GetGeneration(),
	}}, "status", "conditions")).To(Succeed())
	Expect(h.Shoot.Client.Status().Update(ctx, kd)).To(Succeed())
}

func expectBootstrapReady(ctx SpecContext, h *sandbox.ShootHandle, status gardencorev1beta1.ConditionStatus, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ex, err := h.Extension(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		var found *gardencorev1beta1.Condition
		for i := range ex.Status.Conditions {
			if ex.Status.Conditions[i].Type == healthcheck.ConditionTypeBootstrapReady {
				found = &ex.Status.Conditions[i]
			}
		}
		g.Expect(found).NotTo(BeNil(), "conditions: %v", ex.Status.Conditions)
		g.Expect(found.Status).To(Equal(status), "condition: %+v", *found)
		g.Expect(found.Message).To(ContainSubstring(message))
	}).WithTimeout(healthTimeout).Should(Succeed())
}
