package mrutil_test

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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/mrutil"
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
		DeferCleanup(func(old time.Duration) { mrutil.PollInterval = old }, mrutil.PollInterval)
		mrutil.PollInterval = 10 * time.Millisecond
	})

	It("returns once the ManagedResource with the written Secret is applied", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-new"))).To(Succeed())
		Expect(mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", time.Time{}, time.Second)).To(Succeed())
	})

	// A cache that has not seen the write yet returns the previous generation, which was applied.
	It("does not take the applied previous generation from a stale cache for the new one", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		err := mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", time.Time{}, 100*time.Millisecond)
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
		DeferCleanup(func(old time.Duration) { mrutil.ApplyFailedGrace = old }, mrutil.ApplyFailedGrace)
		mrutil.ApplyFailedGrace = 300 * time.Millisecond
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(time.Second)))).To(Succeed())
		start := time.Now()
		err := mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", written, time.Minute)
		var failed *mrutil.ApplyFailedError
		Expect(errors.As(err, &failed)).To(BeTrue(), "got %v", err)
		Expect(err).To(MatchError(ContainSubstring(`namespaces "apps" not found`)))
		Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "the wait must not run into its timeout")
	})

	It("does not take a failure reported before the write for the new generation", func() {
		DeferCleanup(func(old time.Duration) { mrutil.ApplyFailedGrace = old }, mrutil.ApplyFailedGrace)
		mrutil.ApplyFailedGrace = 0
		written := time.Now()
		Expect(reader.Create(ctx, failedMR("managedresource-"+name+"-new", written.Add(-time.Hour)))).To(Succeed())
		err := mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", written, 200*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("was not applied within")))
	})

	It("only checks the applied condition without a Secret name", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		Expect(mrutil.WaitUntilApplied(ctx, reader, namespace, name, "", time.Time{}, time.Second)).To(Succeed())
	})
})
