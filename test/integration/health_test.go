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

		By("reporting a failed deployment after an earlier one as the kluctl controller would")
		const commit = "0123456789abcdef0123456789abcdef01234567"
		setKluctlStatus(ctx, h, "False", "PrepareFailed", "failed to clone the repository", map[string]any{
			"gitInfo": map[string]any{"ref": map[string]any{"branch": "main"}, "commit": commit, "dirty": false},
			"errors":  []any{},
		})
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionFalse, "(last deployed commit "+commit+") is not ready (PrepareFailed): failed to clone the repository")

		By("reporting success")
		setKluctlReady(ctx, h, "True", "ReconciliationSucceeded", "deployed")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")
	})
})

// setKluctlReady writes the Ready condition of the bootstrap KluctlDeployment's status.
func setKluctlReady(ctx SpecContext, h *sandbox.ShootHandle, status, reason, message string) {
	GinkgoHelper()
	setKluctlStatus(ctx, h, status, reason, message, nil)
}

// setKluctlStatus writes the Ready condition and, if not nil, the lastDeployResult of the
// bootstrap KluctlDeployment's status.
func setKluctlStatus(ctx SpecContext, h *sandbox.ShootHandle, status, reason, message string, lastDeployResult map[string]any) {
	GinkgoHelper()
	kd, err := kluctlDeployment(ctx, h)
	Expect(err).NotTo(HaveOccurred())
	if lastDeployResult != nil {
		Expect(unstructured.SetNestedMap(kd.Object, lastDeployResult, "status", "lastDeployResult")).To(Succeed())
	}
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
