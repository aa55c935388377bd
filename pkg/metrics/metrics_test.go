// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics/shoots"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// counter reads one series of a metric family from controller-runtime's registry, the one /metrics
// serves.
func counter(name string, labels map[string]string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	Fail(fmt.Sprintf("no series %s%v", name, labels))
	return 0
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

var _ = Describe("Metrics", func() {
	It("reads the condition the health check writes", func() {
		Expect(shoots.ConditionTypeBootstrapReady).To(Equal(healthcheck.ConditionTypeBootstrapReady))
	})

	It("exports every metric with HELP text and only the shoot_flux_ prefix", func() {
		families, err := ctrlmetrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		var ours []string
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), metrics.Namespace+"_") {
				ours = append(ours, f.GetName())
				Expect(f.GetHelp()).NotTo(BeEmpty(), f.GetName())
			}
		}
		Expect(ours).To(ContainElements(
			"shoot_flux_operations_total",
			"shoot_flux_reconcile_errors_total",
			"shoot_flux_host_key_scans_total",
			"shoot_flux_deploy_keys_generated_total",
			"shoot_flux_deploy_keys_rotated_total",
		))
		Expect(metrics.Names()).To(ContainElements(ours))
	})

	DescribeTable("classifies operation errors",
		func(ctx context.Context, err error, class string) {
			Expect(metrics.Classify(ctx, err)).To(Equal(class))
		},
		Entry("a configuration problem", context.Background(), v1beta1helper.NewErrorWithCodes(errors.New("source.url: bad"), gardencorev1beta1.ErrorConfigurationProblem), metrics.ClassConfiguration),
		Entry("a wrapped configuration problem", context.Background(), fmt.Errorf("failed: %w", v1beta1helper.NewErrorWithCodes(errors.New("x"), gardencorev1beta1.ErrorRetryableConfigurationProblem)), metrics.ClassConfiguration),
		Entry("an expired deadline", context.Background(), fmt.Errorf("waiting: %w", context.DeadlineExceeded), metrics.ClassTimeout),
		Entry("an interrupted wait", context.Background(), fmt.Errorf("waiting: %w", wait.ErrorInterrupted(errors.New("x"))), metrics.ClassTimeout),
		Entry("a network timeout", context.Background(), fmt.Errorf("dial: %w", timeoutError{}), metrics.ClassTimeout),
		Entry("an expired operation", expired(), errors.New("anything"), metrics.ClassTimeout),
		Entry("an API error", context.Background(), apierrors.NewInternalError(errors.New("etcd")), metrics.ClassInfrastructure),
		Entry("a plain error", context.Background(), errors.New("garden unreachable"), metrics.ClassInfrastructure),
	)

	It("counts operations by phase and failures by class", func(ctx SpecContext) {
		a := metrics.InstrumentActuator(&fakeActuator{err: v1beta1helper.NewErrorWithCodes(errors.New("bad"), gardencorev1beta1.ErrorConfigurationProblem)})
		ok := metrics.InstrumentActuator(&fakeActuator{})
		ex := &extensionsv1alpha1.Extension{}
		before := map[string]float64{}
		for _, phase := range []string{metrics.PhaseReconcile, metrics.PhaseDelete, metrics.PhaseMigrate, metrics.PhaseRestore} {
			before[phase] = counter("shoot_flux_operations_total", map[string]string{"phase": phase})
			before[phase+"/error"] = counter("shoot_flux_reconcile_errors_total", map[string]string{"phase": phase, "class": metrics.ClassConfiguration})
		}

		Expect(a.Reconcile(ctx, logr.Discard(), ex)).To(HaveOccurred())
		Expect(ok.Reconcile(ctx, logr.Discard(), ex)).To(Succeed())
		Expect(a.Delete(ctx, logr.Discard(), ex)).To(HaveOccurred())
		Expect(a.ForceDelete(ctx, logr.Discard(), ex)).To(HaveOccurred())
		Expect(a.Migrate(ctx, logr.Discard(), ex)).To(HaveOccurred())
		Expect(ok.Restore(ctx, logr.Discard(), ex)).To(Succeed())

		delta := func(phase, suffix string) float64 {
			if suffix == "" {
				return counter("shoot_flux_operations_total", map[string]string{"phase": phase}) - before[phase]
			}
			return counter("shoot_flux_reconcile_errors_total", map[string]string{"phase": phase, "class": metrics.ClassConfiguration}) - before[phase+suffix]
		}
		Expect(delta(metrics.PhaseReconcile, "")).To(Equal(2.0))
		Expect(delta(metrics.PhaseReconcile, "/error")).To(Equal(1.0))
		Expect(delta(metrics.PhaseDelete, "")).To(Equal(2.0), "ForceDelete counts as delete")
		Expect(delta(metrics.PhaseDelete, "/error")).To(Equal(2.0))
		Expect(delta(metrics.PhaseMigrate, "/error")).To(Equal(1.0))
		Expect(delta(metrics.PhaseRestore, "")).To(Equal(1.0))
		Expect(delta(metrics.PhaseRestore, "/error")).To(BeZero())
	})

	Describe("host key scans", func() {
		scan := func(ctx context.Context, dial sshkey.DialFunc, address string, timeout time.Duration) string {
			_, err := sshkey.ScanHostKeyWith(ctx, dial, address, timeout)
			Expect(err).To(HaveOccurred())
			return metrics.ScanResult(err)
		}

		It("tells a host the policy refuses", func(ctx SpecContext) {
			policy, err := hostpolicy.New(nil, nil, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(scan(ctx, policy.DialContext, "169.254.169.254:22", time.Second)).To(Equal(metrics.ScanRefusedByPolicy))
			Expect(scan(ctx, policy.DialContext, "kubernetes.default.svc:443", time.Second)).To(Equal(metrics.ScanRefusedByPolicy))
		})

		It("tells an unreachable host", func(ctx SpecContext) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			address := l.Addr().String()
			Expect(l.Close()).To(Succeed())
			Expect(scan(ctx, nil, address, 5*time.Second)).To(Equal(metrics.ScanUnreachable))
		})

		It("tells a host that does not answer in time", func(ctx SpecContext) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(l.Close)
			// The connection is accepted by the kernel and never answered.
			Expect(scan(ctx, nil, l.Addr().String(), 200*time.Millisecond)).To(Equal(metrics.ScanTimeout))
		})

		It("counts by result", func() {
			before := counter("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanOK})
			refused := counter("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanRefusedByPolicy})
			metrics.RecordHostKeyScan(nil)
			metrics.RecordHostKeyScan(fmt.Errorf("dial: %w", hostpolicy.ErrDenied))
			Expect(counter("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanOK})).To(Equal(before + 1))
			Expect(counter("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanRefusedByPolicy})).To(Equal(refused + 1))
		})
	})

	It("counts generated and rotated deploy keys", func() {
		generated := counter("shoot_flux_deploy_keys_generated_total", nil)
		rotated := counter("shoot_flux_deploy_keys_rotated_total", nil)
		metrics.RecordDeployKeys(true, 0)
		metrics.RecordDeployKeys(false, 3)
		metrics.RecordDeployKeys(false, 0)
		Expect(counter("shoot_flux_deploy_keys_generated_total", nil)).To(Equal(generated + 1))
		Expect(counter("shoot_flux_deploy_keys_rotated_total", nil)).To(Equal(rotated + 3))
	})

	It("counts successful writes of ManagedResources and their Secrets", func(ctx SpecContext) {
		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(resourcesv1alpha1.AddToScheme(scheme)).To(Succeed())
		failing := false
		c := metrics.CountManagedResourceWrites(fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if failing {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, obj.GetName(), errors.New("no"))
				}
				return c.Create(ctx, obj, opts...)
			},
		}).Build(), "mr-test")
		series := func(kind, verb string) float64 {
			return counter("shoot_flux_managed_resource_writes_total", map[string]string{"managed_resource": "mr-test", "kind": kind, "verb": verb})
		}

		mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: "mr-test"}}
		Expect(c.Create(ctx, mr)).To(Succeed())
		patch := client.MergeFrom(mr.DeepCopy())
		mr.Spec.KeepObjects = new(true)
		Expect(c.Patch(ctx, mr, patch)).To(Succeed())
		Expect(c.Update(ctx, mr)).To(Succeed())
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: "s"}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: "c"}})).To(Succeed())
		failing = true
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--a--b", Name: "t"}})).NotTo(Succeed())
		Expect(c.Delete(ctx, mr)).To(Succeed())

		Expect(series("ManagedResource", "create")).To(Equal(1.0))
		Expect(series("ManagedResource", "patch")).To(Equal(1.0))
		Expect(series("ManagedResource", "update")).To(Equal(1.0))
		Expect(series("ManagedResource", "delete")).To(Equal(1.0))
		Expect(series("Secret", "create")).To(Equal(1.0), "a failed write is no write")
	})
})

func expired() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

type fakeActuator struct {
	extension.Actuator
	err error
}

func (f *fakeActuator) Reconcile(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error {
	return f.err
}

func (f *fakeActuator) Delete(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error {
	return f.err
}

func (f *fakeActuator) ForceDelete(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error {
	return f.err
}

func (f *fakeActuator) Migrate(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error {
	return f.err
}

func (f *fakeActuator) Restore(context.Context, logr.Logger, *extensionsv1alpha1.Extension) error {
	return f.err
}
