// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

var _ = Describe("The install steps of docs/operations/installation.md", func() {
	const (
		host     = "127.0.0.1:5000"
		user     = "operator"
		password = "s3cret"
	)

	record := func(ctx SpecContext, doc string) ([]InstallCommand, InstallationSteps, error) {
		steps, err := parseInstallationSteps(doc)
		if err != nil {
			return nil, steps, err
		}
		commands, err := steps.Record(ctx, GinkgoT().TempDir(), host, map[string]string{"REGISTRY_USER": user, "REGISTRY_TOKEN": password})
		return commands, steps, err
	}

	It("are carried out as an operator runs them: publish with the Docker config of step 1, the chart pull Secret, the registration", func(ctx SpecContext) {
		root, err := RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		doc, err := os.ReadFile(filepath.Join(root, InstallationDoc))
		Expect(err).NotTo(HaveOccurred())
		commands, steps, err := record(ctx, string(doc))
		Expect(err).NotTo(HaveOccurred())
		Expect(steps.GardenRBAC).To(Equal(GardenRBACFile))
		Expect(steps.Variables).To(ContainElements(publishVariables))

		scheme := runtime.NewScheme()
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		garden := fake.NewClientBuilder().WithScheme(scheme).Build()
		s := &Sandbox{Garden: &cluster.Cluster{Client: garden}}
		pullSecret, err := chartPullSecretOf(commands)
		Expect(err).NotTo(HaveOccurred())
		installDir := GinkgoT().TempDir()

		var (
			published   map[string]string
			credentials *authn.AuthConfig
		)
		files, err := s.runInstallation(ctx, commands, installDir, map[string]string{"INSTALL_DIR": installDir, "CHART_PULL_SECRET": pullSecret},
			func(vars map[string]string, auth authn.Authenticator) error {
				published = vars
				var err error
				credentials, err = auth.Authorization()
				Expect(err).NotTo(HaveOccurred())
				return os.WriteFile(filepath.Join(vars["INSTALL_DIR"], "controller-registration.yaml"), []byte("kind: ControllerRegistration\n"), 0o644)
			})
		Expect(err).NotTo(HaveOccurred())
		Expect(published).To(HaveKeyWithValue("REGISTRY", host+"/gardener"))
		Expect(credentials).To(Equal(&authn.AuthConfig{Username: user, Password: password}), "make publish pushes with the Docker config step 1 wrote")
		Expect(published).To(HaveKeyWithValue("CHART_PULL_SECRET", pullSecret))
		Expect(files).To(Equal([]string{filepath.Join(installDir, "controller-registration.yaml")}))

		secret := &corev1.Secret{}
		Expect(garden.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: pullSecret}, secret)).To(Succeed())
		Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		Expect(secret.Labels).To(HaveKeyWithValue(v1beta1constants.GardenRole, v1beta1constants.GardenRoleHelmPullSecret))
		var config struct {
			Auths map[string]struct{ Username, Password string } `json:"auths"`
		}
		Expect(json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &config)).To(Succeed())
		Expect(config.Auths).To(HaveKeyWithValue(host, struct{ Username, Password string }{user, password}))
	})

	DescribeTable("refuse a step the sandbox cannot carry out, naming it",
		func(ctx SpecContext, doc, message string) {
			commands, _, err := record(ctx, doc)
			if err == nil {
				s := &Sandbox{Garden: &cluster.Cluster{Client: fake.NewClientBuilder().Build()}}
				_, err = s.runInstallation(ctx, commands, GinkgoT().TempDir(), nil, func(map[string]string, authn.Authenticator) error { return nil })
			}
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("no section", "# Installation\n", `no section "## From zero to a pinned install"`),
		Entry("no make publish", stepsDoc("echo hello"), "no step runs `make publish REGISTRY=...`"),
		Entry("an unknown variable", stepsDoc(loginBlock+"make publish REGISTRY=registry.example.com/g FOO=bar"), `"FOO=bar" of "make publish REGISTRY=127.0.0.1:5000/g FOO=bar" is not a variable of make publish`),
		Entry("another make target", stepsDoc(loginBlock+"make publish REGISTRY=registry.example.com/g\nmake push"), "only `make publish VAR=value...` is carried out"),
		Entry("publishing without a login", stepsDoc("make publish REGISTRY=registry.example.com/g"), "make publish runs without DOCKER_CONFIG"),
		Entry("a kubectl flag", stepsDoc(loginBlock+"make publish REGISTRY=registry.example.com/g\nkubectl apply --server-side -f bin/install/x.yaml"), `flag "--server-side"`),
		Entry("a file outside the install directory", stepsDoc(loginBlock+"make publish REGISTRY=registry.example.com/g\nkubectl apply -f /etc/x.yaml"), "applies a file outside bin/install"),
		Entry("a registry without credentials", stepsDoc(loginBlock+"make publish REGISTRY=registry.other.example/g"), "the Docker config has no credentials for "+host),
		Entry("nothing applied", stepsDoc(loginBlock+"make publish REGISTRY=registry.example.com/g"), "no step applies what make publish wrote"),
		Entry("a failing step", stepsDoc("false\nmake publish REGISTRY=registry.example.com/g"), "the steps of docs/operations/installation.md failed"),
	)
})

// loginBlock writes a Docker config as step 1 of the page does.
const loginBlock = `export DOCKER_CONFIG=$(mktemp -d)
printf '{"auths":{"registry.example.com":{"auth":"%s"}}}' "$(printf '%s:%s' "$REGISTRY_USER" "$REGISTRY_TOKEN" | base64 -w0)" > "$DOCKER_CONFIG/config.json"
`

// stepsDoc is a page whose only step runs script, with the garden permissions file named.
func stepsDoc(script string) string {
	return "# Installation\n\n## From zero to a pinned install\n\n### 1. Do it\n\n" + withoutOperator +
		", run:\n\n```shell\n" + script + "\n```\n\nThen give the extension its garden permissions (`" + GardenRBACFile + "`).\n"
}
