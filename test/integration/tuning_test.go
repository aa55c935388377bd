// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"os"
	"path/filepath"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Controller tuning", Ordered, func() {
	// Namespaces of their own, so that the light shoot's objects do not meet those of other light
	// shoots in the shared API server.
	const (
		tunedFluxNamespace   = "tuned-flux"
		tunedKluctlNamespace = "tuned-kluctl"
		dockerConfig         = `{"auths":{"registry.example.com":{"auth":"c2hvb3QtZmx1eDpzZWNyZXQ="}}}`
		goodConfig           = `{
  "flux": {"namespace": "` + tunedFluxNamespace + `"},
  "kluctl": {"namespace": "` + tunedKluctlNamespace + `"},
  "controllers": {
    "defaults": {"nodeSelector": {"worker.gardener.cloud/pool": "gitops"}},
    "source-controller": {
      "concurrent": 2,
      "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    },
    "kluctl-controller": {"concurrent": 3}
  }
}`
	)

	var h *sandbox.ShootHandle

	BeforeAll(func(ctx SpecContext) {
		pullSecretFile := filepath.Join(GinkgoT().TempDir(), ".dockerconfigjson")
		Expect(os.WriteFile(pullSecretFile, []byte(dockerConfig), 0o600)).To(Succeed())
		cfg := sb.ExtensionConfig()
		cfg.ImagePullSecretFile = pullSecretFile
		cfg.Controllers = map[string]config.ControllerSettings{
			"defaults": {
				PriorityClassName: ptr.To("system-cluster-critical"),
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gitops", Effect: corev1.TaintEffectNoSchedule}},
			},
		}
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})

		newProject(ctx, "tuning")
		h = createShootSucceeded(ctx, sandbox.ShootSpec{Project: "tuning", Name: "one", SharedControlPlane: true, ProviderConfig: []byte(goodConfig)})
	})

	deployment := func(ctx SpecContext, namespace, name string) (*appsv1.Deployment, error) {
		d := &appsv1.Deployment{}
		return d, get(ctx, h.Shoot.Client, d, namespace, name)
	}

	It("deploys the operator's and the shoot's settings through the shoot's API server", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			g.Expect(appliedManagedResource(ctx, h, constants.ManagedResourceControllers)).To(Succeed())

			source, err := deployment(ctx, tunedFluxNamespace, "source-controller")
			g.Expect(err).NotTo(HaveOccurred())
			spec := source.Spec.Template.Spec
			g.Expect(spec.PriorityClassName).To(Equal("system-cluster-critical"))
			g.Expect(spec.Tolerations).To(ConsistOf(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gitops", Effect: corev1.TaintEffectNoSchedule}))
			g.Expect(spec.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux", "worker.gardener.cloud/pool": "gitops"}))
			g.Expect(spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: constants.ImagePullSecretName}))
			g.Expect(spec.Containers).To(HaveLen(1))
			g.Expect(spec.Containers[0].Args).To(ContainElement("--concurrent=2"))
			g.Expect(spec.Containers[0].Resources.Requests).To(Equal(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}))
			g.Expect(spec.Containers[0].Resources.Limits).To(Equal(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}))

			kluctl, err := deployment(ctx, tunedKluctlNamespace, "kluctl-controller")
			g.Expect(err).NotTo(HaveOccurred())
			spec = kluctl.Spec.Template.Spec
			g.Expect(spec.PriorityClassName).To(Equal("system-cluster-critical"))
			g.Expect(spec.NodeSelector).To(HaveKeyWithValue("worker.gardener.cloud/pool", "gitops"))
			g.Expect(spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: constants.ImagePullSecretName}))
			g.Expect(spec.Containers[0].Args).To(ContainElements("--leader-elect", "--concurrency=3"))
			g.Expect(spec.Containers[0].Resources.Limits).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("1Gi")), "the extension's own resources stay")

			for _, namespace := range []string{tunedFluxNamespace, tunedKluctlNamespace} {
				secret := &corev1.Secret{}
				g.Expect(get(ctx, h.Shoot.Client, secret, namespace, constants.ImagePullSecretName)).To(Succeed())
				g.Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
				g.Expect(string(secret.Data[corev1.DockerConfigJsonKey])).To(Equal(dockerConfig))
			}
		}).WithTimeout(shootTimeout).Should(Succeed())
	})

	// Without a source there is no bootstrap ManagedResource, only the controllers'.
	controllersSnapshot := func(ctx SpecContext) mrSnapshot {
		GinkgoHelper()
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		return mrSnapshot{Generation: mr.Generation, Spec: mr.Spec}
	}

	It("rejects a bad setting naming the field and keeps the last good deployment", func(ctx SpecContext) {
		good := controllersSnapshot(ctx)
		Expect(h.Checkpoint(ctx)).To(Succeed())
		Expect(h.UpdateProviderConfig(ctx, []byte(`{
  "flux": {"namespace": "`+tunedFluxNamespace+`"},
  "kluctl": {"namespace": "`+tunedKluctlNamespace+`"},
  "controllers": {"source-controller": {"concurrent": 0, "resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}}}
}`))).To(Succeed())

		lastErr, err := h.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring("controllers.source-controller.concurrent: Invalid value: 0: must be between 1 and 100"))
		Expect(lastErr.Description).To(ContainSubstring("controllers.source-controller.resources.requests.memory: Invalid value: \"2Gi\": must be less than or equal to the limit 1Gi"))
		Expect(lastErr.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))

		Consistently(func() mrSnapshot { return controllersSnapshot(ctx) }).Should(Equal(good))
		source, err := deployment(ctx, tunedFluxNamespace, "source-controller")
		Expect(err).NotTo(HaveOccurred())
		Expect(source.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--concurrent=2"))
	})
})
