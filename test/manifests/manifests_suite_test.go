// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package manifests_test applies every embedded Flux component set and the kluctl controller to a
// real kube-apiserver, so that a manifest the API server would reject fails here, not in a shoot.
package manifests_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

func TestManifests(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Embedded Manifests Suite")
}

var k8s client.Client

var _ = BeforeSuite(func() {
	api, err := cluster.Start("manifests", nil, nil, cluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(api.Stop)
	// Unknown or duplicate fields must fail the apply rather than be dropped with a warning.
	k8s = client.WithFieldValidation(api.Client, metav1.FieldValidationStrict)
})
