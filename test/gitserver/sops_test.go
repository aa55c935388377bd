// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"regexp"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
)

var _ = Describe("SOPSSecret", func() {
	It("encrypts the values and the MAC with a data key only the age identity opens", func() {
		identity, err := age.GenerateX25519Identity()
		Expect(err).NotTo(HaveOccurred())
		manifest, err := gitserver.SOPSSecret("app", "default", map[string]string{"password": "s3cret", "user": "admin"}, identity.Recipient().String())
		Expect(err).NotTo(HaveOccurred())
		Expect(manifest).NotTo(ContainSubstring("s3cret"))

		var doc struct {
			StringData map[string]string `json:"stringData"`
			SOPS       struct {
				Age []struct {
					Recipient, Enc string
				} `json:"age"`
				LastModified string `json:"lastmodified"`
				MAC          string `json:"mac"`
			} `json:"sops"`
		}
		Expect(yaml.Unmarshal([]byte(manifest), &doc)).To(Succeed())
		Expect(doc.SOPS.Age).To(HaveLen(1))
		Expect(doc.SOPS.Age[0].Recipient).To(Equal(identity.Recipient().String()))

		r, err := age.Decrypt(armor.NewReader(strings.NewReader(doc.SOPS.Age[0].Enc)), identity)
		Expect(err).NotTo(HaveOccurred())
		dataKey, err := io.ReadAll(r)
		Expect(err).NotTo(HaveOccurred())
		Expect(dataKey).To(HaveLen(32))

		Expect(decrypt(dataKey, doc.StringData["password"], "stringData:password:")).To(Equal("s3cret"))
		Expect(decrypt(dataKey, doc.StringData["user"], "stringData:user:")).To(Equal("admin"))
		_, err = decrypt(dataKey, doc.StringData["password"], "stringData:user:")
		Expect(err).To(HaveOccurred(), "the path is authenticated")

		mac := sha512.New()
		for _, v := range []string{"v1", "Secret", "app", "default", "s3cret", "admin"} {
			mac.Write([]byte(v))
		}
		Expect(decrypt(dataKey, doc.SOPS.MAC, doc.SOPS.LastModified)).To(Equal(fmt.Sprintf("%X", mac.Sum(nil))))

		other, err := age.GenerateX25519Identity()
		Expect(err).NotTo(HaveOccurred())
		_, err = age.Decrypt(armor.NewReader(strings.NewReader(doc.SOPS.Age[0].Enc)), other)
		Expect(err).To(HaveOccurred())
	})
})

var encPattern = regexp.MustCompile(`^ENC\[AES256_GCM,data:([^,]*),iv:([^,]*),tag:([^,]*),type:str\]$`)

// decrypt opens a value as SOPS does.
func decrypt(key []byte, value, additionalData string) (string, error) {
	m := encPattern.FindStringSubmatch(value)
	if m == nil {
		return "", fmt.Errorf("%q is not a SOPS value", value)
	}
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return "", err
		}
		parts[i] = b
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(parts[1]))
	if err != nil {
		return "", err
	}
	plain, err := gcm.Open(nil, parts[1], bytes.Join([][]byte{parts[0], parts[2]}, nil), []byte(additionalData))
	return string(plain), err
}
