// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package manifests_test applies every embedded Flux component set and the kluctl controller to a
// real kube-apiserver, so that a manifest the API server would reject fails here, not in a shoot.
package manifests_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestManifests(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Embedded Manifests Suite")
}

var (
	testEnv *envtest.Environment
	k8s     client.Client
)

var _ = BeforeSuite(func() {
	// make test-integration provides it; a missing one is a broken setup, not a reason to skip.
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS must point at the envtest binaries (hack/build-envtest.sh)")
	testEnv = &envtest.Environment{}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(testEnv.Stop)
	c, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	// Unknown or duplicate fields must fail the apply rather than be dropped with a warning.
	k8s = client.WithFieldValidation(c, metav1.FieldValidationStrict)
})
