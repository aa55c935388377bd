// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

var _ = Describe("Apply failures", func() {
	const (
		namespace = "shoot--residue--dev"
		name      = "extension-shoot-flux-bootstrap"
		denied    = `error during apply of object "kluctl.io/v1beta1/KluctlDeployment/kluctl-system/shoot-flux-bootstrap": admission webhook "deny" denied the request`
	)
	var (
		ctx context.Context
		c   client.Client
		// failUpdate, when set, is what the API server answers to an update of the ManagedResource.
		failUpdate func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error
	)

	BeforeEach(func() {
		ctx = context.Background()
		failUpdate = nil
		scheme := runtime.NewScheme()
		Expect(resourcesv1alpha1.AddToScheme(scheme)).To(Succeed())
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		base := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&resourcesv1alpha1.ManagedResource{}).Build()
		// The fake client does not count generations; like the API server, this one counts spec
		// changes of ManagedResources.
		c = interceptor.NewClient(base, interceptor.Funcs{
			Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				mr, ok := obj.(*resourcesv1alpha1.ManagedResource)
				if !ok {
					return cl.Update(ctx, obj, opts...)
				}
				if failUpdate != nil {
					return failUpdate(ctx, cl, obj, opts...)
				}
				stored := &resourcesv1alpha1.ManagedResource{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(mr), stored); err != nil {
					return err
				}
				mr.Generation = stored.Generation
				if !apiequality.Semantic.DeepEqual(stored.Spec, mr.Spec) {
					mr.Generation++
				}
				return cl.Update(ctx, mr, opts...)
			},
			Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if mr, ok := obj.(*resourcesv1alpha1.ManagedResource); ok {
					mr.Generation = 1
				}
				return cl.Create(ctx, obj, opts...)
			},
		})
		DeferCleanup(func(old time.Duration) { managedresource.PollInterval = old }, managedresource.PollInterval)
		managedresource.PollInterval = 10 * time.Millisecond
		DeferCleanup(func(old time.Duration) { managedresource.ApplyFailedGrace = old }, managedresource.ApplyFailedGrace)
		managedresource.ApplyFailedGrace = 100 * time.Millisecond
	})

	component := func(data string) *managedresource.ManagedResource {
		return &managedresource.ManagedResource{
			Client:    c,
			Reader:    c,
			Namespace: namespace,
			Name:      name,
			Data:      func() (map[string][]byte, error) { return map[string][]byte{"objects.yaml": []byte(data)}, nil },
			Timeouts:  managedresource.Timeouts{Applied: 2 * time.Second, Deleted: time.Second},
		}
	}
	get := func() *resourcesv1alpha1.ManagedResource {
		GinkgoHelper()
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		return mr
	}
	applied := func(mr *resourcesv1alpha1.ManagedResource) gardencorev1beta1.Condition {
		return v1beta1helper.GetOrInitConditionWithClock(clock.RealClock{}, mr.Status.Conditions, resourcesv1alpha1.ResourcesApplied)
	}
	// resourceManagerApplies plays gardener-resource-manager applying the current generation.
	resourceManagerApplies := func() {
		GinkgoHelper()
		mr := get()
		condition := v1beta1helper.UpdatedConditionWithClock(clock.RealClock{}, applied(mr), gardencorev1beta1.ConditionTrue, resourcesv1alpha1.ConditionApplySucceeded, "All resources are applied.")
		mr.Status.Conditions = v1beta1helper.MergeConditions(mr.Status.Conditions, condition)
		mr.Status.ObservedGeneration = mr.Generation
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
	}
	// resourceManagerFails plays gardener-resource-manager failing to apply content other than the
	// one it applied last, at the time of clk, as its managedresource reconciler writes it: the
	// condition goes Progressing, keeping the reason and message of a failure before, and then False
	// with the apply error; the observed generation stays.
	resourceManagerFails := func(clk clock.Clock) {
		GinkgoHelper()
		mr := get()
		condition := applied(mr)
		reason, message := resourcesv1alpha1.ConditionApplyProgressing, "The resources are currently being reconciled."
		if condition.Reason == resourcesv1alpha1.ConditionApplyFailed {
			reason, message = condition.Reason, condition.Message
		}
		condition = v1beta1helper.UpdatedConditionWithClock(clk, condition, gardencorev1beta1.ConditionProgressing, reason, message)
		mr.Status.Conditions = v1beta1helper.MergeConditions(mr.Status.Conditions, condition)
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
		condition = v1beta1helper.UpdatedConditionWithClock(clk, condition, gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionApplyFailed, denied)
		mr.Status.Conditions = v1beta1helper.MergeConditions(mr.Status.Conditions, condition)
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
	}

	// Issue 37: an admission policy of the shoot's owner denies every change of the bootstrap, and
	// the project admin keeps changing it. The resource manager reports each failure with the
	// message of the one before, so its condition's lastUpdateTime stays where the first failure
	// put it.
	It("reports a failure of new content at once although its message is the one of the failure before", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		resourceManagerApplies()
		Expect(m.Wait(ctx)).To(Succeed())

		By("failing the first change, a minute ago")
		m = component("b")
		Expect(m.Deploy(ctx)).To(Succeed())
		resourceManagerFails(testclock.NewFakeClock(time.Now().Add(-time.Minute)))
		reported := applied(get())

		By("failing the next change with the same message")
		m = component("c")
		Expect(m.Deploy(ctx)).To(Succeed())
		resourceManagerFails(clock.RealClock{})
		mr := get()
		Expect(applied(mr).LastUpdateTime).To(Equal(reported.LastUpdateTime), "the resource manager's condition does not tell the two failures apart")
		Expect(mr.Status.ObservedGeneration).To(BeNumerically("<", mr.Generation))

		err := m.Wait(ctx)
		var failed *managedresource.ApplyFailedError
		Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
		Expect(failed.Message).To(Equal(denied))
	})

	It("does not take the failure of the content before for new content the resource manager has not tried yet", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		resourceManagerFails(clock.RealClock{})

		m = component("b")
		Expect(m.Deploy(ctx)).To(Succeed())
		err := m.Wait(ctx)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
		Expect(metrics.Classify(ctx, err)).To(Equal(metrics.ClassTimeout))
	})

	It("does not report the failure of new content that the resource manager applies within the grace period", func() {
		managedresource.ApplyFailedGrace = time.Minute
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		resourceManagerFails(clock.RealClock{})
		go func() {
			defer GinkgoRecover()
			time.Sleep(100 * time.Millisecond)
			resourceManagerApplies()
		}()
		Expect(m.Wait(ctx)).To(Succeed())
	})

	// Several writers of one shoot's objects (shoots sharing an API server in the sandbox) make the
	// resource manager fail on a conflict with one object, then another, while it retries.
	It("keeps waiting while the resource manager's failure message keeps changing, and sees it apply", func() {
		managedresource.ApplyFailedGrace = 300 * time.Millisecond
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			for i := range 10 {
				mr := get()
				condition := v1beta1helper.UpdatedConditionWithClock(clock.RealClock{}, applied(mr), gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionApplyFailed,
					fmt.Sprintf("Operation cannot be fulfilled on namespaces %q: the object has been modified", fmt.Sprintf("ns-%d", i)))
				mr.Status.Conditions = v1beta1helper.MergeConditions(mr.Status.Conditions, condition)
				Expect(c.Status().Update(ctx, mr)).To(Succeed())
				time.Sleep(100 * time.Millisecond)
			}
			resourceManagerApplies()
		}()
		Expect(m.Wait(ctx)).To(Succeed())
	})

	It("waits out a conflict that keeps its message, which is the resource manager racing another writer, not a failure", func() {
		managedresource.ApplyFailedGrace = 100 * time.Millisecond
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		mr := get()
		condition := v1beta1helper.UpdatedConditionWithClock(clock.RealClock{}, applied(mr), gardencorev1beta1.ConditionFalse, resourcesv1alpha1.ConditionApplyFailed,
			`Operation cannot be fulfilled on namespaces "flux-system": the object has been modified; please apply your changes to the latest version and try again`)
		mr.Status.Conditions = v1beta1helper.MergeConditions(mr.Status.Conditions, condition)
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			time.Sleep(10 * managedresource.ApplyFailedGrace)
			resourceManagerApplies()
		}()
		Expect(m.Wait(ctx)).To(Succeed())
	})

	Describe("a failed write of the ManagedResource", func() {
		secrets := func() []string {
			GinkgoHelper()
			list := &corev1.SecretList{}
			Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
			var names []string
			for _, s := range list.Items {
				names = append(names, s.Name)
			}
			return names
		}
		referenced := func() []string {
			var names []string
			for _, ref := range get().Spec.SecretRefs {
				names = append(names, ref.Name)
			}
			return names
		}
		conflict := func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: resourcesv1alpha1.SchemeGroupVersion.Group, Resource: "managedresources"}, name, errors.New("the object has been modified"))
		}

		BeforeEach(func() {
			Expect(component("a").Deploy(ctx)).To(Succeed())
			resourceManagerApplies()
			Expect(secrets()).To(HaveLen(1))
		})

		It("removes the new Secret when the API server refuses the update that would reference it", func() {
			failUpdate = conflict
			err := component("b").Deploy(ctx)
			Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
			Expect(secrets()).To(Equal(referenced()), "no Secret is left that nothing references")
		})

		It("keeps the new Secret when the update may have gone through", func() {
			failUpdate = func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := cl.Update(ctx, obj, opts...); err != nil {
					return err
				}
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			}
			Expect(component("b").Deploy(ctx)).To(HaveOccurred())
			Expect(referenced()).To(HaveLen(1))
			Expect(secrets()).To(ContainElements(referenced()), "the ManagedResource references the new Secret")
			Expect(secrets()).To(HaveLen(2))
		})

		It("keeps a Secret it did not create", func() {
			Expect(component("b").Deploy(ctx)).To(Succeed())
			Expect(secrets()).To(HaveLen(2), "the Secret of content a stays until DeleteSuperseded")

			failUpdate = conflict
			Expect(component("a").Deploy(ctx)).To(HaveOccurred())
			Expect(secrets()).To(HaveLen(2), "content a's Secret existed before the write")
		})

		It("removes the superseded Secret in DeployAndWait also when the new content fails to apply", func() {
			go func() {
				defer GinkgoRecover()
				// The resource manager tries the new content once the ManagedResource references it.
				Eventually(func(g Gomega) {
					mr := &resourcesv1alpha1.ManagedResource{}
					g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
					g.Expect(mr.Generation).To(BeEquivalentTo(2))
				}).WithTimeout(time.Second).WithPolling(5 * time.Millisecond).Should(Succeed())
				resourceManagerFails(clock.RealClock{})
			}()
			err := component("b").DeployAndWait(ctx, false)
			var failed *managedresource.ApplyFailedError
			Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
			Expect(secrets()).To(Equal(referenced()), "only the new content's Secret stays")
		})

		It("waits in DestroyAndWait until the resource manager released the ManagedResource, unless the shoot is hibernated", func() {
			// The resource manager's finalizer stays while it deletes the shoot's objects.
			mr := get()
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(c.Update(ctx, mr)).To(Succeed())
			Expect(component("a").DestroyAndWait(ctx, true)).To(Succeed(), "nobody deletes while the shoot sleeps")
			Expect(component("a").DestroyAndWait(ctx, false)).To(MatchError(ContainSubstring(name)), "the objects are still there")

			mr = get()
			mr.Finalizers = nil
			Expect(c.Update(ctx, mr)).To(Succeed())
			Expect(component("a").DestroyAndWait(ctx, false)).To(Succeed())
		})

		It("does not wait in DeployAndWait when the shoot is hibernated, and removes the superseded Secret", func() {
			Expect(component("b").DeployAndWait(ctx, true)).To(Succeed(), "nobody applies while the shoot sleeps")
			Expect(secrets()).To(Equal(referenced()))
		})
	})
})
