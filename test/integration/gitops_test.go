package integration

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// The Flux source-controller runs as a process against the shoot's API server and fetches from the
// suite's SSH git server, which only accepts the deploy key the extension generated. This proves
// that the delivered URL, credentials and known_hosts work for a real GitOps controller.
var _ = Describe("GitOps with the Flux source-controller", func() {
	It("fetches the repository in bootstrap mode flux", func(ctx SpecContext) {
		project := "gitops-flux"
		newProject(ctx, project)
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", ProviderConfig: mustJSON(map[string]any{
			"source": map[string]any{
				"url":        git.URL(repoName),
				"ref":        map[string]any{"branch": gitserver.Branch},
				"path":       "configmap",
				"knownHosts": git.KnownHostsLine(),
			},
			"bootstrap": map[string]any{"mode": "flux"},
			"flux":      map[string]any{"components": []string{"source-controller", "kustomize-controller"}},
		})})

		By("checking the delivered Flux objects")
		repo, err := shootObject(ctx, h, gitRepositoryGVK, fluxNamespace, constants.BootstrapName)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(repo, "spec", "url")).To(Equal(git.URL(repoName)))
		Expect(nestedString(repo, "spec", "secretRef", "name")).To(Equal(constants.GitCredentialsSecretName))
		ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(ks, "spec", "path")).To(Equal("configmap"))
		Expect(nestedString(ks, "spec", "sourceRef", "name")).To(Equal(constants.BootstrapName))
		secret, err := credentials(ctx, h, fluxNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(secret.Data[constants.SecretKeyKnownHosts])).To(ContainSubstring(git.KnownHostsLine()))

		registerDeployKey(ctx, h)
		sc := startSourceController(ctx, h)

		By("waiting for the delivered GitRepository")
		expectFetched(ctx, h, sc, fluxNamespace, constants.BootstrapName)

		By("checking that a git server with another host key is rejected")
		other, err := gitserver.Start(gitserver.Options{RepoRoot: gitRepoRoot, AuthorizedKeys: []string{authorizedKey(ctx, h)}})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(other.Close)

		// The delivered known_hosts has no entry for the other server's address.
		createGitRepository(ctx, h, fluxNamespace, "unknown-host", other.URL(repoName), constants.GitCredentialsSecretName)
		// Here the entry for the other server's address holds the first server's key.
		mismatch := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "mismatch-credentials"},
			Data: map[string][]byte{
				constants.SecretKeyIdentity:   secret.Data[constants.SecretKeyIdentity],
				constants.SecretKeyKnownHosts: []byte(knownhosts.Line([]string{other.Addr()}, git.HostKey()) + "\n"),
			},
		}
		Expect(h.Shoot.Client.Create(ctx, mismatch)).To(Succeed())
		createGitRepository(ctx, h, fluxNamespace, "mismatched-host-key", other.URL(repoName), mismatch.Name)

		for _, name := range []string{"unknown-host", "mismatched-host-key"} {
			Eventually(func(g Gomega) {
				ready := readyCondition(g, ctx, h, fluxNamespace, name)
				g.Expect(ready["status"]).To(Equal("False"))
				g.Expect(ready["message"]).To(ContainSubstring("knownhosts"))
			}).WithTimeout(gitopsTimeout).Should(Succeed(), func() string { return sc.Logs() })
		}
		Expect(other.UploadPacks()).To(BeZero(), "nothing may be fetched from a server whose host key is not trusted")
	})

	It("delivers credentials a GitRepository can use in bootstrap mode kluctl", func(ctx SpecContext) {
		project := "gitops-kluctl"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), gitserver.Branch, "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		registerDeployKey(ctx, h)
		sc := startSourceController(ctx, h)

		// There is no kluctl controller in the sandbox; a GitRepository with the credentials the
		// KluctlDeployment references shows that they open the repository.
		createGitRepository(ctx, h, kluctlNamespace, "kluctl-credentials-check", git.URL(repoName), constants.GitCredentialsSecretName)
		expectFetched(ctx, h, sc, kluctlNamespace, "kluctl-credentials-check")
	})
})

// authorizedKey returns the public key the extension reports for the shoot.
func authorizedKey(ctx context.Context, h *sandbox.ShootHandle) string {
	GinkgoHelper()
	status, err := h.ProviderStatus(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(status.PublicKey).NotTo(BeEmpty())
	return status.PublicKey
}

// registerDeployKey does what a user does with the reported public key: register it at the git
// server.
func registerDeployKey(ctx context.Context, h *sandbox.ShootHandle) {
	GinkgoHelper()
	Expect(git.AddAuthorizedKey(authorizedKey(ctx, h))).To(Succeed())
}

func startSourceController(ctx context.Context, h *sandbox.ShootHandle) *sandbox.SourceController {
	GinkgoHelper()
	sc, err := h.StartSourceController(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sc.Stop)
	return sc
}

func createGitRepository(ctx context.Context, h *sandbox.ShootHandle, namespace, name, url, secretName string) {
	GinkgoHelper()
	repo := unstructuredObject(gitRepositoryGVK)
	repo.SetNamespace(namespace)
	repo.SetName(name)
	Expect(unstructured.SetNestedMap(repo.Object, map[string]any{
		"url":       url,
		"interval":  "1m",
		"ref":       map[string]any{"branch": gitserver.Branch},
		"secretRef": map[string]any{"name": secretName},
	}, "spec")).To(Succeed())
	Expect(h.Shoot.Client.Create(ctx, repo)).To(Succeed())
}

// readyCondition returns the Ready condition of a GitRepository.
func readyCondition(g Gomega, ctx context.Context, h *sandbox.ShootHandle, namespace, name string) map[string]any {
	repo, err := shootObject(ctx, h, gitRepositoryGVK, namespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	conditions, _, err := unstructured.NestedSlice(repo.Object, "status", "conditions")
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m
		}
	}
	g.Expect(conditions).To(ContainElement(HaveKeyWithValue("type", "Ready")))
	return nil
}

// expectFetched waits until the GitRepository is Ready with an artifact of the served commit.
func expectFetched(ctx context.Context, h *sandbox.ShootHandle, sc *sandbox.SourceController, namespace, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(sc.Exited()).To(BeFalse(), "source-controller exited: %v", sc.ExitErr())
		ready := readyCondition(g, ctx, h, namespace, name)
		g.Expect(ready["status"]).To(Equal("True"), "Ready condition: %v", ready)
		repo, err := shootObject(ctx, h, gitRepositoryGVK, namespace, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nestedString(repo, "status", "artifact", "revision")).To(ContainSubstring(gitCommit))
	}).WithTimeout(gitopsTimeout).Should(Succeed(), func() string { return "source-controller log:\n" + sc.Logs() })
}
