// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// sourceControllerTimeout bounds how long the source-controller may take to fetch.
var sourceControllerTimeout = 3 * time.Minute

// Flux's git client is go-git over golang.org/x/crypto/ssh, not the git CLI, so this proves the
// server, the generated deploy keys and the scanned known_hosts work for the real consumer.
var _ = Describe("Server with the Flux source-controller", Ordered, func() {
	var (
		ctx    context.Context
		c      client.Client
		server *gitserver.Server
		commit string
		key    *sshkey.KeyPair
	)

	BeforeAll(func() {
		// cluster.Start requires KUBEBUILDER_ASSETS.
		if os.Getenv(kubelet.FluxControllersEnv) == "" {
			Fail("needs " + kubelet.FluxControllersEnv + " (hack/build-flux-controllers.sh); run it with make test-integration")
		}
		binaries, err := kubelet.ParseControllers(kubelet.FluxControllersEnv, os.Getenv(kubelet.FluxControllersEnv))
		Expect(err).NotTo(HaveOccurred())
		binary, err := kubelet.NewestSourceController(binaries)
		Expect(err).NotTo(HaveOccurred())
		ctx = context.Background()

		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(sourcev1.AddToScheme(scheme)).To(Succeed())
		api, err := cluster.Start("source-controller", scheme, []string{filepath.Join(filepath.Dir(binary), "crd")}, cluster.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(api.Stop)
		c = api.Client

		work := GinkgoT().TempDir()
		kubeconfigFile := filepath.Join(work, "kubeconfig")
		Expect(api.WriteUserKubeconfig(kubeconfigFile, "source-controller", "system:masters")).To(Succeed())
		storage := filepath.Join(work, "storage")
		Expect(os.Mkdir(storage, 0o755)).To(Succeed())

		cmd := exec.Command(binary,
			"--storage-path="+storage,
			"--storage-addr=127.0.0.1:0",
			"--storage-adv-addr=127.0.0.1",
			"--metrics-addr=0",
			"--health-addr=0",
			"--watch-all-namespaces=true",
			"--log-encoding=console",
		)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigFile, "RUNTIME_NAMESPACE=default")
		session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			session.Signal(syscall.SIGTERM)
			Eventually(session).WithTimeout(30 * time.Second).Should(gexec.Exit())
		})

		root := GinkgoT().TempDir()
		commit, err = gitserver.NewKluctlProjectRepo(filepath.Join(root, "project"))
		Expect(err).NotTo(HaveOccurred())
		key, err = sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux test")
		Expect(err).NotTo(HaveOccurred())
		server, err = gitserver.Start(gitserver.Options{AuthorizedKeys: []string{key.AuthorizedKey}, RepoRoot: root})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
	})

	createGitRepository := func(name string, knownHosts []byte) *sourcev1.GitRepository {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Data: map[string][]byte{
				constants.SecretKeyIdentity:    key.PrivateKey,
				constants.SecretKeyIdentityPub: []byte(key.AuthorizedKey),
				constants.SecretKeyKnownHosts:  knownHosts,
			},
		}
		Expect(c.Create(ctx, secret)).To(Succeed())
		repo := &sourcev1.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: sourcev1.GitRepositorySpec{
				URL:       server.URL("project"),
				Reference: &sourcev1.GitRepositoryRef{Branch: gitserver.Branch},
				SecretRef: &meta.LocalObjectReference{Name: name},
				Interval:  metav1.Duration{Duration: time.Minute},
				Timeout:   &metav1.Duration{Duration: 20 * time.Second},
			},
		}
		Expect(c.Create(ctx, repo)).To(Succeed())
		return repo
	}

	readyCondition := func(repo *sourcev1.GitRepository) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
			return apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
		}
	}

	It("fetches with a deploy key and a scanned host key", func() {
		knownHosts, err := sshkey.ScanHostKey(ctx, server.Addr(), 10*time.Second)
		Expect(err).NotTo(HaveOccurred())
		repo := createGitRepository("scanned", knownHosts)

		Eventually(readyCondition(repo)).WithTimeout(sourceControllerTimeout).WithPolling(time.Second).Should(
			And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue)))
		Expect(repo.Status.Artifact).NotTo(BeNil())
		Expect(repo.Status.Artifact.Revision).To(Equal(gitserver.Branch + "@sha1:" + commit))
		Expect(server.UploadPacks()).To(BeNumerically(">=", 1))
	})

	It("refuses a server whose host key does not match", func() {
		other, err := gitserver.Start(gitserver.Options{RepoRoot: GinkgoT().TempDir()})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(other.Close)
		// The other server's key, recorded for this server's address.
		otherKey := sshkey.AuthorizedKey(other.HostKey(), "")
		host, port := sshkey.SplitHostPort(server.Addr())
		knownHosts := []byte(sshkey.KnownHostsAddress(host, port) + " " + otherKey)

		uploads := server.UploadPacks()
		repo := createGitRepository("mismatch", knownHosts)
		Eventually(readyCondition(repo)).WithTimeout(sourceControllerTimeout).WithPolling(time.Second).Should(
			And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("knownhosts"))))
		Expect(repo.Status.Artifact).To(BeNil())
		Expect(server.UploadPacks()).To(Equal(uploads))
	})
})
