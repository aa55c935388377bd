// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// A fleet of shoots bootstrapped from one repository tells the shoots apart by what the extension
// delivers with the bootstrap, and shoot owners read the extension's state in their shoot.
var _ = Describe("Shoot identity and status in the shoot", func() {
	// identity is the shoot-info data of a sandbox shoot (see sandbox.createCluster).
	identity := func(project, name, domain, kubernetesVersion string) map[string]string {
		return map[string]string{
			"SHOOT_PROJECT":            project,
			"SHOOT_NAME":               name,
			"SHOOT_NAMESPACE":          sandbox.ProjectNamespace(project),
			"SHOOT_SEED":               "local",
			"SHOOT_REGION":             "local",
			"SHOOT_PROVIDER_TYPE":      "local",
			"SHOOT_KUBERNETES_VERSION": kubernetesVersion,
			"SHOOT_PURPOSE":            "evaluation",
			"SHOOT_DOMAIN":             domain,
			// The keys stackit's extension wrote, which switched shoots' repositories read; the
			// sandbox's Shoots have no cluster identity.
			"SHOOT_INFO_NAME":                    name,
			"SHOOT_INFO_TECHNICAL_ID":            "shoot--" + project + "--" + name,
			"SHOOT_INFO_GARDEN_CLUSTER_IDENTITY": "garden",
		}
	}

	It("delivers the identity to kluctl, follows a Kubernetes upgrade and shows the deploy key in the shoot", Label(labelDeployed), func(ctx SpecContext) {
		const project, domain = "fleetklct", "one.fleetklct.local.example.com"
		projectNamespace := newProject(ctx, project)
		cfg := legacyConfig(git.URL(repoName), gitserver.Branch, "private")
		cfg[constants.ConfigMapKeyConfig] = "bootstrap:\n  kluctl:\n    args:\n      environment: prod\n      shoot:\n        team: platform\n"
		setProjectConfig(ctx, projectNamespace, cfg)
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", Domain: domain})

		By("checking the ConfigMap shoot-info and the kluctl argument shoot")
		want := identity(project, "one", domain, sandbox.KubernetesVersion)
		Expect(shootInfo(ctx, h, kluctlNamespace)).To(Equal(want))
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		args, _, err := unstructured.NestedMap(kd.Object, "spec", "args")
		Expect(err).NotTo(HaveOccurred())
		Expect(args).To(Equal(map[string]any{
			"environment": "prod",
			// The user's key is kept next to the extension's.
			"shoot": map[string]any{
				"team": "platform", "project": project, "name": "one", "namespace": projectNamespace, "seed": "local", "region": "local",
				"providerType": "local", "kubernetesVersion": sandbox.KubernetesVersion, "purpose": "evaluation", "domain": domain,
			},
		}))

		By("checking the ConfigMap shoot-flux-status against the providerStatus")
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.PublicKey).NotTo(BeEmpty())
		statusData := statusConfigMap(ctx, h, kluctlNamespace)
		Expect(statusData).To(Equal(map[string]string{
			"bootstrapMode": "kluctl", "fluxVersion": fluxVersion, "kluctlVersion": status.KluctlVersion, "management": "continuous",
			"repository": git.URL(repoName), "ref": "branch:" + gitserver.Branch,
			"publicKey": status.PublicKey, "fingerprint": status.Fingerprint,
		}))
		_, keys := deployKeys(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))
		dump := string(mustJSON(statusData))
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
		for _, f := range privateKeyFragments(strings.TrimSpace(string(keys[0].Identity))) {
			Expect(dump).NotTo(ContainSubstring(f))
		}

		By("upgrading Kubernetes")
		const upgraded = sandbox.KubernetesPatchVersion
		Expect(h.UpdateShootSpec(ctx, func(spec *gardencorev1beta1.ShootSpec) { spec.Kubernetes.Version = upgraded })).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		want["SHOOT_KUBERNETES_VERSION"] = upgraded
		Eventually(func(g Gomega) {
			g.Expect(shootInfo(ctx, h, kluctlNamespace)).To(Equal(want))
			kd, err := kluctlDeployment(ctx, h)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(kd, "spec", "args", "shoot", "kubernetesVersion")).To(Equal(upgraded))
		}).WithTimeout(shootTimeout).Should(Succeed())
	})

	It("delivers the identity as substitution variables of the Kustomization and can be switched off", Label(labelDeployed), func(ctx SpecContext) {
		const project = "fleet-flux"
		newProject(ctx, project)
		providerConfig := map[string]any{
			"source":    map[string]any{"url": publicURL},
			"bootstrap": map[string]any{"mode": "flux"},
		}
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", ProviderConfig: mustJSON(providerConfig)})

		By("checking the ConfigMap shoot-info and the Kustomization's postBuild")
		want := identity(project, "one", "", sandbox.KubernetesVersion)
		delete(want, "SHOOT_DOMAIN")
		Expect(shootInfo(ctx, h, fluxNamespace)).To(Equal(want))
		ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
		Expect(err).NotTo(HaveOccurred())
		substituteFrom, _, err := unstructured.NestedSlice(ks.Object, "spec", "postBuild", "substituteFrom")
		Expect(err).NotTo(HaveOccurred())
		// Not optional (the CRD defaults false): a missing ConfigMap must not substitute empty values.
		Expect(substituteFrom).To(ConsistOf(And(HaveKeyWithValue("kind", "ConfigMap"), HaveKeyWithValue("name", constants.ShootInfoConfigMapName),
			Not(HaveKeyWithValue("optional", true)))))

		By("checking the ConfigMap shoot-flux-status of a public repository")
		Expect(statusConfigMap(ctx, h, fluxNamespace)).To(Equal(map[string]string{
			"bootstrapMode": "flux", "fluxVersion": fluxVersion, "kluctlVersion": defaultKluctlVersion(ctx, h), "management": "continuous",
			"repository": publicURL, "ref": "branch:main",
		}))

		By("switching the identity off")
		providerConfig["bootstrap"] = map[string]any{"mode": "flux", "shootInfo": false}
		Expect(h.UpdateProviderConfig(ctx, mustJSON(providerConfig))).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			err := get(ctx, h.Shoot.Client, &corev1.ConfigMap{}, fluxNamespace, constants.ShootInfoConfigMapName)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "shoot-info still there: %v", err)
			ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ks.Object["spec"]).NotTo(HaveKey("postBuild"))
		}).WithTimeout(shootTimeout).Should(Succeed())
		Expect(statusConfigMap(ctx, h, fluxNamespace)).To(HaveKeyWithValue("bootstrapMode", "flux"))
	})
})

// shootInfo reads the data of the ConfigMap shoot-info in a namespace of the shoot.
func shootInfo(ctx context.Context, h *sandbox.ShootHandle, namespace string) map[string]string {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Expect(get(ctx, h.Shoot.Client, cm, namespace, constants.ShootInfoConfigMapName)).To(Succeed())
	Expect(cm.Labels).To(HaveKeyWithValue(constants.LabelManagedBy, constants.ExtensionName))
	return cm.Data
}

// statusConfigMap reads the data of the ConfigMap shoot-flux-status in a namespace of the shoot.
func statusConfigMap(ctx context.Context, h *sandbox.ShootHandle, namespace string) map[string]string {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Expect(get(ctx, h.Shoot.Client, cm, namespace, constants.StatusConfigMapName)).To(Succeed())
	return cm.Data
}

// defaultKluctlVersion is the kluctl version the extension reports for the shoot.
func defaultKluctlVersion(ctx context.Context, h *sandbox.ShootHandle) string {
	GinkgoHelper()
	status, err := h.ProviderStatus(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(status.KluctlVersion).NotTo(BeEmpty())
	return status.KluctlVersion
}
