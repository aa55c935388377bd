// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Enabling the extension with the legacy project ConfigMap", func() {
	It("bootstraps a public https repository", func(ctx SpecContext) {
		const url = "https://git.example.com/platform/fleet.git"
		project := "legacypub"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(url, "release", "public"))

		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		expectControllers(ctx, h, true)
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "url")).To(Equal(url))
		Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("release"))
		creds, found, err := unstructured.NestedSlice(kd.Object, "spec", "credentials", "git")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeFalse(), "a public repository needs no credentials, got %v", creds)

		_, err = credentials(ctx, h, kluctlNamespace)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no credentials Secret expected, got %v", err)
		Expect(deployKeys(ctx, projectNamespace)).To(BeNil())

		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(fluxVersion))
		Expect(status.Repository).To(Equal(url))
		Expect(status.PublicKey).To(BeEmpty())
	})

	It("bootstraps a private ssh repository with a generated deploy key", Label(labelDeployed), func(ctx SpecContext) {
		project := "legacypriv"
		projectNamespace := newProject(ctx, project)
		url := git.URL(repoName)
		setProjectConfig(ctx, projectNamespace, legacyConfig(url, "main", "private"))

		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})

		expectControllers(ctx, h, true)
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "url")).To(Equal(url))
		Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("main"))
		creds, _, err := unstructured.NestedSlice(kd.Object, "spec", "credentials", "git")
		Expect(err).NotTo(HaveOccurred())
		Expect(creds).To(ConsistOf(HaveKeyWithValue("secretRef", HaveKeyWithValue("name", constants.GitCredentialsSecretName))))

		keySecret, keys := deployKeys(ctx, projectNamespace)
		Expect(keySecret.Labels).To(HaveKeyWithValue(constants.LabelManagedBy, constants.ExtensionName))
		Expect(keys).To(HaveLen(1))
		deployKey := keys[0]
		repository, err := helper.ParseGitURL(url)
		Expect(err).NotTo(HaveOccurred())
		Expect(deployKey.Name).To(Equal(deploykey.KeyName(deploykey.ScopeRepository, "", repository.Repository())))
		Expect(deployKey.Repository).To(Equal(repository.Repository()))
		Expect(deployKey.Identity).NotTo(BeEmpty())
		Expect(deployKey.Pub).NotTo(BeEmpty())

		secret, err := credentials(ctx, h, kluctlNamespace)
		Expect(err).NotTo(HaveOccurred())
		Expect(secret.Data[constants.SecretKeyIdentity]).To(Equal(deployKey.Identity))
		Expect(string(secret.Data[constants.SecretKeyKnownHosts])).To(ContainSubstring(git.KnownHostsLine()),
			"the scanned host key of the git server must be trusted")

		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.PublicKey).NotTo(BeEmpty())
		Expect(strings.TrimSpace(status.PublicKey)).To(Equal(strings.TrimSpace(deployKey.Pub)))
		Expect(status.Fingerprint).To(HavePrefix("SHA256:"))
		Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
		Expect(status.DeployKey).To(Equal(deployKey.Name))

		expectNoPrivateKey(ctx, h, deployKey.Identity)
	})
})

// expectNoPrivateKey checks that the private key appears nowhere in the Extension, its status or
// the events of the seed namespace.
func expectNoPrivateKey(ctx SpecContext, h *sandbox.ShootHandle, identity []byte) {
	GinkgoHelper()
	private := strings.TrimSpace(string(identity))
	Expect(private).To(ContainSubstring("PRIVATE KEY"))
	fragments := privateKeyFragments(private)
	Expect(fragments).NotTo(BeEmpty())

	ex, err := h.Extension(ctx)
	Expect(err).NotTo(HaveOccurred())
	events := &corev1.EventList{}
	Expect(sb.Seed.Client.List(ctx, events)).To(Succeed())
	for _, dump := range []string{string(mustJSON(ex)), string(mustJSON(events))} {
		Expect(dump).NotTo(ContainSubstring("PRIVATE KEY"))
		for _, f := range fragments {
			Expect(dump).NotTo(ContainSubstring(f))
		}
	}
}

// privateKeyFragments returns the full base64 lines of a PEM key except the first, which is a
// header common to all keys of a type; the others hold the key material.
func privateKeyFragments(pem string) []string {
	var out []string
	lines := strings.Split(pem, "\n")
	for i, l := range lines {
		if i < 2 || strings.HasPrefix(l, "-----") || len(l) < 40 {
			continue
		}
		out = append(out, l)
	}
	return out
}
