// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"fmt"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/ociregistry"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// registryResource references the project Secret registry, the registry credentials of the OCI
// source, as a Shoot resource of the same name.
var registryResource = gardencorev1beta1.NamedResourceReference{
	Name:        "registry",
	ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "registry"},
}

// newRegistryProject creates a project with the Secret registry holding data.
func newRegistryProject(ctx SpecContext, project string, data map[string][]byte) {
	GinkgoHelper()
	Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: newProject(ctx, project), Name: registryResource.Name},
		Data:       data,
	})).To(Succeed())
}

var _ = Describe("OCI source in bootstrap mode flux with the delivered Flux controllers running", func() {
	It("pulls the artifact with the registry credentials and applies its manifests", func(ctx SpecContext) {
		registry, err := ociregistry.Start("fleet-puller", "s3cret")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(registry.Close)
		digest, err := registry.Push("fleet/apps", "v1", map[string]string{
			"cluster/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: from-oci
  namespace: default
data:
  greeting: hello from an OCI artifact
`,
			"unused/configmap.yaml": "this is not applied: the Kustomization's path is cluster\n",
		})
		Expect(err).NotTo(HaveOccurred())

		project := "oci-flux"
		newRegistryProject(ctx, project, map[string][]byte{"username": []byte("fleet-puller"), "password": []byte("s3cret")})
		start := time.Now()
		h := createShootSucceeded(ctx, sandbox.ShootSpec{
			Project:        project,
			Name:           "one",
			RunControllers: true,
			Resources:      []gardencorev1beta1.NamedResourceReference{registryResource},
			ProviderConfig: mustJSON(map[string]any{
				"source": map[string]any{"oci": map[string]any{
					"url":                registry.URL("fleet/apps"),
					"ref":                map[string]any{"tag": "v1"},
					"path":               "cluster",
					"secretResourceName": registryResource.Name,
				}},
				"bootstrap": map[string]any{"mode": "flux"},
				"kluctl":    map[string]any{"enabled": false},
				"flux":      map[string]any{"components": []string{"source-controller", "kustomize-controller"}},
			}),
		})
		logs := func() string { return "controller logs:\n" + h.ControllerLogs() }
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("checking the registry credentials delivered as an image pull Secret")
		creds := &corev1.Secret{}
		Expect(get(ctx, h.Shoot.Client, creds, fluxNamespace, constants.OCICredentialsSecretName)).To(Succeed())
		Expect(creds.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		var dockerConfig struct {
			Auths map[string]map[string]string `json:"auths"`
		}
		Expect(json.Unmarshal(creds.Data[corev1.DockerConfigJsonKey], &dockerConfig)).To(Succeed())
		Expect(dockerConfig.Auths).To(HaveKeyWithValue(registry.Host(), HaveKeyWithValue("username", "fleet-puller")))

		By("waiting for the OCIRepository to pull the pushed digest and the Kustomization to apply it")
		Eventually(func(g Gomega) {
			ready := readyConditionOf(g, ctx, h, bootstrap.OCIRepositoryGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(ready["status"]).To(Equal("True"), "Ready condition of the OCIRepository: %v", ready)
			repo, err := shootObject(ctx, h, bootstrap.OCIRepositoryGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(repo, "status", "artifact", "revision")).To(Equal("v1@" + digest))
			ready = readyConditionOf(g, ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(ready["status"]).To(Equal("True"), "Ready condition of the Kustomization: %v", ready)
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		AddReportEntry("OCI artifact applied", fmt.Sprintf("%s after the shoot was created", time.Since(start).Round(time.Millisecond)))

		cm := &corev1.ConfigMap{}
		Expect(get(ctx, h.Shoot.Client, cm, "default", "from-oci")).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from an OCI artifact"))
		Expect(registry.Pulls()).To(BeNumerically(">", 0), "the controller pulled with the credentials")

		By("checking that the health check follows the OCIRepository")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")
	})
})

var _ = Describe("OCI source in bootstrap mode kluctl", Ordered, func() {
	const (
		url    = "oci://registry.example.com:5000/fleet/apps"
		digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	// config is a providerConfig with an OCI source; extra is added to source.oci, overriding.
	config := func(extra string) string {
		return fmt.Sprintf(`{"source":{"oci":{"url":%q,"ref":{"digest":%q},"path":"deploy","secretResourceName":"registry"%s}}}`, url, digest, extra)
	}
	goodConfig := config("")

	var (
		h    *sandbox.ShootHandle
		good map[string]mrSnapshot
	)

	BeforeAll(func(ctx SpecContext) {
		project := "oci-kluctl"
		newRegistryProject(ctx, project, map[string][]byte{"token": []byte("bearer-token")})
		h = createShootSucceeded(ctx, sandbox.ShootSpec{
			Project:        project,
			Name:           "one",
			Resources:      []gardencorev1beta1.NamedResourceReference{registryResource},
			ProviderConfig: []byte(goodConfig),
		})
		good = snapshotManagedResources(ctx, h)
	})

	expectGoodDeployment := func(ctx SpecContext) {
		GinkgoHelper()
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(kd.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("source", Equal(map[string]any{"oci": map[string]any{
			"url":  url,
			"ref":  map[string]any{"digest": digest},
			"path": "deploy",
		}}))))
		entries, _, err := unstructured.NestedSlice(kd.Object, "spec", "credentials", "oci")
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(Equal([]any{map[string]any{
			"registry":   "registry.example.com:5000",
			"repository": "fleet/apps",
			"secretRef":  map[string]any{"name": constants.OCICredentialsSecretName},
		}}))
	}

	It("delivers a KluctlDeployment with source.oci and credentials.oci that the CRD schema accepts", func(ctx SpecContext) {
		// The resource manager applied the KluctlDeployment into the shoot's API server, which
		// validates it against kluctl's CRD.
		Expect(appliedManagedResource(ctx, h, constants.ManagedResourceBootstrap)).To(Succeed())
		expectGoodDeployment(ctx)

		creds := &corev1.Secret{}
		Expect(get(ctx, h.Shoot.Client, creds, kluctlNamespace, constants.OCICredentialsSecretName)).To(Succeed())
		Expect(creds.Data).To(Equal(map[string][]byte{"token": []byte("bearer-token")}))

		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(ex.Status.ProviderStatus.Raw)).To(And(ContainSubstring(`"repository":"`+url+`"`), ContainSubstring(`"ref":"digest:`+digest+`"`)))
	})

	// expectRejected waits for the reconcile to fail with a configuration error naming field, and
	// checks that the last good deployment stays as it is.
	expectRejected := func(ctx SpecContext, field string) {
		GinkgoHelper()
		expectConfigurationRejected(ctx, h, good, field)
		expectGoodDeployment(ctx)
	}

	DescribeTable("rejects a bad OCI source and keeps the last good deployment",
		func(ctx SpecContext, providerConfig, field string) {
			Expect(h.UpdateProviderConfig(ctx, []byte(providerConfig))).To(Succeed())
			expectRejected(ctx, field)
		},
		Entry("credentials that are not in spec.resources", config(`,"secretResourceName":"missing"`), `source.oci.secretResourceName: Shoot `),
		Entry("git fields next to oci", `{"source":{"url":"https://git.example.com/fleet.git","oci":{"url":"oci://ghcr.io/fleet/apps"}}}`, "source.url: Forbidden"),
		Entry("a tag and a digest", config(`,"ref":{"tag":"v1","digest":"`+digest+`"}`), "source.oci.ref"),
		Entry("a tag in the URL", config(`,"url":"oci://ghcr.io/fleet/apps:v1"`), "source.oci.url"),
	)

	It("rejects credentials whose Secret is missing in the seed and keeps the last good deployment", func(ctx SpecContext) {
		Expect(h.UpdateProviderConfig(ctx, []byte(goodConfig))).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshotManagedResources(ctx, h)).To(Equal(good), "the good configuration renders the same objects again")

		By("deleting the copy gardenlet made of the referenced Secret")
		Expect(sb.Seed.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.SeedNamespace, Name: v1beta1constants.ReferencedResourcesPrefix + registryResource.ResourceRef.Name}})).To(Succeed())
		// A shoot reconcile would copy it again; the extension's retry alone finds it missing.
		Expect(h.RetryExtension(ctx)).To(Succeed())
		expectRejected(ctx, `source.oci.secretResourceName: Secret "registry" referenced by resource "registry" was not found`)
	})
})
