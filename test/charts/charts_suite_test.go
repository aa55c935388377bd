// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package charts_test renders the extension chart the way gardenlet does and sends every rendered
// object to a real kube-apiserver with server-side dry-run, so that schema, defaulting and
// admission errors show up here instead of in a seed. It also checks the generated and hand-written
// examples against gardener's own validation.
package charts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

func TestCharts(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Charts Suite")
}

var (
	restCfg  *rest.Config
	k8s      client.Client
	warnings *sandbox.WarningRecorder
	// gardenerDir is the gardener module that go.mod requires; its CRDs and hack scripts are the
	// reference for what a landscape of that version accepts.
	gardenerDir string
	// repoRoot is the root of this repository.
	repoRoot string
)

var _ = BeforeSuite(func() {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/gardener").Output()
	Expect(err).NotTo(HaveOccurred(), "locating the gardener module with go list")
	gardenerDir = strings.TrimSpace(string(out))
	Expect(gardenerDir).To(BeADirectory())

	out, err = exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	Expect(err).NotTo(HaveOccurred(), "locating this module with go list")
	repoRoot = strings.TrimSpace(string(out))

	api, err := cluster.Start("charts", nil, []string{
		filepath.Join(gardenerDir, "example", "seed-crds", "10-crd-autoscaling.k8s.io_verticalpodautoscalers.yaml"),
		filepath.Join(gardenerDir, "example", "operator", "10-crd-operator.gardener.cloud_extensions.yaml"),
		filepath.Join(gardenerDir, "example", "seed-crds", "10-crd-monitoring.coreos.com_prometheusrules.yaml"),
	}, cluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(api.Stop)
	restCfg = api.Config

	// Pod Security warnings for workload templates arrive as HTTP warnings, not errors.
	warnings = &sandbox.WarningRecorder{}
	cfg := rest.CopyConfig(restCfg)
	cfg.WarningHandler = warnings
	k8s, err = client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())

	// The chart's dashboard goes to the seed's garden namespace.
	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "garden"}})).To(Succeed())

	// Seeds provide this PriorityClass for extensions; the Priority admission plugin rejects pods
	// naming a class that does not exist.
	Expect(k8s.Create(context.Background(), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-system-900"},
		Value:      999998900,
	})).To(Succeed())
})

// readRepoFile reads a file relative to the repository root.
func readRepoFile(path string) []byte {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	return data
}
