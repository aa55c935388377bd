// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package leak_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/leak"
)

var _ = Describe("Leak detection", func() {
	var pair *sshkey.KeyPair

	BeforeEach(func() {
		var err error
		pair, err = sshkey.Generate(sshkey.AlgorithmED25519, "test")
		Expect(err).NotTo(HaveOccurred())
	})

	bodyLine := func() string {
		GinkgoHelper()
		lines := strings.Split(string(pair.PrivateKey), "\n")
		Expect(len(lines)).To(BeNumerically(">", 2))
		return lines[1]
	}

	Describe("Scanner", func() {
		var scanner *Scanner

		BeforeEach(func() {
			scanner = NewScanner(map[string][]byte{"Secret garden-p/key": pair.PrivateKey})
		})

		DescribeTable("finds key material",
			func(text func() string, what string) {
				findings := scanner.Scan("log", text())
				Expect(findings).NotTo(BeEmpty())
				Expect(findings[0].Source).To(Equal("log"))
				Expect(findings).To(ContainElement(HaveField("What", ContainSubstring(what))))
			},
			Entry("the whole key", func() string { return "identity=" + string(pair.PrivateKey) }, "the private key of Secret garden-p/key"),
			Entry("the marker alone", func() string { return "got -----BEGIN OPENSSH PRIVATE KEY----- in data" }, PrivateKeyMarker),
			Entry("the base64-encoded key", func() string {
				return `{"identity":"` + base64.StdEncoding.EncodeToString(pair.PrivateKey) + `"}`
			}, "base64-encoded private key"),
			Entry("one line of the key in JSON", func() string {
				data, err := json.Marshal(map[string]string{"msg": "partial " + bodyLine()})
				Expect(err).NotTo(HaveOccurred())
				return string(data)
			}, "line 1 of the private key"),
		)

		It("does not flag the public key, the fingerprint or other text", func() {
			text := fmt.Sprintf("publicKey=%s fingerprint=%s deployKeySecret=garden-p/shoot-flux-deploy-keys deployKey=repo.github.com_22_org_repo-0123456789", pair.AuthorizedKey, pair.Fingerprint)
			Expect(scanner.Scan("extension status", text)).To(BeEmpty())
		})

		It("keeps the key out of the finding", func() {
			findings := scanner.Scan("log", "leaked "+string(pair.PrivateKey))
			Expect(findings).NotTo(BeEmpty())
			for _, f := range findings {
				Expect(f.String()).NotTo(ContainSubstring(bodyLine()))
			}
		})
	})

	Describe("Recorder", func() {
		var (
			rec *Recorder
			log logr.Logger
		)

		BeforeEach(func() {
			rec = NewRecorder()
			rec.RecordSecret(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: constants.DeployKeysSecretName},
				Data:       map[string][]byte{"repo.a.identity": pair.PrivateKey, "repo.a.identity.pub": []byte(pair.AuthorizedKey)},
			})
			log = logr.New(rec.LogSink(funcr.New(func(string, string) {}, funcr.Options{}).GetSink()))
		})

		It("records harmless log lines without findings", func() {
			log.WithName("extension").Info("Created deploy key", "fingerprint", pair.Fingerprint)
			texts, keys := rec.Counts()
			Expect(texts).To(HaveKeyWithValue(SourceLog, 1))
			Expect(keys).To(Equal(1))
			Expect(rec.Scan()).To(BeEmpty())
		})

		DescribeTable("finds a key written to a log in any form",
			func(write func(logr.Logger)) {
				write(log)
				Expect(rec.Scan()).NotTo(BeEmpty())
			},
			Entry("as bytes at debug level", func(l logr.Logger) { l.V(1).Info("Secret data", "identity", pair.PrivateKey) }),
			Entry("in a map of Secret data", func(l logr.Logger) {
				l.WithValues("data", map[string][]byte{constants.SecretKeyIdentity: pair.PrivateKey}).Info("Read Secret")
			}),
			Entry("in an error", func(l logr.Logger) { l.Error(fmt.Errorf("invalid key %s", pair.PrivateKey), "Failed") }),
		)

		It("leaves client-go's body dumps to the sink's verbosity", func() {
			// client-go logs request bodies at verbosity 8 and up, Secrets included.
			log.V(8).Info("Request Body", "body", string(pair.PrivateKey))
			Expect(rec.Scan()).To(BeEmpty())
		})

		It("records every key pair of the project's deploy key Secret", func() {
			other, err := sshkey.Generate(sshkey.AlgorithmED25519, "test")
			Expect(err).NotTo(HaveOccurred())
			rec.RecordSecret(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: constants.DeployKeysSecretName},
				Data:       map[string][]byte{"repo.a.identity": pair.PrivateKey, "repo.b.identity": other.PrivateKey, "known_hosts": []byte("x")},
			})
			_, keys := rec.Counts()
			Expect(keys).To(Equal(2))
			log.Info("Leaked", "key", string(other.PrivateKey))
			Expect(rec.Scan()).NotTo(BeEmpty())
		})

		It("records a rotated key of the same Secret as another key", func() {
			next, err := sshkey.Generate(sshkey.AlgorithmED25519, "test")
			Expect(err).NotTo(HaveOccurred())
			rec.RecordSecret(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: constants.DeployKeysSecretName},
				Data:       map[string][]byte{"repo.a.identity": next.PrivateKey},
			})
			_, keys := rec.Counts()
			Expect(keys).To(Equal(2))
			log.Info("Rotated", "old", string(pair.PrivateKey))
			Expect(rec.Scan()).To(ContainElement(HaveField("What", ContainSubstring("Secret garden-p/"+constants.DeployKeysSecretName))))
		})
	})
})
