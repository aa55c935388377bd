// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
)

var _ = Describe("HTTPSServer", func() {
	var (
		root, caFile string
		commit       string
		server       *gitserver.HTTPSServer
	)

	BeforeEach(func() {
		root = GinkgoT().TempDir()
		var err error
		commit, err = gitserver.NewRepoOnBranch(filepath.Join(root, "example", "app"), "master",
			map[string]string{"deploy/kustomization.yaml": "resources: []\n"}, "Add app")
		Expect(err).NotTo(HaveOccurred())
		server, err = gitserver.StartHTTPS(root, "github.com")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		caFile = filepath.Join(GinkgoT().TempDir(), "ca.crt")
		Expect(os.WriteFile(caFile, server.CAPEM(), 0o600)).To(Succeed())
	})

	// gitVia runs the git CLI with the server as its HTTPS proxy and its authority trusted, and
	// nothing else of the machine's configuration.
	gitVia := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_TERMINAL_PROMPT=0",
			"https_proxy=" + server.ProxyURL(), "GIT_SSL_CAINFO=" + caFile,
		}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}

	It("serves a clone of the host's repository through its proxy", func() {
		dir := GinkgoT().TempDir()
		Expect(server.URL("github.com", "example/app")).To(Equal("https://github.com/example/app"))
		out, err := gitVia(dir, "clone", "--quiet", "--branch", "master", server.URL("github.com", "example/app"), "clone")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(git(filepath.Join(dir, "clone"), "rev-parse", "HEAD")).To(Equal(commit))
		Expect(server.UploadPackRequests()).To(BeNumerically(">=", 1))
	})

	It("refuses pushes", func() {
		dir := GinkgoT().TempDir()
		out, err := gitVia(dir, "clone", "--quiet", server.URL("github.com", "example/app"), "clone")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = gitVia(filepath.Join(dir, "clone"), "push", "origin", "HEAD:refs/heads/other")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("403"))
	})

	It("refuses other hosts at the proxy, as an egress policy would", func() {
		out, err := gitVia(GinkgoT().TempDir(), "ls-remote", "https://gitlab.com/example/app")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("403"))
		Expect(server.RefusedHosts()).To(BeEquivalentTo(1))
	})

	It("is not trusted without its authority", func() {
		proxy, err := url.Parse(server.ProxyURL())
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
		_, err = client.Get(server.URL("github.com", "example/app") + "/info/refs?service=git-upload-pack")
		Expect(err).To(MatchError(ContainSubstring("certificate")))
	})
})
