// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

var _ = Describe("Private key limits", func() {
	limits := sshkey.DefaultPrivateKeyLimits()

	It("defaults to 16 KiB and the largest RSA key OpenSSH accepts", func() {
		Expect(limits).To(Equal(sshkey.PrivateKeyLimits{MaxBytes: 16384, MaxBits: 16384}))
		Expect(sshkey.MaxRSABits).To(Equal(16384))
	})

	DescribeTable("refuses a 780 KiB RSA key by its size, before parsing it",
		func(format craftedkey.Format) {
			// A 1M-bit modulus with the other values of a real key's proportions: 12.9 s per
			// parse of the PKCS#1 form without the limit (issue 36).
			key := craftedkey.PEM(format, 1<<20, 0)
			Expect(len(key)).To(BeNumerically(">", 700<<10))
			_, err := sshkey.ParsePrivateKey(key, limits)
			Expect(err).To(MatchError(fmt.Sprintf("private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)", len(key))))
		},
		Entry("PKCS#1", craftedkey.PKCS1),
		Entry("PKCS#8", craftedkey.PKCS8),
		Entry("OpenSSH", craftedkey.OpenSSH),
	)

	DescribeTable("refuses a modulus over the limit that fits the size, before parsing it",
		func(format craftedkey.Format, modulusBits, otherBits int) {
			key := craftedkey.PEM(format, modulusBits, otherBits)
			Expect(len(key)).To(BeNumerically("<=", limits.MaxBytes))
			_, err := sshkey.ParsePrivateKey(key, limits)
			Expect(err).To(MatchError(fmt.Sprintf("RSA private key has a modulus of %d bits, more than the operator's limit of 16384 bits (limits.privateKeyMaxBits)", modulusBits)))
		},
		Entry("PKCS#1, one bit more than a real key", craftedkey.PKCS1, 16385, 0),
		Entry("PKCS#8, one bit more than a real key", craftedkey.PKCS8, 16385, 0),
		Entry("OpenSSH, one bit more than a real key", craftedkey.OpenSSH, 16385, 0),
		// What 16 KiB hold when the other values are small: the size alone would let it through.
		Entry("PKCS#1, a 96,000 bit modulus in 16 KiB", craftedkey.PKCS1, 96000, 8),
		Entry("PKCS#8, a 95,000 bit modulus in 16 KiB", craftedkey.PKCS8, 95000, 8),
	)

	DescribeTable("lets a modulus at the limit through to the parser",
		func(format craftedkey.Format) {
			Expect(sshkey.CheckPrivateKey(craftedkey.PEM(format, 16384, 0), limits)).To(Succeed())
			Expect(sshkey.CheckPrivateKey(craftedkey.PEM(format, 2049, 0), sshkey.PrivateKeyLimits{MaxBits: 2048})).To(MatchError(ContainSubstring("2049 bits")))
		},
		Entry("PKCS#1", craftedkey.PKCS1),
		Entry("PKCS#8", craftedkey.PKCS8),
		Entry("OpenSSH", craftedkey.OpenSSH),
	)

	It("reads the modulus of an OpenSSH key's private section, which x/crypto uses", func() {
		key := craftedkey.PEM(craftedkey.OpenSSH, 4096, 0)
		block, _ := pem.Decode(key)
		// Replace the public key's modulus by a small one: the private one still counts.
		small := craftedkey.PEM(craftedkey.OpenSSH, 1024, 0)
		smallBlock, _ := pem.Decode(small)
		spliced := append(append([]byte{}, smallBlock.Bytes[:publicEnd(smallBlock.Bytes)]...), block.Bytes[publicEnd(block.Bytes):]...)
		// The splice took the small public key: the public section alone passes the limit.
		Expect(len(spliced)).To(BeNumerically("<", len(block.Bytes)))
		err := sshkey.CheckPrivateKey(pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: spliced}), sshkey.PrivateKeyLimits{MaxBits: 2048})
		Expect(err).To(MatchError(ContainSubstring("4096 bits")))
	})

	It("refuses an RSA key whose modulus it cannot read, so that none reaches the parser unchecked", func() {
		key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01}})
		_, err := sshkey.ParsePrivateKey(key, limits)
		Expect(err).To(MatchError("invalid private key: malformed PKCS#1 RSA private key"))
	})

	It("bounds nothing with zero limits", func() {
		key := craftedkey.PEM(craftedkey.OpenSSH, 32768, 0)
		Expect(sshkey.CheckPrivateKey(key, sshkey.PrivateKeyLimits{})).To(Succeed())
	})

	DescribeTable("accepts a real 16384 bit RSA key",
		func(encode func(*rsa.PrivateKey) []byte) {
			key := encode(realRSA16384())
			Expect(len(key)).To(BeNumerically("<=", limits.MaxBytes))
			signer, err := sshkey.ParsePrivateKey(key, limits)
			Expect(err).NotTo(HaveOccurred())
			Expect(signer.PublicKey().Type()).To(Equal(ssh.KeyAlgoRSA))
		},
		Entry("PKCS#1", func(k *rsa.PrivateKey) []byte {
			return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		}),
		Entry("PKCS#8", func(k *rsa.PrivateKey) []byte {
			der, err := x509.MarshalPKCS8PrivateKey(k)
			Expect(err).NotTo(HaveOccurred())
			return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		}),
		Entry("OpenSSH, with a comment of 1 KiB", func(k *rsa.PrivateKey) []byte {
			block, err := ssh.MarshalPrivateKey(k, string(make([]byte, 1024)))
			Expect(err).NotTo(HaveOccurred())
			return pem.EncodeToMemory(block)
		}),
	)
})

// publicEnd is the offset after the public key of an unencrypted OpenSSH key crafted with cipher
// and kdf none: magic, the strings "none", "none" and "" (kdf options), the key count and the
// public key string, whose length ends at off.
func publicEnd(data []byte) int {
	off := len("openssh-key-v1\x00") + (4 + len("none")) + (4 + len("none")) + 4 + 4 + 4
	publicLen := int(data[off-4])<<24 | int(data[off-3])<<16 | int(data[off-2])<<8 | int(data[off-1])
	return off + publicLen
}

// realRSA16384 is a real 16384 bit RSA key (openssl genrsa 16384, which took minutes), the
// largest key the default limits accept.
func realRSA16384() *rsa.PrivateKey {
	data, err := os.ReadFile("testdata/rsa-16384.pem")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	block, _ := pem.Decode(data)
	ExpectWithOffset(1, block).NotTo(BeNil())
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return key.(*rsa.PrivateKey)
}

// BenchmarkParsePrivateKey measures what a tenant's key costs the extension with the default
// limits: a refusal by size or modulus costs microseconds, where parsing the same keys without
// the limits costs up to seconds.
func BenchmarkParsePrivateKey(b *testing.B) {
	limits := sshkey.DefaultPrivateKeyLimits()
	crafted1M := craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0)
	crafted96k := craftedkey.PEM(craftedkey.PKCS1, 96000, 8)
	for _, bc := range []struct {
		name   string
		key    []byte
		limits sshkey.PrivateKeyLimits
	}{
		{"refused by size, PKCS#1 1M bits 780 KiB", crafted1M, limits},
		{"refused by size, OpenSSH 1M bits 780 KiB", craftedkey.PEM(craftedkey.OpenSSH, 1<<20, 0), limits},
		{"refused by modulus, PKCS#1 96000 bits 16 KiB", crafted96k, limits},
		{"unbounded, PKCS#1 96000 bits 16 KiB", crafted96k, sshkey.PrivateKeyLimits{}},
		{"unbounded, PKCS#1 262144 bits 195 KiB", craftedkey.PEM(craftedkey.PKCS1, 1<<18, 0), sshkey.PrivateKeyLimits{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = sshkey.ParsePrivateKey(bc.key, bc.limits)
			}
		})
	}
	b.Run("accepted, real PKCS#8 16384 bits", func(b *testing.B) {
		data, err := os.ReadFile("testdata/rsa-16384.pem")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := sshkey.ParsePrivateKey(data, limits); err != nil {
				b.Fatal(err)
			}
		}
	})
}
