// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// The scenario changes the kustomize-controller's Deployment the way a user's repository that
// manages Flux would: an environment variable the delivered manifests do not have.
const (
	userChangedController = "kustomize-controller"
	userEnvName           = "SHOOT_FLUX_USER_CHANGE"
	// handoverSyncPeriod is the resource manager's sync period of the scenario's shoot: how often
	// it reverts drift of what it owns.
	handoverSyncPeriod = 5 * time.Second
	// revertTimeout bounds the wait for the resource manager to revert a change: a few sync periods
	// plus a reconcile of the extension on a loaded machine.
	revertTimeout = 6 * handoverSyncPeriod
	// keptFor is how long a change of handed-over controllers must stay: four sync periods, in
	// which the resource manager reverts a change of what it owns (see revertTimeout).
	keptFor = 4 * handoverSyncPeriod
)

var _ = Describe("Letting Flux manage itself (flux.management handover) with the delivered controllers running", func() {
	It("reverts drift while it owns the controllers, leaves handed-over ones to the user, and takes them back", func(ctx SpecContext) {
		project := "handover"
		newProject(ctx, project)
		config := func(management string) []byte {
			GinkgoHelper()
			cfg := map[string]any{}
			Expect(json.Unmarshal(fluxModeConfig(repoName, "configmap", "source-controller", "kustomize-controller"), &cfg)).To(Succeed())
			cfg["flux"].(map[string]any)["management"] = management
			return mustJSON(cfg)
		}
		h := createShootSucceeded(ctx, sandbox.ShootSpec{
			Project:                   project,
			Name:                      "one",
			RunControllers:            true,
			ResourceManagerSyncPeriod: handoverSyncPeriod,
			ProviderConfig:            config("continuous"),
		})
		registerDeployKey(ctx, h)
		logs := func() string { return "controller logs:\n" + h.ControllerLogs() }
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")
		expectBootstrapApplied(ctx, h, logs)

		By("changing the controller while the extension owns it (management continuous)")
		setUserEnv(ctx, h, "continuous")
		start := time.Now()
		Eventually(func(g Gomega) { g.Expect(userEnv(g, ctx, h)).To(BeEmpty()) }).WithTimeout(revertTimeout).Should(Succeed())
		AddReportEntry("drift reverted in management continuous", time.Since(start).Round(time.Millisecond).String())

		By("handing the controllers over")
		update(ctx, h, config("handover"))
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Management).To(Equal("handover"))
		Expect(status.HandedOverVersion).To(Equal(status.FluxVersion))
		Expect(status.HandedOverAt).NotTo(BeNil())
		Eventually(func(g Gomega) {
			mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mr.Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))
			g.Expect(appliedReason(mr)).To(Equal(resourcesv1alpha1.ConditionManagedResourceIgnored))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(get(ctx, h.Shoot.Client, cm, fluxNamespace, constants.StatusConfigMapName)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("management", "handover"))
			g.Expect(cm.Data).To(HaveKeyWithValue("handedOverVersion", status.HandedOverVersion))
			g.Expect(cm.Data).To(HaveKeyWithValue("handedOverAt", status.HandedOverAt.UTC().Format(time.RFC3339)))
		}).Should(Succeed())

		By("changing the handed-over controller as the user's repository would")
		setUserEnv(ctx, h, "handover")
		Consistently(func(g Gomega) { g.Expect(userEnv(g, ctx, h)).To(Equal("handover")) }).WithTimeout(keptFor).Should(Succeed())
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("migrating the control plane: the handover moves with it")
		Expect(h.Migrate(ctx, reconcileTimeout)).To(Succeed(), logs)
		Expect(h.Restore(ctx)).To(Succeed())
		_, err = h.WaitRestored(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred(), logs)
		restored, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(restored.HandedOverAt.Equal(status.HandedOverAt)).To(BeTrue(), "handed over at %v, restored %v", status.HandedOverAt, restored.HandedOverAt)
		Consistently(func(g Gomega) { g.Expect(userEnv(g, ctx, h)).To(Equal("handover")) }).WithTimeout(keptFor).Should(Succeed())

		By("rotating the deploy key: the credentials still reach the shoot")
		oldSecret, err := credentials(ctx, h, fluxNamespace)
		Expect(err).NotTo(HaveOccurred())
		rotateDeployKey(ctx, h, status.DeployKey)
		rotated, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(rotated.Fingerprint).NotTo(Equal(status.Fingerprint))
		Eventually(func(g Gomega) {
			secret, err := credentials(ctx, h, fluxNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Data[constants.SecretKeyIdentity]).NotTo(Equal(oldSecret.Data[constants.SecretKeyIdentity]))
			cm := &corev1.ConfigMap{}
			g.Expect(get(ctx, h.Shoot.Client, cm, fluxNamespace, constants.StatusConfigMapName)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("fingerprint", rotated.Fingerprint))
		}).Should(Succeed())
		registerDeployKey(ctx, h)
		expectBootstrapApplied(ctx, h, logs)
		Expect(userEnv(Default, ctx, h)).To(Equal("handover"), "the change of the user stays")

		By("taking the controllers back (management continuous)")
		start = time.Now()
		update(ctx, h, config("continuous"))
		Eventually(func(g Gomega) { g.Expect(userEnv(g, ctx, h)).To(BeEmpty()) }).WithTimeout(revertTimeout).Should(Succeed())
		AddReportEntry("change reverted after switching back to continuous", time.Since(start).Round(time.Millisecond).String())
		status, err = h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Management).To(Equal("continuous"))
		Expect(status.HandedOverAt).To(BeNil())
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		Expect(mr.Annotations).NotTo(Or(HaveKey(resourcesv1alpha1.Ignore), HaveKey(constants.AnnotationHandedOverAt)))
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("handing over again and disabling the extension: the controllers belong to the user")
		update(ctx, h, config("handover"))
		setUserEnv(ctx, h, "disabled")
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		Expect(userEnv(Default, ctx, h)).To(Equal("disabled"))
		for _, name := range []string{"source-controller", "kustomize-controller"} {
			d := &appsv1.Deployment{}
			Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, name)).To(Succeed())
			Expect(d.DeletionTimestamp).To(BeNil(), name)
		}
		Expect(get(ctx, h.Shoot.Client, &apiextensionsv1.CustomResourceDefinition{}, "", "gitrepositories.source.toolkit.fluxcd.io")).To(Succeed())
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")
	})
})

// update changes the providerConfig and waits for the reconcile.
func update(ctx context.Context, h *sandbox.ShootHandle, providerConfig []byte) {
	GinkgoHelper()
	Expect(h.UpdateProviderConfig(ctx, providerConfig)).To(Succeed())
	_, err := h.WaitSucceeded(ctx, reconcileTimeout)
	Expect(err).NotTo(HaveOccurred())
}

// expectBootstrapApplied waits until the controllers reconciled the bootstrap objects.
func expectBootstrapApplied(ctx context.Context, h *sandbox.ShootHandle, logs func() string) {
	GinkgoHelper()
	Eventually(func(g Gomega) { fluxBootstrapReady(g, ctx, h) }).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
}

// setUserEnv sets the user's environment variable in the changed controller's container.
func setUserEnv(ctx context.Context, h *sandbox.ShootHandle, value string) {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, userChangedController)).To(Succeed())
	patch := client.MergeFrom(d.DeepCopy())
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: userEnvName, Value: value})
	for i := range c.Env[:len(c.Env)-1] {
		if c.Env[i].Name == userEnvName {
			c.Env[i].Value = value
			c.Env = c.Env[:len(c.Env)-1]
		}
	}
	Expect(h.Shoot.Client.Patch(ctx, d, patch)).To(Succeed())
}

// userEnv returns the value of the user's environment variable, "" without it.
func userEnv(g Gomega, ctx context.Context, h *sandbox.ShootHandle) string {
	d := &appsv1.Deployment{}
	g.Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, userChangedController)).To(Succeed())
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == userEnvName {
			return e.Value
		}
	}
	return ""
}

func appliedReason(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied {
			return c.Reason
		}
	}
	return fmt.Sprintf("no %s condition", resourcesv1alpha1.ResourcesApplied)
}
