// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

var _ = Describe("Waiting for a restore", func() {
	const namespace = "shoot--p--s"

	// The extension's stand-in plays gardener's extension library after a migration: a second
	// migrate run from a stale cache removes the operation annotation once the wait watches, then a
	// restore request is answered with a restore.
	It("asks again when a late migrate run drops the restore request, as gardenlet's flow retries", func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		watching := make(chan struct{})
		var once sync.Once
		c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(
			&extensionsv1alpha1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: namespace},
				Spec: extensionsv1alpha1.ClusterSpec{
					CloudProfile: runtime.RawExtension{Raw: []byte("{}")},
					Seed:         &runtime.RawExtension{Raw: []byte("{}")},
					Shoot:        runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"s","namespace":"garden-p"}}`)},
				},
			},
			&extensionsv1alpha1.Extension{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ExtensionName},
				Status: extensionsv1alpha1.ExtensionStatus{DefaultStatus: extensionsv1alpha1.DefaultStatus{
					LastOperation: &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeMigrate, State: gardencorev1beta1.LastOperationStateSucceeded},
				}},
			},
		).Build(), interceptor.Funcs{
			Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
				w, err := c.Watch(ctx, list, opts...)
				if err != nil {
					return nil, err
				}
				// A watch of the real API server ends with the request's context.
				go func() {
					<-ctx.Done()
					w.Stop()
				}()
				once.Do(func() { close(watching) })
				return w, nil
			},
		})
		gardenScheme := runtime.NewScheme()
		Expect(gardencorev1beta1.AddToScheme(gardenScheme)).To(Succeed())
		shoot := &gardencorev1beta1.Shoot{
			ObjectMeta: metav1.ObjectMeta{Namespace: "garden-p", Name: "s"},
			Status: gardencorev1beta1.ShootStatus{LastOperation: &gardencorev1beta1.LastOperation{
				Type: gardencorev1beta1.LastOperationTypeRestore, State: gardencorev1beta1.LastOperationStateProcessing,
			}},
		}
		garden := fake.NewClientBuilder().WithScheme(gardenScheme).WithObjects(shoot).WithStatusSubresource(shoot).Build()
		h := &ShootHandle{SeedNamespace: namespace, ProjectNamespace: "garden-p", Name: "s",
			sandbox: &Sandbox{Seed: &cluster.Cluster{Client: c}, Garden: &cluster.Cluster{Client: garden}}}
		key := h.extensionKey()
		update := func(mutate func(*extensionsv1alpha1.Extension)) {
			GinkgoHelper()
			ex := &extensionsv1alpha1.Extension{}
			Expect(c.Get(ctx, key, ex)).To(Succeed())
			mutate(ex)
			Expect(c.Update(ctx, ex)).To(Succeed())
		}

		// The request gardenlet's restore step writes last.
		Expect(h.annotateExtension(ctx, v1beta1constants.GardenerOperationRestore)).To(Succeed())
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Eventually(watching).WithTimeout(5 * time.Second).Should(BeClosed())
			update(func(ex *extensionsv1alpha1.Extension) { delete(ex.Annotations, v1beta1constants.GardenerOperation) })
			Eventually(func(g Gomega) {
				ex := &extensionsv1alpha1.Extension{}
				g.Expect(c.Get(ctx, key, ex)).To(Succeed())
				g.Expect(ex.Annotations).To(HaveKeyWithValue(v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationRestore))
			}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
			update(func(ex *extensionsv1alpha1.Extension) {
				ex.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeRestore, State: gardencorev1beta1.LastOperationStateProcessing}
			})
			update(func(ex *extensionsv1alpha1.Extension) {
				ex.Status.LastOperation.State = gardencorev1beta1.LastOperationStateSucceeded
				delete(ex.Annotations, v1beta1constants.GardenerOperation)
			})
		}()

		ex, err := h.WaitRestored(ctx, 10*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(ex.Status.LastOperation.Type).To(Equal(gardencorev1beta1.LastOperationTypeRestore))
		Eventually(done).Should(BeClosed())
		By("ending the Shoot's operation as gardenlet's flow does once the Extension answered")
		Expect(garden.Get(ctx, client.ObjectKeyFromObject(shoot), shoot)).To(Succeed())
		Expect(shoot.Status.LastOperation.State).To(Equal(gardencorev1beta1.LastOperationStateSucceeded))
	})

	It("does not ask again while the restore request stands or a restore runs", func() {
		ex := &extensionsv1alpha1.Extension{Status: extensionsv1alpha1.ExtensionStatus{DefaultStatus: extensionsv1alpha1.DefaultStatus{
			LastOperation: &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeMigrate, State: gardencorev1beta1.LastOperationStateSucceeded},
		}}}
		Expect(restoreRequestDropped(ex)).To(BeTrue())
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationRestore)
		Expect(restoreRequestDropped(ex)).To(BeFalse())
		ex.Annotations = nil
		ex.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeRestore, State: gardencorev1beta1.LastOperationStateProcessing}
		Expect(restoreRequestDropped(ex)).To(BeFalse())
	})
})
