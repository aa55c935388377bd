// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package shootclient_test

import (
	"context"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

var _ = Describe("NewWithOptions", func() {
	It("refuses to build a client that would discover the shoot's API", func() {
		seed := fake.NewClientBuilder().Build()
		_, err := NewWithOptions(context.Background(), seed, "shoot--foo--bar", extensionsconfigv1alpha1.RESTOptions{}, client.Options{})
		Expect(err).To(MatchError(ContainSubstring("static REST mapper")))
	})
})
