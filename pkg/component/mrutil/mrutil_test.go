package mrutil_test

import (
	"context"
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
		Expect(mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", time.Second)).To(Succeed())
	})

	// A cache that has not seen the write yet returns the previous generation, which was applied.
	It("does not take the applied previous generation from a stale cache for the new one", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		err := mrutil.WaitUntilApplied(ctx, reader, namespace, name, "managedresource-"+name+"-new", 100*time.Millisecond)
		Expect(err).To(MatchError(ContainSubstring("does not reference Secret managedresource-" + name + "-new")))
	})

	It("only checks the applied condition without a Secret name", func() {
		Expect(reader.Create(ctx, appliedMR("managedresource-"+name+"-old"))).To(Succeed())
		Expect(mrutil.WaitUntilApplied(ctx, reader, namespace, name, "", time.Second)).To(Succeed())
	})
})
