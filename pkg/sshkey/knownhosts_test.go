package sshkey_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("known_hosts matching in memory", func() {
	var key, other ssh.PublicKey

	BeforeEach(func() {
		key = newHostKey("ed25519").PublicKey()
		other = newHostKey("ecdsa").PublicKey()
	})

	// The extension runs on a read-only root file system: nothing may be written to TMPDIR.
	It("works when TMPDIR cannot be written", func() {
		readOnly := filepath.Join(GinkgoT().TempDir(), "missing")
		GinkgoT().Setenv("TMPDIR", readOnly)
		_, err := os.MkdirTemp("", "probe-")
		Expect(err).To(HaveOccurred(), "the test needs a TMPDIR that cannot be written")

		data := []byte(knownhosts.Line([]string{"github.com"}, key) + "\n")
		Expect(sshkey.KnownHostsContains(data, "github.com:22")).To(BeTrue())
		callback, err := sshkey.VerifyHostKeyCallback(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(callback("github.com:22", nil, key)).To(Succeed())
	})

	DescribeTable("KnownHostsContains follows OpenSSH's patterns",
		func(patterns, hostPort string, want bool) {
			data := []byte(patterns + " " + lineKey(key) + "\n")
			Expect(sshkey.KnownHostsContains(data, hostPort)).To(Equal(want))
		},
		Entry("question mark", "git?.example.org", "git1.example.org", true),
		Entry("question mark needs one character", "git?.example.org", "git.example.org", false),
		Entry("wildcard with port", "[*.example.org]:2222", "git.example.org:2222", true),
		Entry("wildcard with port, other port", "[*.example.org]:2222", "git.example.org:22", false),
		Entry("default port written out", "[github.com]:22", "github.com:22", true),
		Entry("IPv6 with port", "[::1]:2222", "[::1]:2222", true),
		Entry("IPv6 default port", "::1", "[::1]:22", true),
		Entry("negation wins regardless of order", "!git.example.org,*.example.org", "git.example.org", false),
		Entry("star matches the empty string", "git*.example.org", "git.example.org", true),
		Entry("upper-case pattern", "GitHub.COM", "github.com", true),
		Entry("hashed host with port", knownhosts.HashHostname("[git.example.org]:2222"), "git.example.org:2222", true),
		Entry("hashed host, other port", knownhosts.HashHostname("[git.example.org]:2222"), "git.example.org:22", false),
	)

	It("does not count @cert-authority or @revoked lines as entries", func() {
		data := []byte("@cert-authority *.example.org " + lineKey(key) + "\n@revoked git.example.org " + lineKey(other) + "\n")
		Expect(sshkey.KnownHostsContains(data, "git.example.org")).To(BeFalse())
	})

	It("verifies like x/crypto's knownhosts", func() {
		dir := GinkgoT().TempDir()
		data := []byte("# pinned\n" +
			knownhosts.Line([]string{"github.com"}, key) + "\n" +
			"@revoked * " + lineKey(other) + "\n" +
			knownhosts.HashHostname("[git.example.org]:2222") + " " + lineKey(key) + "\n")
		file := filepath.Join(dir, "known_hosts")
		Expect(os.WriteFile(file, data, 0o600)).To(Succeed())
		reference, err := knownhosts.New(file)
		Expect(err).NotTo(HaveOccurred())
		ours, err := sshkey.VerifyHostKeyCallback(data)
		Expect(err).NotTo(HaveOccurred())

		remote := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}
		for _, c := range []struct {
			host string
			key  ssh.PublicKey
		}{
			{"github.com:22", key}, {"github.com:22", other}, {"gitlab.com:22", key},
			{"git.example.org:2222", key}, {"git.example.org:22", key}, {"git.example.org:2222", other},
		} {
			want := reference(c.host, remote, c.key)
			got := ours(c.host, remote, c.key)
			Expect(errorKind(got)).To(Equal(errorKind(want)), "host %s", c.host)
		}
	})

	It("names the line of an invalid entry", func() {
		_, err := sshkey.VerifyHostKeyCallback([]byte("# one\n" + knownhosts.Line([]string{"a"}, key) + "\n!," + " " + lineKey(key) + "\n"))
		Expect(err).To(MatchError(ContainSubstring("line 3")))
	})
})

// errorKind reduces a host key callback's answer to what callers act on.
func errorKind(err error) string {
	var keyErr *knownhosts.KeyError
	var revokedErr *knownhosts.RevokedError
	switch {
	case err == nil:
		return "accepted"
	case errors.As(err, &revokedErr):
		return "revoked"
	case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
		return "mismatch"
	case errors.As(err, &keyErr):
		return "unknown"
	default:
		return "other: " + err.Error()
	}
}
