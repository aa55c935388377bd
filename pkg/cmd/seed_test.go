// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cmd_test

import (
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
)

var _ = Describe("ApplySeedCacheOptions", func() {
	It("keeps Secrets out of the cache and managedFields out of cached objects", func() {
		opts := manager.Options{}
		ApplySeedCacheOptions(&opts)

		Expect(opts.Client.Cache).NotTo(BeNil())
		Expect(opts.Client.Cache.DisableFor).To(ContainElement(BeAssignableToTypeOf(&corev1.Secret{})))

		Expect(opts.Cache.DefaultTransform).NotTo(BeNil())
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{
			Name:          "shoot-flux",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "gardenlet", Operation: metav1.ManagedFieldsOperationUpdate}},
		}}
		out, err := opts.Cache.DefaultTransform(ex)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.(*extensionsv1alpha1.Extension).ManagedFields).To(BeNil())
		Expect(out.(*extensionsv1alpha1.Extension).Name).To(Equal("shoot-flux"))
	})
})
