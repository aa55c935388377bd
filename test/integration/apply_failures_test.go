// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	// repeatedFailures changes of the project ConfigMap follow each other, each failing to apply.
	repeatedFailures = 5
	// repeatedFailureBound is how soon after a change its Extension must show the Error: half the
	// sandbox's applied timeout (2 min), which a repeated failure took to show before (issue 37),
	// whatever the machine's load. On an idle machine it shows after 6–8 s: the ConfigMap's
	// coalescing window, the apply, and the 5 s that the extension waits out an apply failure.
	repeatedFailureBound = time.Minute
	// frozenMessage is the one message of the owner's policy, whatever it denies.
	frozenMessage = "the owner froze the bootstrap"
)

var _ = Describe("Repeated apply failures", func() {
	// Issue 37: a shoot owner's admission policy denies every change of the bootstrap with the same
	// message, and the project admin keeps changing the ConfigMap. gardener-resource-manager then
	// reports every failure with the condition of the one before.
	It("shows each failing change as an Error within seconds, keeps it visible and keeps two ManagedResource Secrets", Label(labelDeployed), func(ctx SpecContext) {
		hostileRun++
		project := fmt.Sprintf("rf%d", hostileRun)
		namespace := newProject(ctx, project)
		setProjectConfig(ctx, namespace, legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "dev"})

		By("denying every change of the KluctlDeployment with one message, as the shoot's owner can")
		denyKluctlDeploymentUpdates(ctx, h, frozenMessage, "")

		for round := 1; round <= repeatedFailures; round++ {
			By(fmt.Sprintf("changing the branch, change %d of %d", round, repeatedFailures))
			branch := fmt.Sprintf("change-%d", round)
			changed := time.Now()
			setProjectConfig(ctx, namespace, legacyConfig(publicURL, branch, "public"))
			Eventually(func(g Gomega) {
				// The Extension is read after the ManagedResource: once that holds the change, the
				// Extension shows the reconcile that wrote it (Processing) or a later one.
				objs, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bootstrapBranch(objs)).To(Equal(branch), "the change is in the bootstrap ManagedResource")
				ex, err := h.Extension(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(lastOperation(ex)).To(Equal("Reconcile/Error"))
				g.Expect(ex.Status.LastError).NotTo(BeNil())
				g.Expect(ex.Status.LastError.Description).To(ContainSubstring(frozenMessage))
			}).WithTimeout(repeatedFailureBound).WithPolling(pollInterval).Should(Succeed(), "change %d: the owner sees the denial", round)
			AddReportEntry(fmt.Sprintf("repeated failure %d", round), fmt.Sprintf("Error shown %s after the change", time.Since(changed).Round(100*time.Millisecond)))

			Expect(h.Checkpoint(ctx)).To(Succeed())
			Expect(h.WatchExtension(ctx, consistentlyDuration, func(ex *extensionsv1alpha1.Extension, _ bool) (bool, error) {
				if op := ex.Status.LastOperation; op == nil || op.State != gardencorev1beta1.LastOperationStateError {
					return false, fmt.Errorf("change %d: the Error was replaced by %s at once", round, lastOperation(ex))
				}
				return false, nil
			})).To(Succeed())

			kept, _, err := managedResourceSecrets(ctx, []*sandbox.ShootHandle{h})
			Expect(err).NotTo(HaveOccurred())
			Expect(len(kept)).To(BeNumerically("<=", 2), "change %d: ManagedResource Secrets %v", round, kept)
		}

		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("main"), "the shoot keeps what was applied last")

		By("lifting the owner's policy and changing the branch once more")
		Expect(h.Shoot.Client.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "freeze-kluctl"}})).To(Succeed())
		Eventually(func(g Gomega) {
			kd, err := kluctlDeployment(ctx, h)
			g.Expect(err).NotTo(HaveOccurred())
			kd.SetLabels(map[string]string{"probe": "thawed"})
			g.Expect(h.Shoot.Client.Update(ctx, kd, client.DryRunAll)).To(Succeed())
		}).WithTimeout(shootTimeout).Should(Succeed())
		Expect(h.Checkpoint(ctx)).To(Succeed())
		setProjectConfig(ctx, namespace, legacyConfig(publicURL, "thawed", "public"))
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		kd, err = kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("thawed"))
	})
})

// denyKluctlDeploymentUpdates creates a ValidatingAdmissionPolicy freeze-kluctl in the shoot that
// refuses every update of a KluctlDeployment with message (or messageExpression, if set), as a
// shoot owner can, and waits until the API server enforces it.
func denyKluctlDeploymentUpdates(ctx context.Context, h *sandbox.ShootHandle, message, messageExpression string) {
	GinkgoHelper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-kluctl"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"gitops.kluctl.io"}, APIVersions: []string{"*"}, Resources: []string{"kluctldeployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message, MessageExpression: messageExpression}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "freeze-kluctl"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	Expect(h.Shoot.Client.Create(ctx, policy)).To(Succeed())
	Expect(h.Shoot.Client.Create(ctx, binding)).To(Succeed())
	Eventually(func(g Gomega) {
		kd, err := kluctlDeployment(ctx, h)
		g.Expect(err).NotTo(HaveOccurred())
		kd.SetLabels(map[string]string{"probe": "freeze"})
		err = h.Shoot.Client.Update(ctx, kd, client.DryRunAll)
		g.Expect(err).To(MatchError(ContainSubstring(message)))
	}).WithTimeout(shootTimeout).Should(Succeed())
}
