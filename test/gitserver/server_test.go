// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
)

var _ = Describe("NewKluctlProjectRepo", func() {
	It("creates the same commit every time", func() {
		first, err := gitserver.NewKluctlProjectRepo(filepath.Join(GinkgoT().TempDir(), "a"))
		Expect(err).NotTo(HaveOccurred())
		second, err := gitserver.NewKluctlProjectRepo(filepath.Join(GinkgoT().TempDir(), "b"))
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(MatchRegexp("^[0-9a-f]{40}$"))
		Expect(second).To(Equal(first))
	})

	It("commits a kluctl project on main", func() {
		dir := filepath.Join(GinkgoT().TempDir(), "project")
		commit, err := gitserver.NewKluctlProjectRepo(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(git(dir, "rev-parse", "refs/heads/main")).To(Equal(commit))
		Expect(git(dir, "ls-tree", "-r", "--name-only", "HEAD")).To(Equal(strings.Join([]string{
			".kluctl.yaml", "configmap/configmap.yaml", "configmap/kustomization.yaml", "deployment.yaml",
		}, "\n")))
		Expect(git(dir, "show", "HEAD:.kluctl.yaml")).To(ContainSubstring("- name: default"))
		Expect(git(dir, "show", "HEAD:deployment.yaml")).To(ContainSubstring("- path: configmap"))
		Expect(git(dir, "show", "HEAD:configmap/configmap.yaml")).To(ContainSubstring("name: shoot-flux-e2e"))
		Expect(git(dir, "status", "--porcelain")).To(BeEmpty())

		next, err := gitserver.CommitFile(dir, gitserver.ConfigMapPath, []byte(gitserver.ConfigMapManifest("second")), "Change revision")
		Expect(err).NotTo(HaveOccurred())
		Expect(next).NotTo(Equal(commit))
		Expect(git(dir, "rev-parse", "HEAD~1")).To(Equal(commit))
		Expect(git(dir, "show", "HEAD:"+gitserver.ConfigMapPath)).To(ContainSubstring(`revision: "second"`))
	})
})

var _ = Describe("Server", func() {
	var (
		root    string
		commit  string
		client  *sshkey.KeyPair
		other   *sshkey.KeyPair
		server  *gitserver.Server
		options gitserver.Options
	)

	BeforeEach(func() {
		root = GinkgoT().TempDir()
		var err error
		commit, err = gitserver.NewKluctlProjectRepo(filepath.Join(root, "project"))
		Expect(err).NotTo(HaveOccurred())
		client, err = sshkey.Generate(sshkey.AlgorithmED25519, "client")
		Expect(err).NotTo(HaveOccurred())
		other, err = sshkey.Generate(sshkey.AlgorithmED25519, "other")
		Expect(err).NotTo(HaveOccurred())
		options = gitserver.Options{AuthorizedKeys: []string{client.AuthorizedKey}, RepoRoot: root}
	})

	JustBeforeEach(func() {
		var err error
		server, err = gitserver.Start(options)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
	})

	It("describes where it listens", func() {
		Expect(server.Addr()).To(HavePrefix("127.0.0.1:"))
		Expect(server.Port()).To(BeNumerically(">", 0))
		port := strings.TrimPrefix(server.Addr(), "127.0.0.1:")
		Expect(server.URL("project")).To(Equal("ssh://git@127.0.0.1:" + port + "/project"))
		Expect(server.URL("/project")).To(Equal(server.URL("project")))
		Expect(server.KnownHostsLine()).To(HavePrefix("[127.0.0.1]:" + port + " ssh-ed25519 "))
		Expect(sshkey.KnownHostsContains([]byte(server.KnownHostsLine()), server.Addr())).To(BeTrue())
	})

	It("advertises the repository's refs to an authorized key", func() {
		out, stderr, err := uploadPack(server, client, "git-upload-pack '/project'")
		Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
		Expect(out).To(ContainSubstring(commit + " refs/heads/main"))
		Expect(server.AcceptedAuths()).To(BeEquivalentTo(1))
		Expect(server.UploadPacks()).To(BeEquivalentTo(1))
	})

	It("rejects other keys", func() {
		_, _, err := uploadPack(server, other, "git-upload-pack '/project'")
		Expect(err).To(MatchError(ContainSubstring("unable to authenticate")))
		Expect(server.AcceptedAuths()).To(BeZero())
		Expect(server.RejectedAuths()).To(BeNumerically(">=", 1))
		Expect(server.UploadPacks()).To(BeZero())
	})

	It("follows changes of the authorized keys", func() {
		Expect(server.AddAuthorizedKey(other.AuthorizedKey)).To(Succeed())
		_, _, err := uploadPack(server, other, "git-upload-pack '/project'")
		Expect(err).NotTo(HaveOccurred())

		Expect(server.SetAuthorizedKeys([]string{other.AuthorizedKey})).To(Succeed())
		_, _, err = uploadPack(server, client, "git-upload-pack '/project'")
		Expect(err).To(MatchError(ContainSubstring("unable to authenticate")))
		Expect(server.AddAuthorizedKey("not a key")).To(MatchError(ContainSubstring("invalid authorized key")))
	})

	DescribeTable("refuses commands it does not serve",
		func(command, wantStderr string) {
			_, stderr, err := uploadPack(server, client, command)
			var exitErr *ssh.ExitError
			Expect(errors.As(err, &exitErr)).To(BeTrue(), "got %v", err)
			Expect(exitErr.ExitStatus()).To(Equal(128))
			Expect(stderr).To(ContainSubstring(wantStderr))
		},
		Entry("push", "git-receive-pack '/project'", "only git-upload-pack is served"),
		Entry("shell command", "sh -c id", "only git-upload-pack is served"),
		Entry("missing repository", "git-upload-pack '/nope'", `repository "/nope" not found`),
		Entry("path outside the root", "git-upload-pack '/../../etc'", "not found"),
		Entry("unquoted metacharacters", "git-upload-pack /project;id", "unsupported repository argument"),
	)

	It("stays inside the root for paths with ..", func() {
		_, stderr, err := uploadPack(server, client, "git-upload-pack '/../"+filepath.Base(root)+"/project'")
		// The path resolves to root/<base of root>/project, which does not exist.
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("not found"))
	})

	It("refuses to start without a repository root", func() {
		_, err := gitserver.Start(gitserver.Options{RepoRoot: filepath.Join(root, "missing")})
		Expect(err).To(MatchError(ContainSubstring("is not a directory")))
		_, err = gitserver.Start(gitserver.Options{RepoRoot: root, AuthorizedKeys: []string{"garbage"}})
		Expect(err).To(MatchError(ContainSubstring("invalid authorized key")))
	})

	It("stops accepting connections when closed", func() {
		Expect(server.Close()).To(Succeed())
		_, _, err := uploadPack(server, client, "git-upload-pack '/project'")
		Expect(err).To(MatchError(ContainSubstring("connection refused")))
		Expect(server.Close()).To(Succeed())
	})

	Context("with the git and OpenSSH clients", func() {
		var (
			work       string
			keyFile    string
			knownHosts string
		)

		BeforeEach(func() {
			if _, err := exec.LookPath("ssh"); err != nil {
				Fail("the OpenSSH client (Debian openssh-client) is needed for this test")
			}
			work = GinkgoT().TempDir()
			keyFile = filepath.Join(work, "id")
			Expect(os.WriteFile(keyFile, client.PrivateKey, 0o600)).To(Succeed())
			knownHosts = filepath.Join(work, "known_hosts")
		})

		JustBeforeEach(func() {
			Expect(os.WriteFile(knownHosts, []byte(server.KnownHostsLine()+"\n"), 0o600)).To(Succeed())
		})

		It("clones with the authorized key and the server's host key", func() {
			out, err := clone(server.URL("project"), filepath.Join(work, "clone"), keyFile, knownHosts)
			Expect(err).NotTo(HaveOccurred(), out)
			Expect(git(filepath.Join(work, "clone"), "rev-parse", "HEAD")).To(Equal(commit))
			Expect(os.ReadFile(filepath.Join(work, "clone", ".kluctl.yaml"))).To(ContainSubstring("name: default"))
			Expect(server.UploadPacks()).To(BeEquivalentTo(1))

			By("fetching a commit pushed later")
			next, err := gitserver.CommitFile(filepath.Join(root, "project"), gitserver.ConfigMapPath,
				[]byte(gitserver.ConfigMapManifest("second")), "Change revision")
			Expect(err).NotTo(HaveOccurred())
			cmd := exec.Command("git", "-C", filepath.Join(work, "clone"), "pull", "--ff-only", "--quiet")
			cmd.Env = sshEnv(keyFile, knownHosts)
			output, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(output))
			Expect(git(filepath.Join(work, "clone"), "rev-parse", "HEAD")).To(Equal(next))
		})

		It("refuses another key", func() {
			Expect(os.WriteFile(keyFile, other.PrivateKey, 0o600)).To(Succeed())
			out, err := clone(server.URL("project"), filepath.Join(work, "clone"), keyFile, knownHosts)
			Expect(err).To(HaveOccurred())
			Expect(out).To(ContainSubstring("Permission denied (publickey)"))
			Expect(server.RejectedAuths()).To(BeNumerically(">=", 1))
		})

		It("fails the host key check of another server", func() {
			impostor, err := gitserver.Start(options)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(impostor.Close)

			// The known_hosts entry of the first server, moved to the port of the second.
			moved := strings.Replace(server.KnownHostsLine(), server.Addr()[len("127.0.0.1:"):], impostor.Addr()[len("127.0.0.1:"):], 1)
			Expect(os.WriteFile(knownHosts, []byte(moved+"\n"), 0o600)).To(Succeed())
			out, err := clone(impostor.URL("project"), filepath.Join(work, "clone"), keyFile, knownHosts)
			Expect(err).To(HaveOccurred())
			Expect(out).To(ContainSubstring("Host key verification failed"))
			Expect(impostor.AcceptedAuths()).To(BeZero())
		})
	})
})

// uploadPack runs command on the server with the golang.org/x/crypto/ssh client, sends a
// flush packet so upload-pack ends after its ref advertisement, and returns its output.
func uploadPack(server *gitserver.Server, key *sshkey.KeyPair, command string) (string, string, error) {
	signer, err := sshkey.ParsePrivateKey(key.PrivateKey, sshkey.DefaultPrivateKeyLimits())
	Expect(err).NotTo(HaveOccurred())
	callback, err := sshkey.VerifyHostKeyCallback([]byte(server.KnownHostsLine()))
	Expect(err).NotTo(HaveOccurred())
	conn, err := ssh.Dial("tcp", server.Addr(), &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: callback,
	})
	if err != nil {
		return "", "", err
	}
	defer func() { _ = conn.Close() }()
	session, err := conn.NewSession()
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = session.Close() }()
	var stdout, stderr bytes.Buffer
	session.Stdout, session.Stderr = &stdout, &stderr
	session.Stdin = strings.NewReader("0000")
	err = session.Run(command)
	return stdout.String(), stderr.String(), err
}

func sshEnv(keyFile, knownHosts string) []string {
	return append(os.Environ(),
		"GIT_SSH_COMMAND=ssh -F /dev/null -i "+keyFile+" -o IdentitiesOnly=yes -o IdentityAgent=none"+
			" -o BatchMode=yes -o UserKnownHostsFile="+knownHosts+" -o GlobalKnownHostsFile=/dev/null"+
			" -o StrictHostKeyChecking=yes",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
	)
}

func clone(url, dir, keyFile, knownHosts string) (string, error) {
	cmd := exec.Command("git", "clone", "--quiet", url, dir)
	cmd.Env = sshEnv(keyFile, knownHosts)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func git(dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), string(out))
	return strings.TrimSpace(string(out))
}
