// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
)

// defaultHosts is the host policy with the controller's defaults: public addresses on the common
// SSH ports of git hosts.
var defaultHosts = mustHostPolicy(nil, nil)

func mustHostPolicy(allowedNetworks, allowedPorts []string) *hostpolicy.Policy {
	policy, err := hostpolicy.New(allowedNetworks, allowedPorts, nil)
	if err != nil {
		panic(err)
	}
	return policy
}

// hostNotAllowed is the one message for every refused host: it does not tell which rule refused it.
const hostNotAllowed = "the host is not allowed by the operator's host policy for SSH host key scans from the seed; known host keys in source.knownHosts skip the scan"

// deniedURLs are SSH repository URLs the default host policy refuses without DNS.
var deniedURLs = []string{
	"ssh://git@127.0.0.1/owner/repo",
	"ssh://git@[::1]/owner/repo",
	"git@169.254.169.254:owner/repo",
	"ssh://git@0.0.0.0/owner/repo",
	"ssh://git@224.0.0.1/owner/repo",
	"ssh://git@[fe80::1]/owner/repo",
	"ssh://git@10.0.0.1/owner/repo",
	"git@localhost:owner/repo",
	"ssh://git@kubernetes.default.svc/owner/repo",
	"ssh://git@x.svc.cluster.local/owner/repo",
	"ssh://git@gitea/owner/repo",
	"ssh://git@github.com:2200/owner/repo",
}

// allowedURLs are repository URLs the default host policy admits: public hosts on the default
// ports, and https URLs, whose hosts the extension never connects to from the seed.
var allowedURLs = []string{
	"ssh://git@github.com:22/owner/repo",
	"ssh://git@github.com/owner/repo",
	"git@git.example.com:owner/repo",
	"ssh://git@ssh.github.com:443/owner/repo",
	"ssh://git@93.184.216.34/owner/repo",
	"https://git.example.com:8443/owner/repo",
	"https://127.0.0.1/owner/repo",
}

var _ = Describe("Repository host policy", func() {
	ctx := context.Background()

	Describe("Shoots", func() {
		validator := NewShootValidator(supported, defaultHosts, defaultLimits, nil)
		sourceConfig := func(source string) string {
			return fmt.Sprintf(`{"source": %s}`, source)
		}

		It("rejects the hosts of SSH scans the policy refuses, naming the field", func() {
			for _, url := range deniedURLs {
				err := validator.Validate(ctx, newShoot(sourceConfig(fmt.Sprintf(`{"url": %q}`, url))), nil)
				Expect(err).To(MatchError(fmt.Sprintf(`spec.extensions[1].providerConfig.source.url: Invalid value: %q: %s`, url, hostNotAllowed)), url)
			}
		})

		It("admits public hosts on the allowed ports and https URLs", func() {
			for _, url := range allowedURLs {
				Expect(validator.Validate(ctx, newShoot(sourceConfig(fmt.Sprintf(`{"url": %q}`, url))), nil)).To(Succeed(), url)
			}
		})

		// Only the host key scan connects to the repository host from the seed; the shoot's
		// controllers connect from the shoot.
		DescribeTable("admits refused hosts the extension does not scan",
			func(providerConfig string) {
				Expect(validator.Validate(ctx, newShoot(providerConfig, secretResource("git-creds")), nil)).To(Succeed())
			},
			Entry("known host keys", sourceConfig(`{"url": "ssh://git@10.0.0.1/owner/repo", "knownHosts": "10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"}`)),
			Entry("user credentials", sourceConfig(`{"url": "ssh://git@gitea.git.svc.cluster.local/owner/repo", "secretResourceName": "git-creds"}`)),
			Entry("a public repository", sourceConfig(`{"url": "ssh://git@10.0.0.1/owner/repo", "type": "public"}`)),
			Entry("no bootstrap", `{"source": {"url": "ssh://git@10.0.0.1/owner/repo"}, "bootstrap": {"mode": "none"}}`),
		)

		It("rejects a refused host also when known host keys are blank", func() {
			err := validator.Validate(ctx, newShoot(sourceConfig(`{"url": "ssh://git@10.0.0.1/owner/repo", "knownHosts": "  "}`)), nil)
			Expect(err).To(MatchError(ContainSubstring(hostNotAllowed)))
		})

		It("admits what the operator allows, and nothing more", func() {
			validator := NewShootValidator(supported, mustHostPolicy([]string{"10.0.0.0/8"}, []string{"22", "2200"}), defaultLimits, nil)
			Expect(validator.Validate(ctx, newShoot(sourceConfig(`{"url": "ssh://git@10.1.2.3:2200/owner/repo"}`)), nil)).To(Succeed())
			Expect(validator.Validate(ctx, newShoot(sourceConfig(`{"url": "ssh://git@127.0.0.1/owner/repo"}`)), nil)).To(MatchError(ContainSubstring(hostNotAllowed)))
			Expect(validator.Validate(ctx, newShoot(sourceConfig(`{"url": "ssh://git@10.1.2.3:443/owner/repo"}`)), nil)).To(MatchError(ContainSubstring(hostNotAllowed)))
		})

		It("admits unrelated changes of a Shoot whose unchanged repository host is refused", func() {
			old := newShoot(sourceConfig(`{"url": "ssh://git@10.0.0.1/owner/repo"}`))
			shoot := old.DeepCopy()
			shoot.Annotations = map[string]string{"gardener.cloud/operation": "reconcile"}
			Expect(validator.Validate(ctx, shoot, old)).To(Succeed())
		})
	})

	Describe("project ConfigMaps", func() {
		validator := NewConfigMapValidator(supported, defaultHosts, defaultLimits, nil)

		It("rejects the hosts of SSH scans the policy refuses, naming the key", func() {
			for _, url := range deniedURLs {
				err := validator.Validate(ctx, projectConfigMap(map[string]string{"repositoryUrl": url}), nil)
				Expect(err).To(MatchError(fmt.Sprintf(`ConfigMap garden-dev/flux-config: repositoryUrl: Invalid value: %q: %s`, url, hostNotAllowed)), url)
			}
		})

		It("names the field in config.yaml", func() {
			err := validator.Validate(ctx, projectConfigMap(map[string]string{"config.yaml": "source:\n  url: ssh://git@127.0.0.1/owner/repo\n"}), nil)
			Expect(err).To(MatchError(`ConfigMap garden-dev/flux-config: config.yaml: source.url: Invalid value: "ssh://git@127.0.0.1/owner/repo": ` + hostNotAllowed))
		})

		It("admits public hosts on the allowed ports and https URLs", func() {
			for _, url := range allowedURLs {
				Expect(validator.Validate(ctx, projectConfigMap(map[string]string{"repositoryUrl": url}), nil)).To(Succeed(), url)
			}
		})

		DescribeTable("decides with both of its layers",
			func(data map[string]string, message string) {
				err := validator.Validate(ctx, projectConfigMap(data), nil)
				if message == "" {
					Expect(err).NotTo(HaveOccurred())
					return
				}
				Expect(err).To(MatchError(ContainSubstring(message)))
			},
			Entry("a public legacy repository",
				map[string]string{"repositoryUrl": "ssh://git@10.0.0.1/owner/repo", "repositoryType": "public"}, ""),
			Entry("known host keys in config.yaml for the legacy URL",
				map[string]string{"repositoryUrl": "ssh://git@10.0.0.1/owner/repo", "config.yaml": "source:\n  knownHosts: 10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"}, ""),
			Entry("config.yaml replacing a refused legacy URL",
				map[string]string{"repositoryUrl": "ssh://git@10.0.0.1/owner/repo", "config.yaml": "source:\n  url: ssh://git@github.com/owner/repo\n"}, ""),
			Entry("config.yaml making a public legacy repository private",
				map[string]string{"repositoryUrl": "ssh://git@10.0.0.1/owner/repo", "repositoryType": "public", "config.yaml": "source:\n  type: private\n"},
				`ConfigMap garden-dev/flux-config: repositoryUrl: Invalid value: "ssh://git@10.0.0.1/owner/repo": `+hostNotAllowed),
		)
	})
})
