// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("Manager", func() {
	setUpManager()

	Describe("known_hosts", func() {
		var (
			configured string
			extra      string
		)

		BeforeEach(func() {
			configured = newFakeScanner().line(gitHost)
			extra = newFakeScanner().line("other.example.org:22")
		})

		It("uses configured known_hosts without scanning or storing them", func() {
			req.ConfiguredKnownHosts = []byte(strings.TrimSuffix(configured, "\n"))
			m.ExtraKnownHosts = []byte(extra)
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(configured + extra))
			Expect(scanner.calls.Load()).To(BeZero())
			Expect(getSecret(c, constants.DeployKeysSecretName).Data).NotTo(HaveKey(constants.SecretKeyKnownHosts))
		})

		It("rejects invalid configured known_hosts", func() {
			req.ConfiguredKnownHosts = []byte("git.example.org ssh-ed25519 AAAA\n")
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(`source.knownHosts: Invalid value: "git.example.org ssh-ed25519 AAAA": line 1 is not a known_hosts entry`)))
		})

		It("prefers a stored entry for the host over scanning", func() {
			stored := newFakeScanner().line(gitHost)
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte(stored),
			}, nil))).To(Succeed())
			m.ExtraKnownHosts = []byte(extra)

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(stored + extra))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("does not scan hosts the operator trusts", func() {
			m.ExtraKnownHosts = []byte(configured)
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(configured))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("scans a host missing from the stored entries and keeps the others", func() {
			other := newFakeScanner().line("github.com:22")
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte(strings.TrimSuffix(other, "\n")),
			}, nil))).To(Succeed())

			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(other + scanner.line(gitHost)))
			Expect(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts]).To(Equal(key.KnownHosts))
		})

		It("scans hosts on other ports under their own name", func() {
			req.GitHost = "git.example.org:2222"
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(HavePrefix("[git.example.org]:2222 ssh-ed25519 "))
		})

		It("rejects invalid stored known_hosts", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("git.example.org ssh-ed25519 AAAA\n"),
			}, nil))).To(Succeed())
			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "git.example.org ssh-ed25519 AAAA": line 1 is not a known_hosts entry: ssh: short read`))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig), "a project admin's mistake, not worth retrying")
			expectNoKeyMaterial(err, own.PrivateKey)
		})

		// Issue 20: a pattern like this kept a worker busy for good while it was matched.
		It("bounds the stored known_hosts before matching them", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			crafted := strings.Repeat("*a", 17) + "z"
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("# pinned\n" + crafted + " " + strings.SplitN(newFakeScanner().line(gitHost), " ", 2)[1]),
			}, nil))).To(Succeed())
			m.KnownHostsLimits = sshkey.DefaultKnownHostsLimits()

			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "` + crafted +
				`": line 2: host pattern has 17 wildcards (* and ?), may not have more than 3`))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig))
			Expect(scanner.calls.Load()).To(BeZero())
		})

		It("does not store a scan that would exceed the limits", func() {
			other := newFakeScanner().line("github.com:22")
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(c.Create(ctx, userSecret(constants.DeployKeysSecretName, map[string][]byte{
				identityKey:                   own.PrivateKey,
				constants.SecretKeyKnownHosts: []byte("# github.com\n" + other),
			}, nil))).To(Succeed())
			m.KnownHostsLimits = sshkey.KnownHostsLimits{MaxLines: 2}

			_, err = m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring("Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Too many: 3: has 3 lines, may not have more than 2 " +
				"(with the scanned host keys of git.example.org:22; remove entries no longer needed or set source.knownHosts)")))
			Expect(err).To(MatchError(configerror.ErrInvalidConfig))
			Expect(string(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts])).To(Equal("# github.com\n" + other))
		})

		It("needs no host key without an SSH host", func() {
			req.GitHost = ""
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(key.KnownHosts).To(BeEmpty())
			Expect(key.InsecureHostKey).To(BeFalse())
			Expect(scanner.calls.Load()).To(BeZero())

			m.ExtraKnownHosts = []byte(extra)
			key, err = m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(extra))
		})

		Context("when the scan fails", func() {
			BeforeEach(func() {
				scanner.err = errors.New("dial tcp: connection refused")
			})

			It("fails with a hint where to put the host key", func() {
				key, err := m.Ensure(ctx, log, req)
				Expect(key).To(BeNil())
				Expect(err).To(MatchError(`cannot determine the SSH host key of "git.example.org:22": ` + deploykey.ScanFailedMessage + `; ` +
					`set source.knownHosts or add it to Secret garden-foo/shoot-flux-deploy-keys key known_hosts`))
				Expect(err.Error()).NotTo(ContainSubstring("connection refused"), "the reason stays in the extension's log")
				expectNoKeyMaterial(err, getSecret(c, constants.DeployKeysSecretName).Data[identityKey])
			})

			It("names the default port of a host given without one", func() {
				req.GitHost = "git.example.org"
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(MatchError(HavePrefix(`cannot determine the SSH host key of "git.example.org:22"`)))
			})

			It("disables host key checking when the operator allows it", func() {
				m.AllowInsecureHostKeys = true
				m.ExtraKnownHosts = []byte(extra)
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(key.InsecureHostKey).To(BeTrue())
				Expect(string(key.KnownHosts)).To(Equal(extra))
				Expect(getSecret(c, constants.DeployKeysSecretName).Data).NotTo(HaveKey(constants.SecretKeyKnownHosts))
			})

			It("scans again on the next reconcile", func() {
				failed := metricValue("shoot_flux_host_key_scans_total", "result", "unreachable")
				ok := metricValue("shoot_flux_host_key_scans_total", "result", "ok")
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(HaveOccurred())
				scanner.err = nil
				key, err := m.Ensure(ctx, log, req)
				Expect(err).NotTo(HaveOccurred())
				Expect(string(key.KnownHosts)).To(Equal(scanner.line(gitHost)))
				Expect(metricValue("shoot_flux_host_key_scans_total", "result", "unreachable")).To(Equal(failed+1), "each scan is counted")
				Expect(metricValue("shoot_flux_host_key_scans_total", "result", "ok")).To(Equal(ok + 1))
			})
		})

		It("treats a scan without a key for the host as failed", func() {
			m.Scanner = func(context.Context, string, time.Duration) ([]byte, error) {
				return []byte(newFakeScanner().line("elsewhere.example.org:22")), nil
			}
			_, err := m.Ensure(ctx, log, req)
			Expect(err).To(MatchError(ContainSubstring(deploykey.ScanFailedMessage)))
		})

		// Project members choose the host; what they learn must not tell the seed's networks
		// apart.
		It("answers every refused or failed scan with the same message", func() {
			m.Scanner = nil
			policy, err := hostpolicy.New(nil, []string{"1-65535"}, []netip.Prefix{netip.MustParsePrefix("10.250.0.0/16")})
			Expect(err).NotTo(HaveOccurred())
			closed, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			closedAddr := closed.Addr().String()
			Expect(closed.Close()).To(Succeed())

			messages := map[string]bool{}
			for _, target := range []struct {
				host string
				dial sshkey.DialFunc
			}{
				{"169.254.169.254:80", policy.DialContext},
				{"kubernetes.default.svc:443", policy.DialContext},
				{"10.250.0.1:22", policy.DialContext},
				{closedAddr, nil},
			} {
				req.GitHost, req.Dial = target.host, target.dial
				_, err := m.Ensure(ctx, log, req)
				Expect(err).To(HaveOccurred())
				host, port := sshkey.SplitHostPort(target.host)
				messages[strings.ReplaceAll(err.Error(), net.JoinHostPort(host, port), "HOST")] = true
			}
			Expect(messages).To(HaveLen(1), "messages: %v", messages)
		})

		It("keeps the host key a concurrent reconcile stored first", func() {
			first := newFakeScanner().line(gitHost)
			var updates atomic.Int32
			c = newClient(interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if updates.Add(1) == 1 {
						current := &corev1.Secret{}
						Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), current)).To(Succeed())
						current.Data[constants.SecretKeyKnownHosts] = []byte(first)
						Expect(c.Update(ctx, current)).To(Succeed())
					}
					return c.Update(ctx, obj, opts...)
				},
			})
			m.Client = c
			key, err := m.Ensure(ctx, log, req)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(key.KnownHosts)).To(Equal(first))
			Expect(string(getSecret(c, constants.DeployKeysSecretName).Data[constants.SecretKeyKnownHosts])).To(Equal(first))
		})
	})
})
