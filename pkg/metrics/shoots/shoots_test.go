// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package shoots

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

var _ = Describe("Shoot gauges", func() {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

	extension := func(name, typ string, condition *gardencorev1beta1.Condition, status *fluxv1alpha1.FluxStatus) *extensionsv1alpha1.Extension {
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shoot--p--" + name, Name: "shoot-flux"},
			Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: typ}},
		}
		if condition != nil {
			ex.Status.Conditions = []gardencorev1beta1.Condition{*condition}
		}
		if status != nil {
			status.APIVersion, status.Kind = fluxv1alpha1.SchemeGroupVersion.String(), "FluxStatus"
			raw, err := json.Marshal(status)
			Expect(err).NotTo(HaveOccurred())
			ex.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
		}
		return ex
	}
	condition := func(status gardencorev1beta1.ConditionStatus, since time.Duration) *gardencorev1beta1.Condition {
		return &gardencorev1beta1.Condition{Type: ConditionTypeBootstrapReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since))}
	}

	AfterEach(func() { shoots.set(nil, "", nil) })

	It("counts the shoot-flux Extensions by state, mode and versions and tells the oldest failure", func() {
		scheme := runtime.NewScheme()
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		Expect(coordinationv1.AddToScheme(scheme)).To(Succeed())
		renew := metav1.NewMicroTime(time.Unix(1700000000, 500000000))
		reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
			extension("ready", constants.ExtensionType, condition(gardencorev1beta1.ConditionTrue, time.Hour),
				&fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2", BootstrapMode: "kluctl", Management: "continuous", KubernetesVersion: "1.35.2"}),
			extension("failing", constants.ExtensionType, condition(gardencorev1beta1.ConditionFalse, 45*time.Minute),
				&fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", BootstrapMode: "flux", KubernetesVersion: "1.33.4"}),
			extension("failing-shortly", constants.ExtensionType, condition(gardencorev1beta1.ConditionFalse, time.Minute),
				&fluxv1alpha1.FluxStatus{FluxVersion: "v2.7.5", BootstrapMode: "flux", Management: "handover",
					Pending: &fluxv1alpha1.PendingRelease{FluxVersion: "v2.9.5", Reason: "expired"}}),
			extension("new", constants.ExtensionType, nil, nil),
			extension("progressing", constants.ExtensionType, condition(gardencorev1beta1.ConditionProgressing, time.Minute),
				&fluxv1alpha1.FluxStatus{FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2", BootstrapMode: "kluctl", Management: "continuous",
					Requested: &fluxv1alpha1.RequestedVersions{Flux: "v2.9"}, Pending: &fluxv1alpha1.PendingRelease{FluxVersion: "v2.9.6", KluctlVersion: "v2.28.3", Reason: "newer"}}),
			extension("other", "shoot-dns-service", condition(gardencorev1beta1.ConditionFalse, 10*time.Hour), nil),
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "extension-shoot-flux", Name: "gardener-extension-heartbeat"}, Spec: coordinationv1.LeaseSpec{RenewTime: &renew}},
		).Build()
		lifecycle := releases.New(config.Releases{
			Flux:   []config.ReleaseLifecycle{{Version: "v2.7.5", Classification: config.ReleaseDeprecated, ExpirationDate: &metav1.Time{Time: now.Add(-time.Hour)}}},
			Kluctl: []config.ReleaseLifecycle{{Version: "v2.28.2", Classification: config.ReleaseDeprecated}},
		}, validation.SupportedVersions{Flux: []string{"v2.7.5", "v2.9.5"}, Kluctl: []string{"v2.28.2"}})
		shoots.set(reader, "extension-shoot-flux", lifecycle)
		shoots.now = func() time.Time { return now }
		DeferCleanup(func() { shoots.now = nil })

		expected := `
# HELP shoot_flux_heartbeat_renew_timestamp_seconds Unix time of the last renewal of the extension's heartbeat Lease gardener-extension-heartbeat; exported by the leader only.
# TYPE shoot_flux_heartbeat_renew_timestamp_seconds gauge
shoot_flux_heartbeat_renew_timestamp_seconds 1.7000000005e+09
# HELP shoot_flux_oldest_failing_bootstrap_seconds Seconds since the BootstrapReady condition of the longest failing shoot turned False; 0 when no bootstrap fails.
# TYPE shoot_flux_oldest_failing_bootstrap_seconds gauge
shoot_flux_oldest_failing_bootstrap_seconds 2700
# HELP shoot_flux_shoots_by_version Shoots with the extension by installed Flux version, kluctl version (none without kluctl) and management mode (continuous, handover), as their providerStatus tells.
# TYPE shoot_flux_shoots_by_version gauge
shoot_flux_shoots_by_version{flux_version="v2.7.5",kluctl_version="none",management="handover"} 1
shoot_flux_shoots_by_version{flux_version="v2.9.5",kluctl_version="none",management="continuous"} 1
shoot_flux_shoots_by_version{flux_version="v2.9.5",kluctl_version="v2.28.2",management="continuous"} 2
# HELP shoot_flux_shoots_by_release_lifecycle Shoots with the extension by component (flux, kluctl) and the lifecycle of their installed release (rollout.releases): supported, deprecated, preview or expired (whatever its classification).
# TYPE shoot_flux_shoots_by_release_lifecycle gauge
shoot_flux_shoots_by_release_lifecycle{component="flux",lifecycle="deprecated"} 0
shoot_flux_shoots_by_release_lifecycle{component="flux",lifecycle="expired"} 1
shoot_flux_shoots_by_release_lifecycle{component="flux",lifecycle="preview"} 0
shoot_flux_shoots_by_release_lifecycle{component="flux",lifecycle="supported"} 3
shoot_flux_shoots_by_release_lifecycle{component="kluctl",lifecycle="deprecated"} 2
shoot_flux_shoots_by_release_lifecycle{component="kluctl",lifecycle="expired"} 0
shoot_flux_shoots_by_release_lifecycle{component="kluctl",lifecycle="preview"} 0
shoot_flux_shoots_by_release_lifecycle{component="kluctl",lifecycle="supported"} 0
# HELP shoot_flux_shoots_outside_kubernetes_range Shoots whose installed Flux release does not support their Kubernetes version (the Kubernetes ranges of the Flux releases), as their providerStatus tells; the extension keeps the release until the shoot selects one in range.
# TYPE shoot_flux_shoots_outside_kubernetes_range gauge
shoot_flux_shoots_outside_kubernetes_range 1
# HELP shoot_flux_shoots_pending_release Shoots whose Flux or kluctl release change waits for their maintenance time window (rollout.window), by component (flux, kluctl) and reason: selected_minor (a newer embedded patch of the minor the project selects), operator_default (what the operator's default version selects now) or expired (the installed release expired, rollout.releases).
# TYPE shoot_flux_shoots_pending_release gauge
shoot_flux_shoots_pending_release{component="flux",reason="expired"} 1
shoot_flux_shoots_pending_release{component="flux",reason="operator_default"} 0
shoot_flux_shoots_pending_release{component="flux",reason="selected_minor"} 1
shoot_flux_shoots_pending_release{component="kluctl",reason="expired"} 0
shoot_flux_shoots_pending_release{component="kluctl",reason="operator_default"} 1
shoot_flux_shoots_pending_release{component="kluctl",reason="selected_minor"} 0
`
		Expect(testutil.CollectAndCompare(shoots, strings.NewReader(expected),
			"shoot_flux_heartbeat_renew_timestamp_seconds", "shoot_flux_oldest_failing_bootstrap_seconds", "shoot_flux_shoots_by_version", "shoot_flux_shoots_pending_release",
			"shoot_flux_shoots_by_release_lifecycle", "shoot_flux_shoots_outside_kubernetes_range")).To(Succeed())

		values := map[[2]string]float64{}
		for _, m := range shootMetrics(mustList(reader), nil, now) {
			if strings.Contains(m.Desc().String(), `"shoot_flux_shoots"`) {
				values[labelPair(m)] = value(m)
			}
		}
		Expect(values).To(HaveLen(len(states) * len(modes)))
		Expect(values).To(HaveKeyWithValue([2]string{"True", "kluctl"}, 1.0))
		Expect(values).To(HaveKeyWithValue([2]string{"False", "flux"}, 2.0))
		Expect(values).To(HaveKeyWithValue([2]string{"Progressing", "kluctl"}, 1.0))
		Expect(values).To(HaveKeyWithValue([2]string{"Unknown", "unknown"}, 1.0))
		var total float64
		for _, v := range values {
			total += v
		}
		Expect(total).To(Equal(5.0), "only shoot-flux Extensions count")

		Expect(testutil.CollectAndCount(shoots)).To(Equal(len(states)*len(modes) + 3 + 6 + 8 + 1 + 1 + 1))
		var names []string
		for _, n := range metrics.Names() {
			if strings.Contains(n, "shoots") || strings.Contains(n, "bootstrap") || strings.Contains(n, "heartbeat") {
				names = append(names, n)
			}
		}
		Expect(testutil.CollectAndCount(shoots, names...)).To(Equal(testutil.CollectAndCount(shoots)), "Names lists the gauges")
	})

	It("exports no failing age without a failing bootstrap and nothing without a reader", func() {
		scheme := runtime.NewScheme()
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		Expect(coordinationv1.AddToScheme(scheme)).To(Succeed())
		Expect(testutil.CollectAndCount(shoots)).To(BeZero())

		shoots.set(fake.NewClientBuilder().WithScheme(scheme).WithObjects(
			extension("ready", constants.ExtensionType, condition(gardencorev1beta1.ConditionTrue, time.Hour), nil),
		).Build(), "", nil)
		Expect(testutil.CollectAndCompare(shoots, strings.NewReader(`
# HELP shoot_flux_oldest_failing_bootstrap_seconds Seconds since the BootstrapReady condition of the longest failing shoot turned False; 0 when no bootstrap fails.
# TYPE shoot_flux_oldest_failing_bootstrap_seconds gauge
shoot_flux_oldest_failing_bootstrap_seconds 0
`), "shoot_flux_oldest_failing_bootstrap_seconds", "shoot_flux_heartbeat_renew_timestamp_seconds")).To(Succeed())
	})
})

func mustList(reader interface {
	List(context.Context, client.ObjectList, ...client.ListOption) error
}) []extensionsv1alpha1.Extension {
	GinkgoHelper()
	list := &extensionsv1alpha1.ExtensionList{}
	Expect(reader.List(context.Background(), list)).To(Succeed())
	return list.Items
}

func labelPair(m prometheus.Metric) [2]string {
	GinkgoHelper()
	out := &dto.Metric{}
	Expect(m.Write(out)).To(Succeed())
	var pair [2]string
	for _, l := range out.GetLabel() {
		switch l.GetName() {
		case "state":
			pair[0] = l.GetValue()
		case "mode":
			pair[1] = l.GetValue()
		}
	}
	return pair
}

func value(m prometheus.Metric) float64 {
	GinkgoHelper()
	out := &dto.Metric{}
	Expect(m.Write(out)).To(Succeed())
	return out.GetGauge().GetValue()
}
