// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey

import (
	"bytes"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"math/bits"

	"golang.org/x/crypto/cryptobyte"
	cryptobyteasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// MaxRSABits is the largest RSA modulus OpenSSH generates (ssh-keygen -b) and accepts, and the
// bound x/crypto puts on RSA public keys and OpenSSH-format private keys: a larger key cannot log
// in at an OpenSSH-based git server or at one using x/crypto.
const MaxRSABits = 16384

// PrivateKeyLimits bound a private key a tenant stores before it is parsed: parsing an RSA key in
// PKCS#1 or PKCS#8 costs the square of its modulus, valid or not, and x/crypto caps only OpenSSH.
// A zero field means no bound; the fields are the operator's limits.privateKeyMaxBytes and
// limits.privateKeyMaxBits, which the errors name.
type PrivateKeyLimits struct {
	// MaxBytes bounds the PEM document.
	MaxBytes int
	// MaxBits bounds the modulus of an RSA key.
	MaxBits int
}

// DefaultPrivateKeyLimits returns the limits for the private keys of tenants: MaxRSABits, and 16 KiB,
// the PEM of the largest usable RSA key (about 12.5 KiB) with a comment. The size alone would not
// do: 16 KiB hold a crafted modulus of ~96,000 bits (see docs/operations/configuration.md,
// "Limits").
func DefaultPrivateKeyLimits() PrivateKeyLimits {
	return PrivateKeyLimits{MaxBytes: 16 << 10, MaxBits: MaxRSABits}
}

// OrDefault returns the default limits for limits that were never set (tools and tests).
func (l PrivateKeyLimits) OrDefault() PrivateKeyLimits {
	if l == (PrivateKeyLimits{}) {
		return DefaultPrivateKeyLimits()
	}
	return l
}

// CheckPrivateKey checks a PEM private key against limits without parsing it: its size, then the
// size of the RSA modulus, read from the key's structure without validating or precomputing
// anything, so that refusing a key costs no more than reading its length. A key whose modulus
// cannot be read is refused too, so that no key reaches the parser unchecked. Data that is no PEM
// is left to the parser, which reports that better.
func CheckPrivateKey(pemBytes []byte, limits PrivateKeyLimits) error {
	if limits.MaxBytes > 0 && len(pemBytes) > limits.MaxBytes {
		return fmt.Errorf("private key is %d bytes, more than the operator's limit of %d bytes (limits.privateKeyMaxBytes)", len(pemBytes), limits.MaxBytes)
	}
	if limits.MaxBits <= 0 {
		return nil
	}
	// ssh.ParsePrivateKey parses the first block, as this does.
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil
	}
	n, isRSA, err := rsaModulusBits(block)
	if err != nil {
		return fmt.Errorf("invalid private key: %w", err)
	}
	if isRSA && n > limits.MaxBits {
		return fmt.Errorf("RSA private key has a modulus of %d bits, more than the operator's limit of %d bits (limits.privateKeyMaxBits)", n, limits.MaxBits)
	}
	return nil
}

// The PEM block types x/crypto's ssh.ParsePrivateKey reads RSA keys from.
const (
	pemTypePKCS1   = "RSA PRIVATE KEY"
	pemTypePKCS8   = "PRIVATE KEY"
	pemTypeOpenSSH = "OPENSSH PRIVATE KEY"
)

var oidRSAEncryption = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}

// rsaModulusBits returns the bit length of the modulus of an RSA key and whether the block holds
// one. Encrypted blocks are left alone: the parser refuses them before reading the key.
func rsaModulusBits(block *pem.Block) (int, bool, error) {
	if _, encrypted := block.Headers["DEK-Info"]; encrypted {
		return 0, false, nil
	}
	switch block.Type {
	case pemTypePKCS1:
		n, err := pkcs1ModulusBits(block.Bytes)
		return n, true, err
	case pemTypePKCS8:
		return pkcs8ModulusBits(block.Bytes)
	case pemTypeOpenSSH:
		return opensshModulusBits(block.Bytes)
	}
	return 0, false, nil
}

// pkcs1ModulusBits reads RSAPrivateKey ::= SEQUENCE { version INTEGER, modulus INTEGER, ... }.
func pkcs1ModulusBits(der []byte) (int, error) {
	input := cryptobyte.String(der)
	var key, modulus cryptobyte.String
	if !input.ReadASN1(&key, cryptobyteasn1.SEQUENCE) || !key.SkipASN1(cryptobyteasn1.INTEGER) || !key.ReadASN1(&modulus, cryptobyteasn1.INTEGER) {
		return 0, errors.New("malformed PKCS#1 RSA private key")
	}
	return integerBits(modulus), nil
}

// pkcs8ModulusBits reads PrivateKeyInfo ::= SEQUENCE { version INTEGER, algorithm
// AlgorithmIdentifier, privateKey OCTET STRING }, whose privateKey is PKCS#1 for rsaEncryption,
// the one RSA algorithm x509.ParsePKCS8PrivateKey reads.
func pkcs8ModulusBits(der []byte) (int, bool, error) {
	input := cryptobyte.String(der)
	var info, algorithm, privateKey cryptobyte.String
	var oid asn1.ObjectIdentifier
	if !input.ReadASN1(&info, cryptobyteasn1.SEQUENCE) || !info.SkipASN1(cryptobyteasn1.INTEGER) ||
		!info.ReadASN1(&algorithm, cryptobyteasn1.SEQUENCE) || !algorithm.ReadASN1ObjectIdentifier(&oid) ||
		!info.ReadASN1(&privateKey, cryptobyteasn1.OCTET_STRING) {
		return 0, false, errors.New("malformed PKCS#8 private key")
	}
	if !oid.Equal(oidRSAEncryption) {
		return 0, false, nil
	}
	n, err := pkcs1ModulusBits(privateKey)
	return n, true, err
}

const opensshMagic = "openssh-key-v1\x00"

// opensshModulusBits reads the RSA modulus of an OpenSSH private key (PROTOCOL.key): the public
// key and, unless it is encrypted, the private section, which is where x/crypto takes the modulus
// from. x/crypto bounds both at MaxRSABits, the operator's limit may be lower.
func opensshModulusBits(data []byte) (int, bool, error) {
	rest, ok := bytes.CutPrefix(data, []byte(opensshMagic))
	if !ok {
		return 0, false, errors.New("malformed OpenSSH private key")
	}
	input := cryptobyte.String(rest)
	var cipher, kdf, kdfOptions, public, private cryptobyte.String
	var count uint32
	if !readSSHString(&input, &cipher) || !readSSHString(&input, &kdf) ||
		!readSSHString(&input, &kdfOptions) || !input.ReadUint32(&count) ||
		!readSSHString(&input, &public) || !readSSHString(&input, &private) {
		return 0, false, errors.New("malformed OpenSSH private key")
	}
	// public is string "ssh-rsa", mpint e, mpint n.
	var keyType, e, n cryptobyte.String
	if !readSSHString(&public, &keyType) || string(keyType) != "ssh-rsa" {
		return 0, false, nil
	}
	if !readSSHString(&public, &e) || !readSSHString(&public, &n) {
		return 0, true, errors.New("malformed OpenSSH RSA public key")
	}
	nBits := integerBits(n)
	if string(cipher) != "none" {
		return nBits, true, nil
	}
	// private is uint32 check, uint32 check, string key type, mpint n, ...
	var privateType, privateN cryptobyte.String
	if !private.Skip(8) || !readSSHString(&private, &privateType) || !readSSHString(&private, &privateN) {
		return 0, true, errors.New("malformed OpenSSH RSA private key")
	}
	return max(nBits, integerBits(privateN)), true, nil
}

// readSSHString reads an SSH string, a uint32 length and that many bytes.
func readSSHString(s, out *cryptobyte.String) bool {
	var length uint32
	var data []byte
	if !s.ReadUint32(&length) || uint64(length) > uint64(len(*s)) || !s.ReadBytes(&data, int(length)) {
		return false
	}
	*out = data
	return true
}

// integerBits is the bit length of a big-endian integer, as of DER INTEGER or SSH mpint contents:
// leading zero bytes (a sign byte, or an encoding x509 and x/crypto refuse anyway) do not count.
func integerBits(b []byte) int {
	b = bytes.TrimLeft(b, "\x00")
	if len(b) == 0 {
		return 0
	}
	return (len(b)-1)*8 + bits.Len8(b[0])
}
