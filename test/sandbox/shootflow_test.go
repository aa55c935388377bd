// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// The extension reads the copies of the Secrets a shoot references under the names gardenlet gives
// them; the integration suites rely on the copies being there when the Extension is written.
var _ = Describe("Copying a shoot's referenced resources", func() {
	It("copies them into the seed namespace as gardenlet names them, again on every operation", func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: "creds", Labels: map[string]string{"owner": "me"}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"password": []byte("one")},
		}
		garden := fake.NewClientBuilder().WithScheme(scheme).WithObjects(secret,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: "settings"}, Data: map[string]string{"a": "b"}}).Build()
		seed := fake.NewClientBuilder().WithScheme(scheme).Build()
		h := &ShootHandle{Name: "s", ProjectNamespace: "garden-p", SeedNamespace: "shoot--p--s",
			sandbox: &Sandbox{Garden: &cluster.Cluster{Client: garden}, Seed: &cluster.Cluster{Client: seed}}}
		shoot := &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Resources: []gardencorev1beta1.NamedResourceReference{
			{Name: "creds", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "creds"}},
			{Name: "settings", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}},
		}}}

		Expect(h.deployReferencedResources(ctx, shoot)).To(Succeed())
		copied := &corev1.Secret{}
		Expect(seed.Get(ctx, client.ObjectKey{Namespace: "shoot--p--s", Name: "ref-creds"}, copied)).To(Succeed())
		Expect(copied.Type).To(Equal(corev1.SecretTypeOpaque))
		Expect(copied.Data).To(Equal(secret.Data))
		Expect(copied.Labels).To(BeEmpty(), "the owner's labels stay in the project")
		Expect(seed.Get(ctx, client.ObjectKey{Namespace: "shoot--p--s", Name: "ref-settings"}, &corev1.ConfigMap{})).To(Succeed())

		secret.Data = map[string][]byte{"password": []byte("two")}
		Expect(garden.Update(ctx, secret)).To(Succeed())
		Expect(h.deployReferencedResources(ctx, shoot)).To(Succeed())
		Expect(seed.Get(ctx, client.ObjectKey{Namespace: "shoot--p--s", Name: "ref-creds"}, copied)).To(Succeed())
		Expect(copied.Data).To(HaveKeyWithValue("password", []byte("two")))
	})

	It("fails for a referenced Secret that does not exist", func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		c := fake.NewClientBuilder().WithScheme(scheme).Build()
		h := &ShootHandle{Name: "s", ProjectNamespace: "garden-p", SeedNamespace: "shoot--p--s",
			sandbox: &Sandbox{Garden: &cluster.Cluster{Client: c}, Seed: &cluster.Cluster{Client: c}}}
		shoot := &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Resources: []gardencorev1beta1.NamedResourceReference{
			{Name: "gone", ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "gone"}},
		}}}
		Expect(h.deployReferencedResources(ctx, shoot)).To(MatchError(ContainSubstring("gone")))
	})
})
