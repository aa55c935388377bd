// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("KnownHostsAddress", func() {
	DescribeTable("formats hosts like known_hosts",
		func(host, port, want string) {
			Expect(sshkey.KnownHostsAddress(host, port)).To(Equal(want))
		},
		Entry("default port", "GitHub.com", "22", "github.com"),
		Entry("no port", "github.com", "", "github.com"),
		Entry("other port", "git.example.org", "2222", "[git.example.org]:2222"),
		Entry("IPv6", "[::1]", "2222", "[::1]:2222"),
		Entry("IPv6 default port", "::1", "22", "::1"),
	)

	DescribeTable("SplitHostPort defaults to port 22",
		func(in, wantHost, wantPort string) {
			host, port := sshkey.SplitHostPort(in)
			Expect(host).To(Equal(wantHost))
			Expect(port).To(Equal(wantPort))
		},
		Entry("host and port", "example.org:2222", "example.org", "2222"),
		Entry("host only", "example.org", "example.org", "22"),
		Entry("bracketed IPv6", "[::1]:22", "::1", "22"),
		Entry("bracketed IPv6 without port", "[::1]", "::1", "22"),
	)
})

var _ = Describe("known_hosts", func() {
	var key ssh.PublicKey

	BeforeEach(func() {
		key = newHostKey("ed25519").PublicKey()
	})

	DescribeTable("KnownHostsContains",
		func(line func(ssh.PublicKey) string, hostPort string, want bool) {
			data := []byte("# comment\n\n" + line(key) + "\n")
			Expect(sshkey.KnownHostsContains(data, hostPort)).To(Equal(want))
		},
		Entry("plain host, default port",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"github.com"}, k) }, "github.com:22", true),
		Entry("plain host, no port given",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"github.com"}, k) }, "github.com", true),
		Entry("host names match case-insensitively",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"github.com"}, k) }, "GitHub.com:22", true),
		Entry("other host",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"github.com"}, k) }, "gitlab.com:22", false),
		Entry("same host, other port",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"github.com"}, k) }, "github.com:2222", false),
		Entry("non-default port",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"[git.example.org]:2222"}, k) }, "git.example.org:2222", true),
		Entry("one of several hosts",
			func(k ssh.PublicKey) string { return knownhosts.Line([]string{"a.example.org", "b.example.org"}, k) }, "b.example.org:22", true),
		Entry("hashed host",
			func(k ssh.PublicKey) string { return knownhosts.HashHostname("github.com") + " " + lineKey(k) }, "github.com:22", true),
		Entry("hashed other host",
			func(k ssh.PublicKey) string { return knownhosts.HashHostname("gitlab.com") + " " + lineKey(k) }, "github.com:22", false),
		Entry("wildcard",
			func(k ssh.PublicKey) string { return "*.example.org " + lineKey(k) }, "git.example.org:22", true),
		Entry("negated pattern",
			func(k ssh.PublicKey) string { return "*.example.org,!git.example.org " + lineKey(k) }, "git.example.org:22", false),
	)

	It("finds nothing in empty or invalid data", func() {
		Expect(sshkey.KnownHostsContains(nil, "github.com:22")).To(BeFalse())
		Expect(sshkey.KnownHostsContains([]byte("github.com ssh-ed25519 notakey\n"), "github.com:22")).To(BeFalse())
	})

	It("validates known_hosts data", func() {
		validate := func(data string) field.ErrorList {
			return sshkey.ValidateKnownHosts(data, sshkey.DefaultKnownHostsLimits(), field.NewPath("known_hosts"))
		}
		Expect(validate("")).To(BeEmpty())
		Expect(validate("# only a comment\n")).To(BeEmpty())
		Expect(validate(knownhosts.Line([]string{"a"}, key) + "\n" + knownhosts.Line([]string{"b"}, key))).To(BeEmpty())
		Expect(validate(knownhosts.Line([]string{"a"}, key) + "\nb ssh-ed25519 AAAA\n").ToAggregate()).To(MatchError(
			`known_hosts: Invalid value: "b ssh-ed25519 AAAA": line 2 is not a known_hosts entry: ssh: short read`))
		// OpenSSH skips such lines, but x/crypto's reader in Flux and kluctl fails on them.
		Expect(validate("github.com\n").ToAggregate()).To(MatchError(ContainSubstring(`line 1 is not a known_hosts entry: expected "[@marker] hosts key-type base64-key [comment]"`)))
		_, err := sshkey.VerifyHostKeyCallback([]byte("github.com ssh-ed25519 AAAA\n"))
		Expect(err).To(MatchError(ContainSubstring("invalid known_hosts data")))
	})
})

var _ = Describe("ScanHostKey", func() {
	var (
		ctx    context.Context
		client ssh.Signer
	)

	BeforeEach(func() {
		ctx = context.Background()
		client = newHostKey("ed25519")
	})

	It("returns a known_hosts line that verifies the server and no other", func() {
		server := startTestServer(client.PublicKey(), newHostKey("ed25519"))
		impostor := startTestServer(client.PublicKey(), newHostKey("ed25519"))

		lines, err := sshkey.ScanHostKey(ctx, server.Addr(), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		host, port := sshkey.SplitHostPort(server.Addr())
		Expect(string(lines)).To(HavePrefix("[127.0.0.1]:" + port + " ssh-ed25519 "))
		Expect(bytes.Count(lines, []byte("\n"))).To(Equal(1))
		Expect(sshkey.KnownHostsContains(lines, server.Addr())).To(BeTrue())
		Expect(sshkey.KnownHostsContains(lines, impostor.Addr())).To(BeFalse())

		callback, err := sshkey.VerifyHostKeyCallback(lines)
		Expect(err).NotTo(HaveOccurred())
		Expect(dial(server.Addr(), client, callback)).To(Succeed())

		By("rejecting a server with another host key at the address of the first")
		conn, err := net.Dial("tcp", impostor.Addr())
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close() }()
		_, _, _, err = ssh.NewClientConn(conn, net.JoinHostPort(host, port), &ssh.ClientConfig{
			User:            "git",
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(client)},
			HostKeyCallback: callback,
		})
		var keyErr *knownhosts.KeyError
		Expect(errors.As(err, &keyErr)).To(BeTrue(), "got %v", err)
		Expect(keyErr.Want).NotTo(BeEmpty(), "the key of the first server is known, but does not match")

		By("rejecting an unknown server")
		Expect(dial(impostor.Addr(), client, callback)).To(MatchError(ContainSubstring("knownhosts: key is unknown")))
	})

	It("collects one key of every type the server has", func() {
		rsaKey, ecdsaKey, edKey := newHostKey("rsa"), newHostKey("ecdsa"), newHostKey("ed25519")
		server := startTestServer(client.PublicKey(), rsaKey, ecdsaKey, edKey)

		lines, err := sshkey.ScanHostKey(ctx, server.Addr(), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Split(strings.TrimSpace(string(lines)), "\n")).To(ConsistOf(
			ContainSubstring(" ssh-ed25519 "),
			ContainSubstring(" ecdsa-sha2-nistp256 "),
			ContainSubstring(" ssh-rsa "),
		))

		callback, err := sshkey.VerifyHostKeyCallback(lines)
		Expect(err).NotTo(HaveOccurred())
		for _, alg := range []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA256} {
			Expect(dial(server.Addr(), client, callback, alg)).To(Succeed(), "host key algorithm %s", alg)
		}
	})

	It("scans servers with only an RSA host key", func() {
		server := startTestServer(client.PublicKey(), newHostKey("rsa"))
		lines, err := sshkey.ScanHostKey(ctx, server.Addr(), 5*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(lines)).To(ContainSubstring(" ssh-rsa "))
		Expect(bytes.Count(lines, []byte("\n"))).To(Equal(1))
	})

	It("fails for a closed port", func() {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := listener.Addr().String()
		Expect(listener.Close()).To(Succeed())

		_, err = sshkey.ScanHostKey(ctx, addr, time.Minute)
		Expect(err).To(MatchError(ContainSubstring("connection refused")))
	})

	It("gives up on a server that never speaks SSH within the timeout", func() {
		addr := silentListener()

		done := make(chan error, 1)
		go func() {
			_, err := sshkey.ScanHostKey(ctx, addr, 300*time.Millisecond)
			done <- err
		}()
		Eventually(done).WithTimeout(20 * time.Second).Should(Receive(MatchError(ContainSubstring("i/o timeout"))))
	})

	It("stops when the context is cancelled", func() {
		addr := silentListener()

		cancelCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := sshkey.ScanHostKey(cancelCtx, addr, time.Hour)
			done <- err
		}()
		Consistently(done).WithTimeout(200 * time.Millisecond).ShouldNot(Receive())
		cancel()
		Eventually(done).WithTimeout(20 * time.Second).Should(Receive(HaveOccurred()))
	})

	It("fails for a server that speaks another protocol", func() {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(listener.Close)
		go func() {
			for {
				conn, err := listener.Accept()
				if err != nil {
					return
				}
				_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
				_ = conn.Close()
			}
		}()

		_, err = sshkey.ScanHostKey(ctx, listener.Addr().String(), 10*time.Second)
		// Depending on timing the server's close shows as a reset connection or a failed handshake;
		// both name the server.
		Expect(err).To(MatchError(ContainSubstring(listener.Addr().String())))
	})
})

func lineKey(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// silentListener accepts connections and holds them open without a word until the spec ends.
func silentListener() string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	DeferCleanup(func() {
		_ = listener.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, conn := range conns {
			_ = conn.Close()
		}
	})
	return listener.Addr().String()
}
