// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey_test

import (
	"encoding/pem"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("Generate", func() {
	const comment = "shoot-flux garden-foo/bar"

	DescribeTable("creates a usable key pair",
		func(alg sshkey.Algorithm, wantType string) {
			pair, err := sshkey.Generate(alg, comment)
			Expect(err).NotTo(HaveOccurred())

			Expect(string(pair.PrivateKey)).To(HavePrefix("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
			signer, err := sshkey.ParsePrivateKey(pair.PrivateKey, sshkey.DefaultPrivateKeyLimits())
			Expect(err).NotTo(HaveOccurred())
			Expect(signer.PublicKey().Type()).To(Equal(wantType))

			Expect(strings.TrimSuffix(pair.AuthorizedKey, "\n")).NotTo(ContainSubstring("\n"))
			Expect(pair.AuthorizedKey).To(HavePrefix(wantType + " "))
			Expect(pair.AuthorizedKey).To(HaveSuffix(" " + comment + "\n"))
			public, gotComment, err := sshkey.ParseAuthorizedKey(pair.AuthorizedKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(gotComment).To(Equal(comment))
			Expect(sshkey.SamePublicKey(public, signer.PublicKey())).To(BeTrue())

			Expect(pair.Fingerprint).To(HavePrefix("SHA256:"))
			Expect(pair.Fingerprint).To(Equal(ssh.FingerprintSHA256(signer.PublicKey())))
			fingerprint, err := sshkey.FingerprintOf(pair.AuthorizedKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(fingerprint).To(Equal(pair.Fingerprint))

			By("authenticating only with this key against a server that trusts its authorized key")
			server := startTestServer(public, newHostKey("ed25519"))
			Expect(dial(server.Addr(), signer, ssh.InsecureIgnoreHostKey())).To(Succeed())

			other, err := sshkey.Generate(alg, comment)
			Expect(err).NotTo(HaveOccurred())
			Expect(other.Fingerprint).NotTo(Equal(pair.Fingerprint))
			otherSigner, err := sshkey.ParsePrivateKey(other.PrivateKey, sshkey.DefaultPrivateKeyLimits())
			Expect(err).NotTo(HaveOccurred())
			Expect(dial(server.Addr(), otherSigner, ssh.InsecureIgnoreHostKey())).To(MatchError(ContainSubstring("unable to authenticate")))
		},
		Entry("ed25519", sshkey.AlgorithmED25519, ssh.KeyAlgoED25519),
		Entry("rsa-4096", sshkey.AlgorithmRSA4096, ssh.KeyAlgoRSA),
		Entry("default", sshkey.Algorithm(""), ssh.KeyAlgoED25519),
	)

	It("creates 4096 bit RSA keys", func() {
		pair, err := sshkey.Generate(sshkey.AlgorithmRSA4096, comment)
		Expect(err).NotTo(HaveOccurred())
		raw, err := ssh.ParseRawPrivateKey(pair.PrivateKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(raw).To(HaveField("N.BitLen()", 4096))
	})

	It("rejects unsupported algorithms", func() {
		_, err := sshkey.Generate("dsa", comment)
		Expect(err).To(MatchError(ContainSubstring(`unsupported key algorithm "dsa"`)))
		Expect(sshkey.Algorithm("rsa-2048").Validate()).To(HaveOccurred())
		Expect(sshkey.AlgorithmRSA4096.Validate()).To(Succeed())
	})

	It("rejects comments that would break the authorized_keys line", func() {
		_, err := sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux\nssh-ed25519 AAAA")
		Expect(err).To(MatchError(ContainSubstring("line breaks")))
	})

	It("leaves out an empty comment", func() {
		pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(pair.AuthorizedKey)).To(HaveLen(2))
	})
})

var _ = Describe("ParsePrivateKey", func() {
	It("does not reveal the key in its errors", func() {
		pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "c")
		Expect(err).NotTo(HaveOccurred())
		// Damaging the body keeps the PEM frame, so the parser sees and rejects key material.
		lines := strings.Split(string(pair.PrivateKey), "\n")
		body := lines[1]
		lines[1] = body[:10] + strings.Repeat("A", len(body)-10)
		_, err = sshkey.ParsePrivateKey([]byte(strings.Join(lines, "\n")), sshkey.DefaultPrivateKeyLimits())
		Expect(err).To(MatchError(ContainSubstring("invalid private key")))
		for _, line := range lines[1 : len(lines)-2] {
			Expect(err.Error()).NotTo(ContainSubstring(line[:16]))
		}
		Expect(err.Error()).NotTo(ContainSubstring(body[:16]))
	})

	It("rejects passphrase protected keys with a clear error", func() {
		pair, err := sshkey.Generate(sshkey.AlgorithmED25519, "c")
		Expect(err).NotTo(HaveOccurred())
		raw, err := ssh.ParseRawPrivateKey(pair.PrivateKey)
		Expect(err).NotTo(HaveOccurred())
		block, err := ssh.MarshalPrivateKeyWithPassphrase(raw, "c", []byte("secret"))
		Expect(err).NotTo(HaveOccurred())
		_, err = sshkey.ParsePrivateKey(pemEncode(block), sshkey.DefaultPrivateKeyLimits())
		Expect(err).To(MatchError("private key is protected by a passphrase"))
	})

	It("rejects data without a key", func() {
		_, err := sshkey.ParsePrivateKey([]byte("not a key"), sshkey.DefaultPrivateKeyLimits())
		Expect(err).To(MatchError(ContainSubstring("invalid private key")))
	})
})

var _ = Describe("FingerprintOf", func() {
	It("rejects lines without a key", func() {
		_, err := sshkey.FingerprintOf("ssh-ed25519 notbase64")
		Expect(err).To(HaveOccurred())
	})
})

func pemEncode(block *pem.Block) []byte { return pem.EncodeToMemory(block) }
