// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

var _ = Describe("ConfigMapHash", func() {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flux-config", Namespace: "garden-foo"}, Data: data}
	}

	It("is empty without a ConfigMap and stable for equal data", func() {
		Expect(fluxconfig.ConfigMapHash(nil)).To(BeEmpty())
		a := cm(map[string]string{"repositoryUrl": "ssh://git@example.com/a.git", "repositoryBranch": "main"})
		b := cm(map[string]string{"repositoryBranch": "main", "repositoryUrl": "ssh://git@example.com/a.git"})
		b.ResourceVersion, b.Labels = "42", map[string]string{"x": "y"}
		Expect(fluxconfig.ConfigMapHash(a)).To(HaveLen(16))
		Expect(fluxconfig.ConfigMapHash(a)).To(Equal(fluxconfig.ConfigMapHash(b)))
		Expect(fluxconfig.ConfigMapHash(cm(nil))).NotTo(BeEmpty())
	})

	It("changes with any key or value", func() {
		base := fluxconfig.ConfigMapHash(cm(map[string]string{"repositoryBranch": "main"}))
		Expect(fluxconfig.ConfigMapHash(cm(map[string]string{"repositoryBranch": "next"}))).NotTo(Equal(base))
		Expect(fluxconfig.ConfigMapHash(cm(map[string]string{"repositoryBranch": "main", "fluxVersion": "v2.9.5"}))).NotTo(Equal(base))
		Expect(fluxconfig.ConfigMapHash(cm(map[string]string{}))).NotTo(Equal(base))
		// Moving text between key and value must not collide.
		Expect(fluxconfig.ConfigMapHash(cm(map[string]string{"ab": "c"}))).NotTo(Equal(fluxconfig.ConfigMapHash(cm(map[string]string{"a": "bc"}))))
	})
})
