package integration

import (
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Tenant isolation", func() {
	// The wait for the bootstrap ManagedResource is bounded by timeouts.managedResourceApplied (2m);
	// a shoot whose bootstrap cannot be applied must give its worker back long before that.
	It("reports an unappliable bootstrap with the resource manager's message instead of waiting for the timeout", Label(labelDeployed), func(ctx SpecContext) {
		project := "unappliable"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: "pull"},
			Data:       map[string][]byte{"token": []byte("x")},
		})).To(Succeed())

		start := time.Now()
		h := createShoot(ctx, sandbox.ShootSpec{
			Project:        project,
			Name:           "one",
			ProviderConfig: []byte(`{"additionalSecretResources":[{"name":"pull","namespace":"does-not-exist"}]}`),
			Resources: []gardencorev1beta1.NamedResourceReference{{
				Name:        "pull",
				ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "pull"},
			}},
		})
		lastErr, err := h.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring(`gardener-resource-manager cannot apply managed resource ` + h.SeedNamespace + `/extension-shoot-flux-bootstrap`))
		Expect(lastErr.Description).To(ContainSubstring(`namespaces "does-not-exist" not found`))
		By("the error arrived after " + time.Since(start).Round(time.Second).String())
	})
})
