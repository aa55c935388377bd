// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// sopsNonceSize is the size of the AES-GCM nonces SOPS uses.
const sopsNonceSize = 32

// sopsLastModified is the lastmodified of the files SOPSSecret writes; the MAC is bound to it.
var sopsLastModified = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)

// SOPSSecret returns the manifest of a Secret with stringData, encrypted as `sops --encrypt
// --age <recipient> --encrypted-regex '^(data|stringData)$'` writes it, for a repository that the
// kluctl controller decrypts. The sops CLI and library are not used: the library pulls every
// cloud KMS into the build. The format is SOPS's: each value AES-256-GCM encrypted with a data
// key and its path as additional data, a MAC (SHA-512 over all values in document order)
// encrypted with the last modification time as additional data, and the data key encrypted to
// the age recipient. Values must not be empty (SOPS leaves those unencrypted).
func SOPSSecret(name, namespace string, stringData map[string]string, ageRecipient string) (string, error) {
	recipient, err := age.ParseX25519Recipient(ageRecipient)
	if err != nil {
		return "", fmt.Errorf("parsing the age recipient: %w", err)
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return "", fmt.Errorf("generating the data key: %w", err)
	}

	mac := sha512.New()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: %s\n  namespace: %s\nstringData:\n", name, namespace)
	for _, value := range []string{"v1", "Secret", name, namespace} {
		mac.Write([]byte(value))
	}
	keys := make([]string, 0, len(stringData))
	for k := range stringData {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		value := stringData[k]
		if value == "" {
			return "", fmt.Errorf("stringData %s is empty", k)
		}
		mac.Write([]byte(value))
		encrypted, err := sopsEncrypt(dataKey, value, "stringData:"+k+":")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  %s: %s\n", k, encrypted)
	}
	encryptedMAC, err := sopsEncrypt(dataKey, fmt.Sprintf("%X", mac.Sum(nil)), sopsLastModified)
	if err != nil {
		return "", err
	}

	var armored bytes.Buffer
	aw := armor.NewWriter(&armored)
	w, err := age.Encrypt(aw, recipient)
	if err != nil {
		return "", fmt.Errorf("encrypting the data key: %w", err)
	}
	if _, err := w.Write(dataKey); err != nil {
		return "", fmt.Errorf("encrypting the data key: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("encrypting the data key: %w", err)
	}
	if err := aw.Close(); err != nil {
		return "", fmt.Errorf("encrypting the data key: %w", err)
	}

	fmt.Fprintf(&b, "sops:\n  age:\n    - recipient: %s\n      enc: |\n", ageRecipient)
	for _, line := range strings.Split(strings.TrimRight(armored.String(), "\n"), "\n") {
		fmt.Fprintf(&b, "        %s\n", line)
	}
	fmt.Fprintf(&b, "  lastmodified: %q\n  mac: %s\n  encrypted_regex: ^(data|stringData)$\n  version: 3.13.1\n", sopsLastModified, encryptedMAC)
	return b.String(), nil
}

// sopsEncrypt encrypts a string value as SOPS does: ENC[AES256_GCM,data:...,iv:...,tag:...,type:str].
func sopsEncrypt(key []byte, value, additionalData string) (string, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", fmt.Errorf("creating the cipher: %w", err)
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, sopsNonceSize)
	if err != nil {
		return "", fmt.Errorf("creating the cipher: %w", err)
	}
	iv := make([]byte, sopsNonceSize)
	if _, err := rand.Read(iv); err != nil {
		return "", fmt.Errorf("generating the nonce: %w", err)
	}
	out := gcm.Seal(nil, iv, []byte(value), []byte(additionalData))
	data, tag := out[:len(out)-gcm.Overhead()], out[len(out)-gcm.Overhead():]
	return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]",
		base64.StdEncoding.EncodeToString(data), base64.StdEncoding.EncodeToString(iv), base64.StdEncoding.EncodeToString(tag)), nil
}
