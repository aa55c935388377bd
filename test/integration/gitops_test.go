// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// The Flux source-controller runs as a process against the shoot's API server and fetches from the
// suite's SSH git server, which only accepts the deploy key the extension generated. This proves
// that the delivered URL, credentials and known_hosts work for a real GitOps controller.
var _ = Describe("GitOps with the Flux source-controller", func() {
	It("fetches the repository in bootstrap mode flux", func(ctx SpecContext) {
		project := "gitopsflux"
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
		project := "gitopsklct"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), gitserver.Branch, "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		registerDeployKey(ctx, h)
		sc := startSourceController(ctx, h)

		// This shoot runs no controllers (the kluctl controller's scenarios are in kluctl_test.go);
		// a GitRepository with the credentials the KluctlDeployment references shows that they open
		// the repository for another client as well.
		createGitRepository(ctx, h, kluctlNamespace, "kluctl-credentials-check", git.URL(repoName), constants.GitCredentialsSecretName)
		expectFetched(ctx, h, sc, kluctlNamespace, "kluctl-credentials-check")
	})
})

// With the shoot's kubelet stand-in (ShootSpec.RunControllers) the delivered Deployments run as
// delivered: the controllers' args and env, authenticated as their ServiceAccounts, so the
// delivered RBAC is what they act with. This proves what no other scenario does: that the
// delivered controllers reconcile the delivered bootstrap objects into the shoot, that the
// extension's health check reads what they report, and that removing the extension ends them
// after they finalized the bootstrap objects, keeping what the repository deployed.
var _ = Describe("GitOps with the delivered Flux controllers running", func() {
	// fluxFinalizer is what the Flux controllers put on the objects they reconcile.
	const fluxFinalizer = "finalizers.fluxcd.io"

	It("deploys the repository in bootstrap mode flux", func(ctx SpecContext) {
		project := "gitopsrun"
		newProject(ctx, project)
		providerConfig := func(components ...string) []byte {
			return fluxModeConfig(repoName, "configmap", components...)
		}
		h := createShootSucceeded(ctx, sandbox.ShootSpec{
			Project:        project,
			Name:           "one",
			RunControllers: true,
			ProviderConfig: providerConfig("source-controller", "kustomize-controller"),
		})
		registerDeployKey(ctx, h)
		logs := func() string { return "controller logs:\n" + h.ControllerLogs() }

		By("waiting for the delivered controllers to become available")
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("waiting for the controllers to reconcile the bootstrap objects")
		Eventually(func(g Gomega) {
			fluxBootstrapReady(g, ctx, h)
			repo, err := shootObject(ctx, h, gitRepositoryGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(repo, "status", "artifact", "revision")).To(ContainSubstring(gitCommit))
			ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, constants.BootstrapName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(ks, "status", "lastAppliedRevision")).To(ContainSubstring(gitCommit))
			// Removing the extension below has to wait for the controllers' finalization.
			g.Expect(repo.GetFinalizers()).To(ContainElement(fluxFinalizer))
			g.Expect(ks.GetFinalizers()).To(ContainElement(fluxFinalizer))
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)

		By("checking the repository's objects in the shoot")
		cm := &corev1.ConfigMap{}
		Expect(get(ctx, h.Shoot.Client, cm, gitserver.ConfigMapNamespace, gitserver.ConfigMapName)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("revision", "initial"))
		// kustomize-controller labels what it applies with its Kustomization.
		Expect(cm.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", constants.BootstrapName))
		Expect(cm.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/namespace", fluxNamespace))

		By("waiting for the health check to report what the controllers reported")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")
		expectLastAppliedRevision(ctx, h, "main@sha1:"+gitCommit)

		By("adding helm-controller")
		before := h.Controllers()
		Expect(h.UpdateProviderConfig(ctx, providerConfig("source-controller", "kustomize-controller", "helm-controller"))).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller", "helm-controller")
		// The other Deployments did not change, so their processes were neither restarted nor
		// replaced.
		after := h.Controllers()
		for _, c := range before {
			Expect(after).To(ContainElement(c), logs)
		}
		for _, c := range after {
			Expect(c.Restarts).To(BeZero(), "%s restarted\n%s", c.Component, logs())
		}

		By("removing the extension")
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		Eventually(h.Controllers).WithTimeout(shootTimeout).Should(BeEmpty(), logs)
		// The Kustomization's deletionPolicy Orphan keeps the repository's objects, which
		// kustomize-controller had to honour while it finalized the Kustomization.
		Expect(get(ctx, h.Shoot.Client, &corev1.ConfigMap{}, gitserver.ConfigMapNamespace, gitserver.ConfigMapName)).To(Succeed())
		// Gone, and with them their CRDs where disabling removes those.
		for _, gvk := range []schema.GroupVersionKind{gitRepositoryGVK, kustomizationGVK} {
			_, err := shootObject(ctx, h, gvk, fluxNamespace, constants.BootstrapName)
			Expect(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)).To(BeTrue(), "the %s is still there: %v", gvk.Kind, err)
		}
	})
})

// fluxModeConfig is the providerConfig of a shoot in bootstrap mode flux on a repository of the
// suite's git server, with the given Flux components and without kluctl.
func fluxModeConfig(repo, path string, components ...string) []byte {
	return mustJSON(map[string]any{
		"source": map[string]any{
			"url":        git.URL(repo),
			"ref":        map[string]any{"branch": gitserver.Branch},
			"path":       path,
			"knownHosts": git.KnownHostsLine(),
		},
		"bootstrap": map[string]any{"mode": "flux"},
		"kluctl":    map[string]any{"enabled": false},
		"flux":      map[string]any{"components": components},
	})
}

// expectAvailable waits until the shoot's kubelet stand-in runs the named Flux controllers and
// reports their Deployments available, in a state gardener's health check accepts.
func expectAvailable(ctx context.Context, h *sandbox.ShootHandle, logs func() string, names ...string) {
	GinkgoHelper()
	deployments := map[types.NamespacedName]string{}
	for _, name := range names {
		deployments[types.NamespacedName{Namespace: fluxNamespace, Name: name}] = name
	}
	expectDeploymentsAvailable(ctx, h, logs, deployments)
}

// expectDeploymentsAvailable waits until the shoot's kubelet stand-in runs exactly the given
// Deployments' controllers (Deployment → component, e.g. kluctl-system/kluctl-controller →
// kluctl) and reports the Deployments available, in a state gardener's health check accepts.
func expectDeploymentsAvailable(ctx context.Context, h *sandbox.ShootHandle, logs func() string, deployments map[types.NamespacedName]string) {
	GinkgoHelper()
	var components []string
	for _, component := range deployments {
		components = append(components, component)
	}
	Eventually(func(g Gomega) {
		for key := range deployments {
			d := &appsv1.Deployment{}
			g.Expect(get(ctx, h.Shoot.Client, d, key.Namespace, key.Name)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)), "available replicas of %s", key)
			g.Expect(health.CheckDeployment(d)).To(Succeed())
		}
		g.Expect(runningComponents(h)).To(ConsistOf(components))
	}).WithTimeout(controllersTimeout).Should(Succeed(), logs)
}

// runningComponents lists the components of the controllers the shoot's kubelet stand-in runs
// and reports ready.
func runningComponents(h *sandbox.ShootHandle) []string {
	var running []string
	for _, c := range h.Controllers() {
		if c.Running && c.Ready {
			running = append(running, c.Component)
		}
	}
	return running
}

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

func startSourceController(ctx context.Context, h *sandbox.ShootHandle) *kubelet.SourceController {
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
	return readyConditionOf(g, ctx, h, gitRepositoryGVK, namespace, name)
}

// fluxBootstrapReady expects the bootstrap GitRepository and Kustomization Ready.
func fluxBootstrapReady(g Gomega, ctx context.Context, h *sandbox.ShootHandle) {
	for _, gvk := range []schema.GroupVersionKind{gitRepositoryGVK, kustomizationGVK} {
		ready := readyConditionOf(g, ctx, h, gvk, fluxNamespace, constants.BootstrapName)
		g.Expect(ready["status"]).To(Equal("True"), "Ready condition of the %s: %v", gvk.Kind, ready)
	}
}

// readyConditionOf returns the Ready condition of a Flux object.
func readyConditionOf(g Gomega, ctx context.Context, h *sandbox.ShootHandle, gvk schema.GroupVersionKind, namespace, name string) map[string]any {
	obj, err := shootObject(ctx, h, gvk, namespace, name)
	g.Expect(err).NotTo(HaveOccurred())
	conditions, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
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
func expectFetched(ctx context.Context, h *sandbox.ShootHandle, sc *kubelet.SourceController, namespace, name string) {
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
