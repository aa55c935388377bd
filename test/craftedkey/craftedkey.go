// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package craftedkey builds RSA private keys of any modulus size that are well-formed PKCS#1,
// PKCS#8 or OpenSSH structures but no usable keys: what a tenant can store to make a parser spend
// CPU ("the key need not even be valid"), built in microseconds where generating a real key of
// that size would take hours.
package craftedkey

import (
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"math/big"
)

// Format is the encoding of a crafted key.
type Format string

const (
	// PKCS1 is a PEM block "RSA PRIVATE KEY".
	PKCS1 Format = "PKCS#1"
	// PKCS8 is a PEM block "PRIVATE KEY" with algorithm rsaEncryption.
	PKCS8 Format = "PKCS#8"
	// OpenSSH is a PEM block "OPENSSH PRIVATE KEY", unencrypted.
	OpenSSH Format = "OpenSSH"
)

// PEM returns a crafted RSA private key in format whose modulus has modulusBits bits. The private
// exponent has as many bits and the primes and CRT values half as many, as in a real key, unless
// otherBits is positive: then they have otherBits, so that a small PEM carries a large modulus.
func PEM(format Format, modulusBits, otherBits int) []byte {
	dBits, halfBits := modulusBits, modulusBits/2
	if otherBits > 0 {
		dBits, halfBits = otherBits, otherBits
	}
	k := key{
		N:    odd(modulusBits),
		E:    65537,
		D:    odd(dBits),
		P:    odd(halfBits),
		Q:    odd(halfBits),
		Dp:   odd(halfBits),
		Dq:   odd(halfBits),
		Qinv: odd(halfBits),
	}
	switch format {
	case PKCS8:
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: mustMarshal(pkcs8{
			Algorithm:  algorithm{OID: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}, Params: asn1.NullRawValue},
			PrivateKey: mustMarshal(k),
		})})
	case OpenSSH:
		return pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: openSSH(k)})
	default:
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: mustMarshal(k)})
	}
}

// key is PKCS#1's RSAPrivateKey.
type key struct {
	Version               int
	N                     *big.Int
	E                     int
	D, P, Q, Dp, Dq, Qinv *big.Int
}

type algorithm struct {
	OID    asn1.ObjectIdentifier
	Params asn1.RawValue
}

type pkcs8 struct {
	Version    int
	Algorithm  algorithm
	PrivateKey []byte
}

// odd returns 2^(bits-1) + 1, a number of exactly bits bits.
func odd(bits int) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(1), uint(max(bits, 2)-1))
	return n.Or(n, big.NewInt(1))
}

func mustMarshal(v any) []byte {
	der, err := asn1.Marshal(v)
	if err != nil {
		panic(err)
	}
	return der
}

// openSSH encodes the key as PROTOCOL.key describes: the public key, then the unencrypted private
// section, padded to the block size 8 of cipher none.
func openSSH(k key) []byte {
	e := big.NewInt(int64(k.E))
	public := concat(sshString([]byte("ssh-rsa")), mpint(e), mpint(k.N))
	private := concat([]byte{0, 0, 0, 1, 0, 0, 0, 1}, sshString([]byte("ssh-rsa")),
		mpint(k.N), mpint(e), mpint(k.D), mpint(k.Qinv), mpint(k.P), mpint(k.Q), sshString([]byte("crafted")))
	for i := byte(1); len(private)%8 != 0; i++ {
		private = append(private, i)
	}
	return concat([]byte("openssh-key-v1\x00"), sshString([]byte("none")), sshString([]byte("none")), sshString(nil),
		[]byte{0, 0, 0, 1}, sshString(public), sshString(private))
}

func sshString(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func mpint(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) > 0 && b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return sshString(b)
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
