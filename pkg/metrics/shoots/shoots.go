// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package shoots exports the gauges of the shoots with the extension, computed at scrape time by
// the controller; the counters the reconciles record stay in package metrics, which leaf packages use.
package shoots

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	gardenerextensions "github.com/gardener/gardener/pkg/extensions"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// ConditionTypeBootstrapReady is the Extension condition the health check writes (the health
// check package owns it; this package reads it and cannot import the health check).
const ConditionTypeBootstrapReady = "BootstrapReady"

// LabelUnknown is the label value of a mode, version or management the providerStatus does not
// tell yet, e.g. before the first successful reconcile.
const LabelUnknown = "unknown"

// LabelNone is the kluctl_version of shoots without kluctl.
const LabelNone = "none"

// CollectTimeout bounds the cache reads of one scrape.
var CollectTimeout = 5 * time.Second

var (
	shootsDesc = prometheus.NewDesc(metrics.Namespace+"_shoots",
		"Shoots with the extension by the status of their BootstrapReady condition (True, False, Progressing, Unknown; Unknown also while the health check has not reported) and bootstrap mode (kluctl, flux, none, unknown).",
		[]string{"state", "mode"}, nil)
	versionsDesc = prometheus.NewDesc(metrics.Namespace+"_shoots_by_version",
		"Shoots with the extension by installed Flux version, kluctl version (none without kluctl) and management mode (continuous, handover), as their providerStatus tells.",
		versionLabels(), nil)
	pendingDesc = prometheus.NewDesc(metrics.Namespace+"_shoots_pending_release",
		"Shoots whose Flux or kluctl release change waits for their maintenance time window (rollout.window), by component (flux, kluctl) and reason: selected_minor (a newer embedded patch of the minor the project selects), operator_default (what the operator's default version selects now) or expired (the installed release expired, rollout.releases).",
		[]string{"component", "reason"}, nil)
	lifecycleDesc = prometheus.NewDesc(metrics.Namespace+"_shoots_by_release_lifecycle",
		"Shoots with the extension by component (flux, kluctl) and the lifecycle of their installed release (rollout.releases): supported, deprecated, preview or expired (whatever its classification).",
		[]string{"component", "lifecycle"}, nil)
	outsideKubernetesDesc = prometheus.NewDesc(metrics.Namespace+"_shoots_outside_kubernetes_range",
		"Shoots whose installed Flux release does not support their Kubernetes version (the Kubernetes ranges of the Flux releases), as their providerStatus tells; the extension keeps the release until the shoot selects one in range.",
		nil, nil)
	oldestFailingDesc = prometheus.NewDesc(metrics.Namespace+"_oldest_failing_bootstrap_seconds",
		"Seconds since the BootstrapReady condition of the longest failing shoot turned False; 0 when no bootstrap fails.",
		nil, nil)
	heartbeatDesc = prometheus.NewDesc(metrics.Namespace+"_heartbeat_renew_timestamp_seconds",
		"Unix time of the last renewal of the extension's heartbeat Lease gardener-extension-heartbeat; exported by the leader only.",
		nil, nil)
)

var (
	states = []gardencorev1beta1.ConditionStatus{gardencorev1beta1.ConditionTrue, gardencorev1beta1.ConditionFalse, gardencorev1beta1.ConditionProgressing, gardencorev1beta1.ConditionUnknown}
	modes  = []string{string(fluxapi.BootstrapModeKluctl), string(fluxapi.BootstrapModeFlux), string(fluxapi.BootstrapModeNone), LabelUnknown}
)

// shoots computes the gauges of the shoots at scrape time from the manager's cache, so they never
// drift from the Extensions: a counter kept by the reconciler would miss deletions while the
// extension was down.
var shoots = &shootCollector{}

func init() {
	ctrlmetrics.Registry.MustRegister(shoots)
}

type shootCollector struct {
	mu        sync.Mutex
	reader    client.Reader
	heartbeat client.ObjectKey
	lifecycle *releases.Lifecycle
	now       func() time.Time
}

// AddToManager makes the leader export the gauges of the shoots, read from mgr's cache, with the
// operator's release lifecycle; a heartbeat Lease in heartbeatNamespace (empty: none) is exported
// as its renewal time. Only the leader exports them, so that replicas do not report the same
// shoots twice.
func AddToManager(mgr manager.Manager, heartbeatNamespace string, lifecycle *releases.Lifecycle) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		shoots.set(mgr.GetCache(), heartbeatNamespace, lifecycle)
		<-ctx.Done()
		shoots.set(nil, "", nil)
		return nil
	}))
}

func (c *shootCollector) set(reader client.Reader, heartbeatNamespace string, lifecycle *releases.Lifecycle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = reader
	c.lifecycle = lifecycle
	c.heartbeat = client.ObjectKey{}
	if heartbeatNamespace != "" {
		c.heartbeat = client.ObjectKey{Namespace: heartbeatNamespace, Name: gardenerextensions.HeartBeatResourceName}
	}
}

// Describe implements prometheus.Collector.
func (c *shootCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shootsDesc
	ch <- versionsDesc
	ch <- pendingDesc
	ch <- lifecycleDesc
	ch <- outsideKubernetesDesc
	ch <- oldestFailingDesc
	ch <- heartbeatDesc
}

// Collect implements prometheus.Collector. Without a reader (not the leader, not started) it
// exports nothing; a failed read drops the gauges of this scrape rather than failing it, so that
// controller-runtime's metrics stay available.
func (c *shootCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, heartbeat, lifecycle, now := c.reader, c.heartbeat, c.lifecycle, c.now
	c.mu.Unlock()
	if reader == nil {
		return
	}
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithTimeout(context.Background(), CollectTimeout)
	defer cancel()

	if heartbeat.Name != "" {
		lease := &coordinationv1.Lease{}
		if err := reader.Get(ctx, heartbeat, lease); err == nil && lease.Spec.RenewTime != nil {
			ch <- prometheus.MustNewConstMetric(heartbeatDesc, prometheus.GaugeValue, float64(lease.Spec.RenewTime.UnixNano())/1e9)
		}
	}

	list := &extensionsv1alpha1.ExtensionList{}
	// The cache's objects are only read here.
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for _, m := range shootMetrics(list.Items, lifecycle, now()) {
		ch <- m
	}
}

// shootMetrics returns the gauges of the shoot-flux Extensions among items at time now, with the
// release lifecycle (nil: every release supported).
func shootMetrics(items []extensionsv1alpha1.Extension, lifecycle *releases.Lifecycle, now time.Time) []prometheus.Metric {
	type stateKey struct{ state, mode string }
	byState := map[stateKey]int{}
	byVersion := map[string]int{}
	type pendingKey struct{ component, reason string }
	byPending := map[pendingKey]int{}
	type lifecycleKey struct{ component, lifecycle string }
	byLifecycle := map[lifecycleKey]int{}
	var oldest time.Duration
	outsideKubernetes := 0
	for i := range items {
		ex := &items[i]
		if ex.Spec.Type != constants.ExtensionType {
			continue
		}
		state, since := bootstrapState(ex)
		if state == gardencorev1beta1.ConditionFalse && !since.IsZero() && now.Sub(since) > oldest {
			oldest = now.Sub(since)
		}
		mode := LabelUnknown
		status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
		if err == nil && status != nil {
			if status.BootstrapMode != "" {
				mode = status.BootstrapMode
			}
			if status.FluxVersion != "" {
				byVersion[strings.Join(versions(status), labelSeparator)]++
			}
			if status.FluxVersion != "" && status.KubernetesVersion != "" && !releases.FluxSupportsKubernetes(status.FluxVersion, status.KubernetesVersion) {
				outsideKubernetes++
			}
			requested := status.Requested
			if requested == nil {
				requested = &fluxv1alpha1.RequestedVersions{}
			}
			for _, c := range lifecycle.Components() {
				installed := *c.Installed(status)
				if installed != "" {
					byLifecycle[lifecycleKey{c.Key, releaseLifecycle(c, installed, now)}]++
				}
				if p := status.Pending; p != nil && *c.Pending(p) != "" {
					byPending[pendingKey{c.Key, pendingReason(c, installed, *c.Requested(requested), now)}]++
				}
			}
		}
		byState[stateKey{string(state), mode}]++
	}

	var out []prometheus.Metric
	for _, state := range states {
		for _, mode := range modes {
			out = append(out, prometheus.MustNewConstMetric(shootsDesc, prometheus.GaugeValue, float64(byState[stateKey{string(state), mode}]), string(state), mode))
		}
	}
	for k, n := range byVersion {
		out = append(out, prometheus.MustNewConstMetric(versionsDesc, prometheus.GaugeValue, float64(n), strings.Split(k, labelSeparator)...))
	}
	for _, c := range releases.Specs {
		component := c.Key
		for _, reason := range []string{PendingSelectedMinor, PendingOperatorDefault, PendingExpired} {
			out = append(out, prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(byPending[pendingKey{component, reason}]), component, reason))
		}
		for _, l := range releaseLifecycles {
			out = append(out, prometheus.MustNewConstMetric(lifecycleDesc, prometheus.GaugeValue, float64(byLifecycle[lifecycleKey{component, l}]), component, l))
		}
	}
	out = append(out, prometheus.MustNewConstMetric(outsideKubernetesDesc, prometheus.GaugeValue, float64(outsideKubernetes)))
	return append(out, prometheus.MustNewConstMetric(oldestFailingDesc, prometheus.GaugeValue, oldest.Seconds()))
}

// Reasons of a pending release change (label reason).
const (
	// PendingSelectedMinor is a newer embedded patch of the minor the project selects.
	PendingSelectedMinor = "selected_minor"
	// PendingOperatorDefault is what the operator's default version selects now.
	PendingOperatorDefault = "operator_default"
	// PendingExpired is the move off an installed release that expired.
	PendingExpired = "expired"
	// LifecycleExpired is the lifecycle label of an expired release.
	LifecycleExpired = "expired"
)

// releaseLifecycles are the values of the label lifecycle.
var releaseLifecycles = []string{string(config.ReleaseSupported), string(config.ReleaseDeprecated), string(config.ReleasePreview), LifecycleExpired}

// releaseLifecycle is the lifecycle label of an installed release at now.
func releaseLifecycle(c releases.Component, release string, now time.Time) string {
	if c.Expired(release, now) {
		return LifecycleExpired
	}
	return string(c.Classification(release))
}

// pendingReason is the reason of a pending change of a component installed as release, whose
// selector the project wrote as requested (empty: the operator's default).
func pendingReason(c releases.Component, release, requested string, now time.Time) string {
	switch {
	case c.Expired(release, now):
		return PendingExpired
	case requested == "":
		return PendingOperatorDefault
	}
	return PendingSelectedMinor
}

// versionLabels are the labels of shoots_by_version: each component's release (flux_version,
// kluctl_version), then the management mode.
func versionLabels() []string {
	labels := make([]string, 0, len(releases.Specs)+1)
	for _, c := range releases.Specs {
		labels = append(labels, c.Key+"_version")
	}
	return append(labels, "management")
}

// labelSeparator joins the values of versionLabels into a map key; no release or mode contains it.
const labelSeparator = "\x00"

// versions returns the values of versionLabels, LabelNone for a component the shoot lacks; the
// providerStatus holds only values the extension resolved against its embedded releases, so their
// number is bounded.
func versions(status *fluxv1alpha1.FluxStatus) []string {
	values := make([]string, 0, len(releases.Specs)+1)
	for _, c := range releases.Specs {
		values = append(values, cmp.Or(*c.Installed(status), LabelNone))
	}
	return append(values, cmp.Or(status.Management, string(fluxapi.ManagementContinuous)))
}

// bootstrapState returns the status of the BootstrapReady condition (Unknown without one) and
// since when it holds.
func bootstrapState(ex *extensionsv1alpha1.Extension) (gardencorev1beta1.ConditionStatus, time.Time) {
	c := v1beta1helper.GetCondition(ex.Status.Conditions, ConditionTypeBootstrapReady)
	if c == nil {
		return gardencorev1beta1.ConditionUnknown, time.Time{}
	}
	switch c.Status {
	case gardencorev1beta1.ConditionTrue, gardencorev1beta1.ConditionFalse, gardencorev1beta1.ConditionProgressing:
		return c.Status, c.LastTransitionTime.Time
	default:
		return gardencorev1beta1.ConditionUnknown, c.LastTransitionTime.Time
	}
}
