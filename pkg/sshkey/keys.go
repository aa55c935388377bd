// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package sshkey generates SSH deploy keys and collects, checks and verifies SSH host keys in
// known_hosts format.
package sshkey

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Algorithm selects the type of a generated key pair.
type Algorithm string

const (
	// AlgorithmED25519 generates Ed25519 keys, accepted by all common git hosts and the default.
	AlgorithmED25519 Algorithm = "ed25519"
	// AlgorithmRSA4096 generates 4096 bit RSA keys for git servers that do not accept Ed25519.
	AlgorithmRSA4096 Algorithm = "rsa-4096"
)

// DefaultAlgorithm is used when no algorithm is configured.
const DefaultAlgorithm = AlgorithmED25519

const rsaBits = 4096

// Validate returns an error for an algorithm Generate does not support. The empty algorithm
// is valid and means DefaultAlgorithm.
func (a Algorithm) Validate() error {
	switch a {
	case "", AlgorithmED25519, AlgorithmRSA4096:
		return nil
	default:
		return fmt.Errorf("unsupported key algorithm %q, supported are %q and %q", string(a), AlgorithmED25519, AlgorithmRSA4096)
	}
}

// KeyPair is a generated SSH key pair.
type KeyPair struct {
	// PrivateKey is the private key in OpenSSH PEM format.
	PrivateKey []byte
	// AuthorizedKey is the public key as an authorized_keys line ending with the comment and a newline.
	AuthorizedKey string
	// Fingerprint is the SHA256 fingerprint of the public key as printed by ssh-keygen -l.
	Fingerprint string
}

// Generate creates a new key pair. The comment is stored in the private key and appended to
// the authorized_keys line so users can tell deploy keys apart in their git host's settings.
func Generate(alg Algorithm, comment string) (*KeyPair, error) {
	if err := alg.Validate(); err != nil {
		return nil, err
	}
	if err := validateComment(comment); err != nil {
		return nil, err
	}

	var private crypto.PrivateKey
	var public crypto.PublicKey
	switch alg {
	case AlgorithmRSA4096:
		key, err := rsa.GenerateKey(rand.Reader, rsaBits)
		if err != nil {
			return nil, fmt.Errorf("generating RSA key: %w", err)
		}
		private, public = key, &key.PublicKey
	default:
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generating Ed25519 key: %w", err)
		}
		private, public = key, pub
	}

	sshPublic, err := ssh.NewPublicKey(public)
	if err != nil {
		return nil, fmt.Errorf("converting public key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(private, comment)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return &KeyPair{
		PrivateKey:    pem.EncodeToMemory(block),
		AuthorizedKey: AuthorizedKey(sshPublic, comment),
		Fingerprint:   ssh.FingerprintSHA256(sshPublic),
	}, nil
}

// AuthorizedKey formats a public key as an authorized_keys line with an optional comment.
func AuthorizedKey(key ssh.PublicKey, comment string) string {
	line := strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(key)), "\n")
	if comment = strings.TrimSpace(comment); comment != "" {
		line += " " + comment
	}
	return line + "\n"
}

// ParsePrivateKey parses a private key in OpenSSH, PKCS#1, PKCS#8 or SEC1 PEM format, after
// checking it against limits (see CheckPrivateKey). Its errors never contain key material, so they
// may be logged and shown to users.
func ParsePrivateKey(pemBytes []byte, limits PrivateKeyLimits) (ssh.Signer, error) {
	if err := CheckPrivateKey(pemBytes, limits); err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			// A deploy key is used unattended, so there is nobody to enter a passphrase.
			return nil, errors.New("private key is protected by a passphrase")
		}
		return nil, fmt.Errorf("invalid private key: %w", err)
	}
	return signer, nil
}

// ParseAuthorizedKey parses the first key of an authorized_keys line and returns it with its comment.
func ParseAuthorizedKey(authorizedKey string) (ssh.PublicKey, string, error) {
	key, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil {
		return nil, "", fmt.Errorf("invalid authorized key: %w", err)
	}
	return key, comment, nil
}

// FingerprintOf returns the SHA256 fingerprint of an authorized_keys line.
func FingerprintOf(authorizedKey string) (string, error) {
	key, _, err := ParseAuthorizedKey(authorizedKey)
	if err != nil {
		return "", err
	}
	return ssh.FingerprintSHA256(key), nil
}

// SamePublicKey reports whether two public keys are the same key, ignoring comments.
func SamePublicKey(a, b ssh.PublicKey) bool {
	return a.Type() == b.Type() && string(a.Marshal()) == string(b.Marshal())
}

func validateComment(comment string) error {
	// The authorized_keys line must stay a single line, or git hosts see a second, broken key.
	if strings.ContainsAny(comment, "\r\n") {
		return errors.New("key comment must not contain line breaks")
	}
	return nil
}

// Fingerprint returns the fingerprint of the public key of an OpenSSH private key, which must be
// within limits.
func Fingerprint(privateKey []byte, limits PrivateKeyLimits) (string, error) {
	signer, err := ParsePrivateKey(privateKey, limits)
	if err != nil {
		return "", err
	}
	return FingerprintOf(AuthorizedKey(signer.PublicKey(), ""))
}
