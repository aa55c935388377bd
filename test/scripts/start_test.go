// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package scripts_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The sandbox's dev/config.yaml as hack/sandbox writes it: its host policy allows loopback.
const sandboxConfig = `apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
hostPolicy:
  allowedNetworks:
  - 127.0.0.0/8
  - '::1/128'
  allowedPorts:
  - 1024-65535
`

var _ = Describe("hack/start.sh (make start, make debug)", func() {
	var (
		dir  string
		fake string
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "dev"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "dev", "garden.kubeconfig"), nil, 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "real-garden.kubeconfig"), nil, 0o600)).To(Succeed())
		// Stands in for go and dlv: prints the arguments it was started with, one per line.
		fake = filepath.Join(dir, "bin", "fake")
		writeExecutable(fake, `for a in "$@"; do echo "$a"; done`+"\n")
	})

	// start runs the script in dir as make does, with the environment given as KEY=value.
	start := func(mode string, env ...string) (args []string, stderr string, err error) {
		GinkgoHelper()
		abs, absErr := filepath.Abs(filepath.Join(repoRoot, "hack", "start.sh"))
		Expect(absErr).NotTo(HaveOccurred())
		cmd := exec.Command(abs, mode, "--extra=1") //nolint:gosec // a script of this repository
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GO=" + fake, "DLV=" + fake}
		cmd.Env = append(cmd.Env, env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return strings.Split(strings.TrimSpace(out.String()), "\n"), errOut.String(), err
	}

	writeSandboxConfig := func() {
		GinkgoHelper()
		Expect(os.WriteFile(filepath.Join(dir, "dev", "config.yaml"), []byte(sandboxConfig), 0o600)).To(Succeed())
	}

	It("makes the health check reach a real seed's shoots by their external address, and leaves the sandbox and a set value alone", func() {
		// The fake prints the variable after the arguments.
		writeExecutable(fake, `for a in "$@"; do echo "$a"; done; echo "GARDENER_SHOOT_CLIENT=${GARDENER_SHOOT_CLIENT:-}"`+"\n")
		args, stderr, err := start("run", "KUBECONFIG=seed.kubeconfig", "GARDEN_KUBECONFIG=real-garden.kubeconfig")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("GARDENER_SHOOT_CLIENT=external"))

		args, stderr, err = start("run", "KUBECONFIG=seed.kubeconfig", "GARDEN_KUBECONFIG=real-garden.kubeconfig", "GARDENER_SHOOT_CLIENT=internal")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("GARDENER_SHOOT_CLIENT=internal"))

		args, stderr, err = start("run")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("GARDENER_SHOOT_CLIENT="))
	})

	It("runs against the sandbox without --config when make sandbox-up wrote no configuration", func() {
		args, stderr, err := start("run")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElements("run", "./cmd/gardener-extension-shoot-flux",
			"--kubeconfig=dev/seed.kubeconfig", "--garden-kubeconfig=dev/garden.kubeconfig",
			"--ignore-operation-annotation=true", "--heartbeat-namespace=garden", "--leader-election=false", "--extra=1"))
		Expect(args).NotTo(ContainElement(HavePrefix("--config")))
		Expect(stderr).To(BeEmpty())
	})

	It("passes the sandbox's dev/config.yaml to the sandbox's seed", func() {
		writeSandboxConfig()
		args, stderr, err := start("run")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("--config=dev/config.yaml"))
		Expect(stderr).To(BeEmpty())
	})

	It("does not carry a leftover dev/config.yaml to another seed, and neither reconciles every Extension nor writes a heartbeat there", func() {
		writeSandboxConfig()
		args, stderr, err := start("run", "KUBECONFIG=/seeds/real.kubeconfig", "GARDEN_KUBECONFIG=real-garden.kubeconfig")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).NotTo(ContainElement(HavePrefix("--config")))
		Expect(args).To(ContainElements("--kubeconfig=/seeds/real.kubeconfig", "--garden-kubeconfig=real-garden.kubeconfig",
			"--ignore-operation-annotation=false", "--disable-controllers=heartbeat"))
		Expect(args).NotTo(ContainElement(HavePrefix("--heartbeat-namespace")))
		Expect(args).NotTo(ContainElement("--ignore-operation-annotation=true"))
		Expect(stderr).To(ContainSubstring("WARNING: not passing dev/config.yaml"))
	})

	It("passes a configuration named in CONFIG to another seed, warning when it allows loopback", func() {
		writeSandboxConfig()
		args, stderr, err := start("run", "KUBECONFIG=/seeds/real.kubeconfig", "GARDEN_KUBECONFIG=real-garden.kubeconfig", "CONFIG=dev/config.yaml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("--config=dev/config.yaml"))
		Expect(stderr).To(ContainSubstring("WARNING: dev/config.yaml allows host key scans of loopback addresses"))

		Expect(os.WriteFile(filepath.Join(dir, "operator.yaml"), []byte("hostPolicy:\n  allowedNetworks:\n  - 10.20.0.0/16\n"), 0o600)).To(Succeed())
		args, stderr, err = start("run", "KUBECONFIG=/seeds/real.kubeconfig", "GARDEN_KUBECONFIG=real-garden.kubeconfig", "CONFIG=operator.yaml")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args).To(ContainElement("--config=operator.yaml"))
		Expect(stderr).To(BeEmpty())
	})

	It("stops with a hint when the garden kubeconfig does not exist", func() {
		Expect(os.Remove(filepath.Join(dir, "dev", "garden.kubeconfig"))).To(Succeed())
		_, stderr, err := start("run", "KUBECONFIG=/seeds/real.kubeconfig")
		Expect(err).To(HaveOccurred())
		Expect(stderr).To(ContainSubstring("dev/garden.kubeconfig does not exist: set GARDEN_KUBECONFIG"))
	})

	It("starts dlv with DLV_ARGS before the package and the extension's flags after --", func() {
		args, stderr, err := start("debug", "DLV_ARGS=--headless --listen=:2345 --api-version=2")
		Expect(err).NotTo(HaveOccurred(), stderr)
		Expect(args[:6]).To(Equal([]string{"debug", "--headless", "--listen=:2345", "--api-version=2", "./cmd/gardener-extension-shoot-flux", "--"}))
		Expect(args[6:]).To(ContainElements("--kubeconfig=dev/seed.kubeconfig", "--extra=1"))
	})
})
