// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
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

// The extension's own health check reports the bootstrap only: the health of its ManagedResources
// is gardener-resource-manager's, whose health and progressing controllers judge the objects
// applied into the shoot, and which gardenlet's care controller aggregates into the Shoot's
// SystemComponentsHealthy (see pkg/controller/healthcheck). The sandbox runs those controllers.
var _ = Describe("gardener-resource-manager's health controllers", func() {
	It("report both ManagedResources healthy once the delivered controllers run, and a deleted Deployment until it is back", func(ctx SpecContext) {
		project := "grm-health"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", RunControllers: true})
		logs := func() string { return "controller logs:\n" + h.ControllerLogs() }

		By("waiting for the health controller to report both ManagedResources healthy")
		for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
			Eventually(func(g Gomega) {
				c := managedResourceCondition(g, ctx, h, name, resourcesv1alpha1.ResourcesHealthy)
				g.Expect(c.Status).To(Equal(gardencorev1beta1.ConditionTrue), "%s: %+v", name, c)
				g.Expect(c.Reason).To(Equal("ResourcesHealthy"))
				g.Expect(c.Message).To(Equal("All resources are healthy."))
			}).WithTimeout(controllersTimeout).Should(Succeed(), logs)
		}

		By("deleting a delivered Deployment")
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(mr.Status.Resources, func(r resourcesv1alpha1.ObjectReference) bool { return r.Kind == "Deployment" })
		Expect(i).To(BeNumerically(">=", 0), "the controllers ManagedResource has no Deployment: %v", mr.Status.Resources)
		ref := mr.Status.Resources[i]
		Expect(h.Shoot.Client.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}})).To(Succeed())

		// The resource manager applies the ManagedResource again as soon as it is reported
		// unhealthy (at the latest at its next sync), and the kubelet stand-in starts the
		// controller again: within seconds, so the status changes are followed with a watch, not
		// read now and then.
		By("following the condition until the Deployment is back and available")
		unhealthy := followResourcesHealthy(ctx, h, constants.ManagedResourceControllers, mr.ResourceVersion, sandbox.ResourceManagerSyncPeriod+controllersTimeout)
		Expect(unhealthy).NotTo(BeEmpty(), "the health controller never reported the deleted Deployment\n%s", logs())
		Expect(unhealthy[0].Reason).To(BeElementOf("DeploymentMissing", "DeploymentUnhealthy"))
		Expect(unhealthy[0].Message).To(ContainSubstring(ref.Name))
	})

	It("report the Deployments of a shoot that runs no controllers unhealthy and progressing", func(ctx SpecContext) {
		project := "grmunhlthy"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		// Without a kubelet stand-in nothing writes a Deployment's status: its observed generation
		// stays 0, which both controllers judge. The bootstrap objects have no health of their own
		// to the resource manager, they only have to exist.
		Eventually(func(g Gomega) {
			c := managedResourceCondition(g, ctx, h, constants.ManagedResourceControllers, resourcesv1alpha1.ResourcesHealthy)
			g.Expect(c.Status).To(Equal(gardencorev1beta1.ConditionFalse), "%+v", c)
			g.Expect(c.Reason).To(Equal("DeploymentUnhealthy"))
			g.Expect(c.Message).To(ContainSubstring("observed generation outdated (0/1)"))
			c = managedResourceCondition(g, ctx, h, constants.ManagedResourceControllers, resourcesv1alpha1.ResourcesProgressing)
			g.Expect(c.Status).To(Equal(gardencorev1beta1.ConditionTrue), "%+v", c)
			g.Expect(c.Reason).To(Equal("DeploymentProgressing"))
			c = managedResourceCondition(g, ctx, h, constants.ManagedResourceBootstrap, resourcesv1alpha1.ResourcesHealthy)
			g.Expect(c.Status).To(Equal(gardencorev1beta1.ConditionTrue), "%+v", c)
		}).WithTimeout(healthTimeout).Should(Succeed())
	})
})

// managedResourceCondition returns a condition of one of the shoot's ManagedResources.
func managedResourceCondition(g Gomega, ctx context.Context, h *sandbox.ShootHandle, name string, typ gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	mr, err := h.ManagedResource(ctx, name)
	g.Expect(err).NotTo(HaveOccurred())
	c := v1beta1helper.GetCondition(mr.Status.Conditions, typ)
	g.Expect(c).NotTo(BeNil(), "%s has no %s condition: %+v", name, typ, mr.Status.Conditions)
	return *c
}

// followResourcesHealthy watches a ManagedResource of the shoot from resourceVersion on until its
// ResourcesHealthy condition is True again, and returns the conditions other than True it had on
// the way, in order.
func followResourcesHealthy(ctx context.Context, h *sandbox.ShootHandle, name, resourceVersion string, timeout time.Duration) []gardencorev1beta1.Condition {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := sb.Seed.Client.Watch(ctx, &resourcesv1alpha1.ManagedResourceList{}, &client.ListOptions{
		Namespace:     h.SeedNamespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
		Raw:           &metav1.ListOptions{ResourceVersion: resourceVersion},
	})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	var seen []gardencorev1beta1.Condition
	for {
		select {
		case <-ctx.Done():
			Fail(fmt.Sprintf("%s did not turn healthy again within %s; seen: %+v", name, timeout, seen))
		case ev, ok := <-w.ResultChan():
			Expect(ok).To(BeTrue(), "watch ended early; seen: %+v", seen)
			Expect(ev.Type).NotTo(Equal(watch.Error), "watch failed: %v", ev.Object)
			mr := ev.Object.(*resourcesv1alpha1.ManagedResource)
			c := v1beta1helper.GetCondition(mr.Status.Conditions, resourcesv1alpha1.ResourcesHealthy)
			switch {
			case c == nil:
			case c.Status == gardencorev1beta1.ConditionTrue:
				if len(seen) > 0 {
					return seen
				}
			case len(seen) == 0 || seen[len(seen)-1].Reason != c.Reason || seen[len(seen)-1].Message != c.Message:
				seen = append(seen, *c)
			}
		}
	}
}

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
