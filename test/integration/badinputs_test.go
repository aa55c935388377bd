// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Bad configuration", Ordered, Label(labelDeployed), func() {
	const goodConfig = `{"source":{"path":"clusters/good"},"bootstrap":{"kluctl":{"args":{"stage":"good"}}}}`

	var (
		h                *sandbox.ShootHandle
		projectNamespace string
		good             map[string]mrSnapshot
	)

	BeforeAll(func(ctx SpecContext) {
		project := "bad-inputs"
		projectNamespace = newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		h = createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", ProviderConfig: []byte(goodConfig)})
		good = snapshotManagedResources(ctx, h)
	})

	// expectRejected waits for the reconcile to fail with a configuration error naming field, and
	// checks that the last good deployment stays as it is.
	expectRejected := func(ctx SpecContext, field string) {
		GinkgoHelper()
		expectConfigurationRejected(ctx, h, good, field)
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "path")).To(Equal("clusters/good"))
	}

	DescribeTable("rejects a providerConfig and keeps the last good deployment",
		func(ctx SpecContext, providerConfig, field string) {
			Expect(h.UpdateProviderConfig(ctx, []byte(providerConfig))).To(Succeed())
			expectRejected(ctx, field)
		},
		Entry("invalid URL", `{"source":{"url":"ftp://git.example.com/fleet.git"}}`, "source.url"),
		Entry("unknown field", `{"source":{"branch":"main"}}`, "source.branch"),
		Entry("unsupported Flux version", `{"flux":{"version":"v2.0.0"}}`, "flux.version"),
		Entry("args that are no object", `{"bootstrap":{"kluctl":{"args":["a","b"]}}}`, "bootstrap.kluctl.args"),
		Entry("a Secret that is not in spec.resources", `{"source":{"secretResourceName":"git-credentials"}}`, "source.secretResourceName"),
		Entry("an additional Secret named like the extension's own", `{"additionalSecretResources":[{"name":"pull","targetName":"shoot-flux-git-credentials"}]}`, "additionalSecretResources[0].targetName"),
		// The default limit is 16 KiB.
		Entry("kluctl args over the operator's limit", `{"bootstrap":{"kluctl":{"args":{"big":"`+strings.Repeat("x", 17<<10)+`"}}}}`,
			"Extension providerConfig: bootstrap.kluctl.args: Too long: has 17418 bytes as JSON, more than the operator's limit of 16384 bytes (limits.kluctlArgsMaxBytes)"),
	)

	It("rejects additional Secrets whose data exceed the operator's limit together and keeps the last good deployment", func(ctx SpecContext) {
		// Two Secrets of 150 KiB in the project, which gardenlet copies from spec.resources; together
		// they are over the default limit of 256 KiB.
		for _, name := range []string{"big-a", "big-b"} {
			Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: name},
				Data:       map[string][]byte{"data": bytes.Repeat([]byte("x"), 150<<10)},
			})).To(Succeed())
		}
		Expect(h.UpdateProviderConfig(ctx, []byte(goodConfig))).To(Succeed())
		Expect(h.UpdateShootSpec(ctx, func(spec *gardencorev1beta1.ShootSpec) {
			for _, name := range []string{"big-a", "big-b"} {
				spec.Resources = append(spec.Resources, gardencorev1beta1.NamedResourceReference{
					Name: name, ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: name}})
			}
		})).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		last := snapshotManagedResources(ctx, h)

		Expect(h.UpdateProviderConfig(ctx, []byte(`{"source":{"path":"clusters/good"},"bootstrap":{"kluctl":{"args":{"stage":"good"}}},`+
			`"additionalSecretResources":[{"name":"big-a"},{"name":"big-b"}]}`))).To(Succeed())
		expectConfigurationRejected(ctx, h, last, "additionalSecretResources[1].name: Too long: with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has 307208 bytes, "+
			"more than the operator's limit of 262144 bytes (limits.additionalSecretResourcesMaxBytes)")
	})

	It("rejects a project config.yaml over the operator's limit and keeps the last good deployment", func(ctx SpecContext) {
		Expect(h.UpdateProviderConfig(ctx, []byte(goodConfig))).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		last := snapshotManagedResources(ctx, h)

		Expect(h.Checkpoint(ctx)).To(Succeed())
		big := legacyConfig(publicURL, "main", "public")
		// A comment only: refused for its size (32 KiB by default) without being decoded.
		big["config.yaml"] = "#" + strings.Repeat("x", 40<<10)
		setProjectConfig(ctx, projectNamespace, big)
		expectConfigurationRejected(ctx, h, last, "ConfigMap "+projectNamespace+"/flux-config: config.yaml: Too long: has 40961 bytes, "+
			"more than the operator's limit of 32768 bytes (limits.projectConfigMaxBytes)")

		By("shrinking the ConfigMap")
		Expect(h.Checkpoint(ctx)).To(Succeed())
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
	})

	It("rejects a bad project ConfigMap and keeps the last good deployment", func(ctx SpecContext) {
		Expect(h.UpdateProviderConfig(ctx, []byte(goodConfig))).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshotManagedResources(ctx, h)).To(Equal(good), "the good configuration renders the same objects again")

		Expect(h.Checkpoint(ctx)).To(Succeed())
		bad := legacyConfig(publicURL, "main", "public")
		bad["repositoryType"] = "secret"
		setProjectConfig(ctx, projectNamespace, bad)
		expectRejected(ctx, "repositoryType")

		By("fixing the ConfigMap")
		Expect(h.Checkpoint(ctx)).To(Succeed())
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
	})
})
