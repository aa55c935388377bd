// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource_test

import (
	"context"
	"errors"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

var _ = Describe("WaitUntilApplied", func() {
	const (
		namespace = "shoot--foo--bar"
		name      = "extension-shoot-flux-bootstrap"
	)
	var (
		ctx    context.Context
		reader client.Client
	)

	// appliedMR is a ManagedResource that gardener-resource-manager applied, referencing secret.
	appliedMR := func(secret string) *resourcesv1alpha1.ManagedResource {
		return &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: secret}}},
			Status: resourcesv1alpha1.ManagedResourceStatus{
				ObservedGeneration: 1,
				Conditions: []gardencorev1beta1.Condition{{
					Type:   resourcesv1alpha1.ResourcesApplied,
					Status: gardencorev1beta1.ConditionTrue,
				}},
			},
		}
	}

	BeforeEach(func() {
		ctx = context.Background()
		scheme := runtime.NewScheme()
		Expect(resourcesv1alpha1.AddToScheme(scheme)).To(Succeed())
		reader = fake.NewClientBuilder().WithScheme(scheme).Build()
		DeferCleanup(func(old time.Duration) { managedresource.PollInterval = old }, managedresource.PollInterval)
		managedresource.PollInterval = 10 * time.Millisecond
	})

	It("returns once the ManagedResource with the written Secret is applied", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-new"))).To(Succeed())
		Expect(managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new"}, time.Second)).To(Succeed())
	})

	// A cache that has not seen the write yet returns the previous generation, which was applied.
	It("does not take the applied previous generation from a stale cache for the new one", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new"}, 100*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("does not reference Secret managedresource-" + name + "-new")))
	})

	// failedMR is a ManagedResource whose new generation gardener-resource-manager cannot apply:
	// it keeps the old observed generation and reports ApplyFailed.
	failedMR := func(secret string, reported time.Time) *resourcesv1alpha1.ManagedResource {
		mr := appliedMR(secret)
		mr.Generation = 2
		mr.Status.Conditions = []gardencorev1beta1.Condition{{
			Type:           resourcesv1alpha1.ResourcesApplied,
			Status:         gardencorev1beta1.ConditionFalse,
			Reason:         resourcesv1alpha1.ConditionApplyFailed,
			Message:        `Could not apply all new resources: namespaces "apps" not found`,
			LastUpdateTime: metav1.NewTime(reported),
		}}
		return mr
	}

	It("ends with the resource manager's message when the apply keeps failing", func() {
		DeferCleanup(func(old time.Duration) { managedresource.ApplyFailedGrace = old }, managedresource.ApplyFailedGrace)
		managedresource.ApplyFailedGrace = 300 * time.Millisecond
		written := time.Now()
		mr := failedMR("managedresource-"+name+"-new", written.Add(time.Second))
		status := mr.Status
		mr.Status = resourcesv1alpha1.ManagedResourceStatus{}
		Expect(reader.Create(ctx, mr)).To(Succeed())
		write := managedresource.Write{SecretName: "managedresource-" + name + "-new", At: written, Generation: mr.Generation, ResourceVersion: mr.ResourceVersion}
		// The resource manager reports the failure after the write.
		mr.Status = status
		Expect(reader.Update(ctx, mr)).To(Succeed())
		start := time.Now()
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, write, time.Minute)
		var failed *managedresource.ApplyFailedError
		Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
		Expect(err).To(MatchError(ContainSubstring(`namespaces "apps" not found`)))
		Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "the wait must not run into its timeout")
	})

	It("does not take a failure reported before the write for the new generation", func() {
		DeferCleanup(func(old time.Duration) { managedresource.ApplyFailedGrace = old }, managedresource.ApplyFailedGrace)
		managedresource.ApplyFailedGrace = 0
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(-time.Hour)))).To(Succeed())
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new", At: written}, 200*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
	})

	// A retry that writes the same content again changes nothing, so the resource manager does not
	// try again: waiting for a new report would hold the worker until the timeout.
	It("ends at once with the message of a failure of unchanged content that was reported before the write", func() {
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(-time.Hour)))).To(Succeed())
		start := time.Now()
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new", At: written, UnchangedGeneration: 2}, 10*time.Second)
		var failed *managedresource.ApplyFailedError
		Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
		Expect(failed.Message).To(ContainSubstring(`namespaces "apps" not found`))
		Expect(time.Since(start)).To(BeNumerically("<", managedresource.ApplyFailedGrace), "a failure that lasts for an hour is not waited out again")
	})

	It("waits out a failure of unchanged content that was reported just now", func() {
		DeferCleanup(func(old time.Duration) { managedresource.ApplyFailedGrace = old }, managedresource.ApplyFailedGrace)
		managedresource.ApplyFailedGrace = time.Minute
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(-time.Second)))).To(Succeed())
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new", At: written, UnchangedGeneration: 2}, 200*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
	})

	It("does not take a failure reported before the write when the generation changed since", func() {
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(-time.Hour)))).To(Succeed())
		err := managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{SecretName: "managedresource-" + name + "-new", At: written, UnchangedGeneration: 1}, 200*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
	})

	It("only checks the applied condition without a Secret name", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		Expect(managedresource.WaitUntilApplied(ctx, reader, namespace, name, managedresource.Write{}, time.Second)).To(Succeed())
	})
})

var _ = Describe("ManagedResource", func() {
	const (
		namespace = "shoot--foo--bar"
		name      = "extension-shoot-flux-bootstrap"
	)
	var (
		ctx context.Context
		c   client.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		scheme := runtime.NewScheme()
		Expect(resourcesv1alpha1.AddToScheme(scheme)).To(Succeed())
		Expect(corev1.AddToScheme(scheme)).To(Succeed())
		c = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&resourcesv1alpha1.ManagedResource{}).Build()
		DeferCleanup(func(old time.Duration) { managedresource.PollInterval = old }, managedresource.PollInterval)
		managedresource.PollInterval = 10 * time.Millisecond
	})

	component := func(data string) *managedresource.ManagedResource {
		return &managedresource.ManagedResource{
			Client:    c,
			Reader:    c,
			Namespace: namespace,
			Name:      name,
			Data:      func() (map[string][]byte, error) { return map[string][]byte{"objects.yaml": []byte(data)}, nil },
			Timeouts:  managedresource.Timeouts{Applied: 300 * time.Millisecond, Deleted: time.Second},
		}
	}

	// failDeployed makes the deployed ManagedResource look like gardener-resource-manager has been
	// failing to apply its first generation for an hour: it records no observed generation then.
	// The fake client does not count generations, so the generation is set here.
	failDeployed := func() {
		GinkgoHelper()
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		mr.Generation = 1
		Expect(c.Update(ctx, mr)).To(Succeed())
		mr.Status.Conditions = []gardencorev1beta1.Condition{{
			Type:           resourcesv1alpha1.ResourcesApplied,
			Status:         gardencorev1beta1.ConditionFalse,
			Reason:         resourcesv1alpha1.ConditionApplyFailed,
			Message:        `error during apply of object "v1/Secret/does-not-exist/pull": namespaces "does-not-exist" not found`,
			LastUpdateTime: metav1.NewTime(time.Now().Add(-time.Hour)),
		}}
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
	}

	It("ends the wait of a retry that deploys the same failing content with the resource manager's message", func() {
		Expect(component("a").Deploy(ctx)).To(Succeed())
		failDeployed()

		retry := component("a")
		Expect(retry.Deploy(ctx)).To(Succeed())
		err := retry.Wait(ctx)
		var failed *managedresource.ApplyFailedError
		Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
		Expect(failed.Message).To(ContainSubstring(`namespaces "does-not-exist" not found`))
	})

	It("does not take the failure of the previous content for new content", func() {
		Expect(component("a").Deploy(ctx)).To(Succeed())
		failDeployed()

		changed := component("b")
		Expect(changed.Deploy(ctx)).To(Succeed())
		err := changed.Wait(ctx)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
		Expect(metrics.Classify(ctx, err)).To(Equal(metrics.ClassTimeout), "the wait ran out of time: %v", err)
	})

	It("counts its writes of the ManagedResource and its Secrets", func() {
		writes := func(kind, verb string) float64 {
			GinkgoHelper()
			families, err := ctrlmetrics.Registry.Gather()
			Expect(err).NotTo(HaveOccurred())
			var sum float64
			for _, f := range families {
				if f.GetName() != "shoot_flux_managed_resource_writes_total" {
					continue
				}
				for _, m := range f.GetMetric() {
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					if labels["managed_resource"] == name && labels["kind"] == kind && (verb == "" || labels["verb"] == verb) {
						sum += m.GetCounter().GetValue()
					}
				}
			}
			return sum
		}
		secrets, mrCreates, mrWrites := writes("Secret", "create"), writes("ManagedResource", "create"), writes("ManagedResource", "")

		Expect(component("a").Deploy(ctx)).To(Succeed())
		Expect(writes("Secret", "create")).To(Equal(secrets + 1))
		Expect(writes("ManagedResource", "create")).To(Equal(mrCreates + 1))

		Expect(component("b").Deploy(ctx)).To(Succeed())
		Expect(writes("Secret", "create")).To(Equal(secrets+2), "new content is a new immutable Secret")
		Expect(writes("ManagedResource", "create")).To(Equal(mrCreates + 1))
		Expect(writes("ManagedResource", "")).To(BeNumerically(">", mrWrites+1), "the ManagedResource is changed to reference it")
	})

	// secrets returns the names of the Secrets in the namespace.
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
	// markApplied plays the resource manager: it reports the current generation applied.
	markApplied := func() {
		GinkgoHelper()
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		mr.Status.ObservedGeneration = mr.Generation
		mr.Status.Conditions = []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesApplied, Status: gardencorev1beta1.ConditionTrue}}
		Expect(c.Status().Update(ctx, mr)).To(Succeed())
	}
	referenced := func() []string {
		GinkgoHelper()
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		var names []string
		for _, ref := range mr.Spec.SecretRefs {
			names = append(names, ref.Name)
		}
		return names
	}

	Describe("Secrets", func() {
		var secretWrites map[string]int

		BeforeEach(func() {
			secretWrites = map[string]int{}
			count := func(verb string, obj client.Object) {
				if _, ok := obj.(*corev1.Secret); ok {
					secretWrites[verb]++
				}
			}
			c = interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
				Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					count("create", obj)
					return cl.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					count("update", obj)
					return cl.Update(ctx, obj, opts...)
				},
				Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					count("patch", obj)
					return cl.Patch(ctx, obj, patch, opts...)
				},
				Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					count("delete", obj)
					return cl.Delete(ctx, obj, opts...)
				},
			})
		})

		It("writes no Secret for content written before", func() {
			Expect(component("a").Deploy(ctx)).To(Succeed())
			first := secrets()
			Expect(first).To(HaveLen(1))
			Expect(secretWrites).To(Equal(map[string]int{"create": 1}))

			for range 3 {
				Expect(component("a").Deploy(ctx)).To(Succeed())
			}
			Expect(secrets()).To(Equal(first))
			Expect(secretWrites).To(Equal(map[string]int{"create": 1}), "the same content reuses the immutable Secret unchanged")

			// Content that was replaced and comes back reuses its Secret while it exists.
			Expect(component("b").Deploy(ctx)).To(Succeed())
			Expect(component("a").Deploy(ctx)).To(Succeed())
			Expect(secrets()).To(HaveLen(2))
			Expect(secretWrites).To(HaveKeyWithValue("create", 2))
			Expect(referenced()).To(Equal(first))
		})

		It("deletes the superseded Secret once the new content is applied", func() {
			m := component("a")
			Expect(m.Deploy(ctx)).To(Succeed())
			markApplied()
			Expect(m.Wait(ctx)).To(Succeed())
			Expect(m.DeleteSuperseded(ctx)).To(Succeed())
			old := secrets()
			Expect(old).To(HaveLen(1), "nothing was superseded")

			m = component("b")
			Expect(m.Deploy(ctx)).To(Succeed())
			Expect(secrets()).To(HaveLen(2), "the old Secret stays while the resource manager applies the new one")
			markApplied()
			Expect(m.Wait(ctx)).To(Succeed())
			Expect(m.DeleteSuperseded(ctx)).To(Succeed())
			Expect(secrets()).To(Equal(referenced()))
			Expect(secrets()).NotTo(ContainElements(old))
			Expect(secretWrites).To(HaveKeyWithValue("delete", 1))

			// The same content again supersedes nothing.
			m = component("b")
			Expect(m.Deploy(ctx)).To(Succeed())
			Expect(m.DeleteSuperseded(ctx)).To(Succeed())
			Expect(secrets()).To(Equal(referenced()))
			Expect(secretWrites).To(HaveKeyWithValue("delete", 1))
		})

		It("leaves Secrets alone that are not the ManagedResource's own", func() {
			Expect(component("a").Deploy(ctx)).To(Succeed())
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
			mr.Spec.SecretRefs = append(mr.Spec.SecretRefs, corev1.LocalObjectReference{Name: "someone-elses"})
			Expect(c.Update(ctx, mr)).To(Succeed())
			Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "someone-elses"}})).To(Succeed())

			m := component("b")
			Expect(m.Deploy(ctx)).To(Succeed())
			Expect(m.DeleteSuperseded(ctx)).To(Succeed())
			Expect(secrets()).To(ConsistOf(append(referenced(), "someone-elses")))
		})
	})

	// finalizing holds the ManagedResource on gardener-resource-manager's finalizer, as the resource
	// manager does while it deletes the objects.
	finalizing := func() {
		GinkgoHelper()
		mr := &resourcesv1alpha1.ManagedResource{}
		Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
		mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
		Expect(c.Update(ctx, mr)).To(Succeed())
	}
	// releaseWhenKept plays the resource manager: it lets a ManagedResource go once it is told to
	// keep the objects.
	releaseWhenKept := func() {
		go func() {
			defer GinkgoRecover()
			Eventually(func(g Gomega) {
				mr := &resourcesv1alpha1.ManagedResource{}
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr)).To(Succeed())
				g.Expect(mr.Spec.KeepObjects).To(Equal(ptr.To(true)))
				mr.Finalizers = nil
				g.Expect(c.Update(ctx, mr)).To(Succeed())
			}).WithTimeout(5 * time.Second).Should(Succeed())
		}()
	}
	keepObjects := func() *bool {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			return nil
		}
		return mr.Spec.KeepObjects
	}

	It("tells whether the ManagedResource exists", func() {
		m := component("a")
		Expect(m.Exists(ctx)).To(BeFalse())
		Expect(m.Deploy(ctx)).To(Succeed())
		Expect(m.Exists(ctx)).To(BeTrue())
	})

	It("migrates by releasing the objects and waiting until the ManagedResource is gone", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		finalizing()
		releaseWhenKept()
		Expect(m.Migrate(ctx)).To(Succeed())
		Expect(m.Exists(ctx)).To(BeFalse())
	})

	It("bounds the wait of a migration by the deletion timeout", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		finalizing()
		start := time.Now()
		Expect(m.Migrate(ctx)).To(MatchError(ContainSubstring("was not deleted within 1s")))
		Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		Expect(keepObjects()).To(Equal(ptr.To(true)))
	})

	It("deletes with the objects when they go in time", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		left, err := m.DestroyReleasingAfter(ctx, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(BeFalse())
		Expect(m.Exists(ctx)).To(BeFalse())
	})

	It("leaves the objects behind when their deletion hangs for longer than the grace", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		finalizing()
		Expect(keepObjects()).To(Or(BeNil(), Equal(ptr.To(false))))
		releaseWhenKept()
		left, err := m.DestroyReleasingAfter(ctx, 100*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(BeTrue())
		Expect(m.Exists(ctx)).To(BeFalse())
	})

	It("force-deletes without waiting", func() {
		m := component("a")
		Expect(m.Deploy(ctx)).To(Succeed())
		finalizing()
		Expect(m.Destroy(ctx)).To(Succeed())
		Expect(m.Exists(ctx)).To(BeTrue(), "the resource manager finalizes it later")
		Expect(keepObjects()).To(Or(BeNil(), Equal(ptr.To(false))))
	})
})
