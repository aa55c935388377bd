// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package publish_test runs `make publish` (hack/publish) against the in-process registry of
// test/ociregistry, then installs what it wrote the way gardenlet and gardener-operator do: pulls
// the charts by the refs of the written ControllerDeployment and operator Extension with gardener's
// chart puller, renders them with the written values and checks that the pods run the pushed
// images.
package publish_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/ociregistry"
)

func TestPublish(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Publish Suite")
}

const (
	// version is what is published: not the VERSION file, so that the test proves the override
	// reaches every tag, chart version and binary.
	version = "v9.9.9-publish-test"
	// registryPath is below the registry's host, as an operator's registry usually is.
	registryPath = "landscape/gardener"
	// pullSecretName is the chart pull Secret the written objects name (CHART_PULL_SECRET).
	pullSecretName = "shoot-flux-charts"
	username       = "publisher"
	password       = "s3cret"
)

// publishTimeout bounds `make publish`: it builds both binaries, which takes minutes on a cold build
// cache.
var publishTimeout = 30 * time.Minute

var (
	registry *ociregistry.Server
	// repoRoot is the root of this repository.
	repoRoot string
	// installDir holds what `make publish` wrote.
	installDir string
	// dockerConfig is the Docker config with the registry's credentials.
	dockerConfig []byte
)

var _ = BeforeSuite(func(ctx SpecContext) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	Expect(err).NotTo(HaveOccurred(), "locating this module with go list")
	repoRoot = strings.TrimSpace(string(out))

	registry, err = ociregistry.Start(username, password)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(registry.Close)

	// hack/publish reads the credentials from the Docker config, as after `docker login`.
	dockerConfig, err = json.Marshal(map[string]any{"auths": map[string]any{
		registry.Host(): map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(username + ":" + password))},
	}})
	Expect(err).NotTo(HaveOccurred())
	configDir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(configDir, "config.json"), dockerConfig, 0o600)).To(Succeed())
	installDir = GinkgoT().TempDir()

	cmdCtx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	cmd := exec.CommandContext(cmdCtx, "make", "--no-print-directory", "publish",
		"REGISTRY="+registry.Host()+"/"+registryPath,
		"VERSION="+version,
		"BASE_IMAGE=scratch",
		// The host's platform, so that the spec can run the binary it finds in the image.
		"PLATFORM="+runtime.GOOS+"/"+runtime.GOARCH,
		"INSTALL_DIR="+installDir,
		"CHART_PULL_SECRET="+pullSecretName,
	)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+configDir)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	start := time.Now()
	Expect(cmd.Run()).To(Succeed(), "make publish")
	GinkgoWriter.Printf("make publish took %s\n", time.Since(start).Round(time.Second))
}, NodeTimeout(publishTimeout+time.Minute))
