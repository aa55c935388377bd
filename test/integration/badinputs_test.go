package integration

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
	)

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
