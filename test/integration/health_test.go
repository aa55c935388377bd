package integration

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
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
		// The shoot still runs what kluctl deployed last, and the providerStatus says so.
		expectLastAppliedRevision(ctx, h, commit)

		By("reporting success")
		setKluctlReady(ctx, h, "True", "ReconciliationSucceeded", "deployed")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")

		By("a reconcile of the Extension keeps the recorded revision")
		Expect(h.UpdateProviderConfig(ctx, []byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","source":{"path":"deploy"}}`))).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.LastAppliedRevision).To(Equal(commit))
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

// expectLastAppliedRevision waits until the providerStatus records revision as the last one the
// bootstrap applied.
func expectLastAppliedRevision(ctx SpecContext, h *sandbox.ShootHandle, revision string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ex, err := h.Extension(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status.LastAppliedRevision).To(Equal(revision))
	}).WithTimeout(healthTimeout).Should(Succeed())
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
