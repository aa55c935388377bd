// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package monitoring adds the delivered controllers to the shoot's own monitoring by Gardener's
// contract for extensions: ScrapeConfigs and a PrometheusRule labelled prometheus=shoot and a
// dashboard ConfigMap in the shoot's seed namespace. The shoot's Prometheus scrapes the controllers
// through the shoot's kube-apiserver (docs/operations/monitoring.md).
package monitoring

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	shootprometheus "github.com/gardener/gardener/pkg/component/observability/monitoring/prometheus/shoot"
	monitoringutils "github.com/gardener/gardener/pkg/component/observability/monitoring/utils"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

const (
	// prometheusName is the Prometheus of the shoot, which loads the objects labelled with it.
	prometheusName = "shoot"
	// configName makes the names of the ScrapeConfigs and the PrometheusRule ("shoot-flux...").
	configName = "flux"
	// DashboardConfigMapName is the ConfigMap with the shoot's GitOps dashboard.
	DashboardConfigMapName = "shoot-flux-dashboards"
	// LabelShootDashboard on a ConfigMap of the shoot's namespace makes the shoot's Plutono load
	// its dashboards.
	LabelShootDashboard = "dashboard.monitoring.gardener.cloud/shoot"
	// dashboardKey is the dashboard's key in DashboardConfigMapName.
	dashboardKey = "shoot-flux.dashboard.json"
	// JobPrefix starts the job label of every delivered controller's series.
	JobPrefix = "shoot-flux-"
)

//go:embed dashboard.json
var dashboard string

// Values describe what the extension delivers into the shoot.
type Values struct {
	// Controllers are the delivered controllers.
	Controllers []Controller
	// Bootstrap are the bootstrap objects; nil if there are none (bootstrap mode none), which keeps
	// the controller alerts only.
	Bootstrap *Bootstrap
}

// Controller is a delivered controller: a Flux component or the kluctl controller.
type Controller struct {
	// Component is the component's name (fluxapi.KnownComponents, fluxapi.ComponentKluctlController).
	Component string
	// Namespace is the controller's namespace in the shoot.
	Namespace string
}

// Bootstrap are the bootstrap objects in the shoot.
type Bootstrap struct {
	// Name is the name of the bootstrap objects; empty means constants.BootstrapName.
	Name string
	// Mode is kluctl (a KluctlDeployment) or flux (a GitRepository or OCIRepository and a
	// Kustomization).
	Mode fluxapi.BootstrapMode
	// Namespace is the namespace of the bootstrap objects.
	Namespace string
	// OCI tells that the flux mode's source is an OCIRepository.
	OCI bool
	// DeployKey tells that the source is fetched with the extension's deploy key.
	DeployKey bool
}

// JobName is the job label of a delivered controller's series in the shoot's Prometheus.
func JobName(component string) string { return JobPrefix + component }

// The bounds of every ScrapeConfig. The shoot owner can run pods that look like a delivered
// controller in its namespace and make them export anything, and the shoot's Prometheus runs in
// the seed and its shoot:* records are federated to the seed's and the garden's: so the shoot's
// series of a controller are at most its MaxPods targets times SampleLimit.
const (
	// SampleLimit is the most samples a target may have after the metric relabelling, or its whole
	// scrape fails. Of the recorded samples a controller keeps at most 27 (kluctl-controller) and
	// source-controller at most 44 with all its reconcilers reporting; 100 leaves room for a new
	// controller release (test/promrules checks the samples against it).
	SampleLimit = 100
	// LabelLimit is the most labels a kept sample may have, or the scrape fails. The recorded
	// samples have at most 10 (gotk_reconcile_condition: __name__, its 5 and the 4 of the target).
	LabelLimit = 12
	// LabelValueLengthLimit is the longest label value a kept sample may have, or the scrape
	// fails: a Kubernetes object name (a node's, a pod's), the longest value the real series have.
	LabelValueLengthLimit = 253
	// keepDroppedTargets bounds the targets that the shoot's Prometheus remembers after the
	// relabelling dropped them (unbounded by default): every pod of the controllers' namespace.
	keepDroppedTargets = 10
)

// keptLabels are the label names the metric relabelling keeps (labelkeep): those of the kept
// series the rules and the dashboard use, and the target's (job, instance, pod, node).
var keptLabels = []string{"__name__", "job", "instance", "pod", "node",
	"controller", "result", "kind", "name", "namespace", "type", "status", "action", "le"}

// reconcileResults are the values of the label result of controller_runtime_reconcile_total.
var reconcileResults = []string{"error", "requeue", "requeue_after", "success"}

// ScrapeConfigs return a ScrapeConfig per delivered controller. Each keeps only the series the
// rules and the dashboard use, of the per-object series only those of the bootstrap objects, of
// the reconcile series only those of the controller's own reconcilers, and only the labels the
// rules and the dashboard use: the shoot owner decides how many Flux and kluctl objects the shoot
// has, and the shoot's Prometheus runs in the seed.
func ScrapeConfigs(namespace string, values Values) ([]*monitoringv1alpha1.ScrapeConfig, error) {
	var result []*monitoringv1alpha1.ScrapeConfig
	for _, c := range values.Controllers {
		endpoint, err := manifests.ControllerMetricsEndpoint(c.Component)
		if err != nil {
			return nil, err
		}
		spec := shootprometheus.ClusterComponentScrapeConfigSpec(JobName(c.Component), shootprometheus.KubernetesServiceDiscoveryConfig{
			Role:              monitoringv1alpha1.KubernetesRolePod,
			PodNamePrefix:     endpoint.Deployment + "-",
			ContainerName:     endpoint.Container,
			ContainerPortName: endpoint.Port,
		}, KeptMetrics...)
		// Gardener's spec is made for components in kube-system; ours run in namespaces the
		// configuration chooses.
		for i := range spec.KubernetesSDConfigs {
			spec.KubernetesSDConfigs[i].Namespaces = &monitoringv1alpha1.NamespaceDiscovery{Names: []string{c.Namespace}}
		}
		// Gardener's target label "type" would collide with the label "type" of
		// gotk_reconcile_condition (the condition type), which Prometheus would then rename to
		// exported_type; the job names tell the series apart from the shoot's other ones.
		spec.RelabelConfigs = slices.DeleteFunc(spec.RelabelConfigs, func(r monitoringv1.RelabelConfig) bool { return r.TargetLabel == "type" })
		for i := range spec.RelabelConfigs {
			if spec.RelabelConfigs[i].TargetLabel == "__metrics_path__" {
				spec.RelabelConfigs[i].Replacement = new("/api/v1/namespaces/" + c.Namespace + "/pods/${1}:${2}/proxy/metrics")
			}
		}
		spec.MetricRelabelConfigs = append(spec.MetricRelabelConfigs,
			monitoringv1.RelabelConfig{
				SourceLabels: []monitoringv1.LabelName{"__name__", "name", "namespace", "controller", "result"},
				Action:       "keep",
				Regex:        keptSeriesRegex(endpoint.Reconcilers, values.Bootstrap),
			},
			monitoringv1.RelabelConfig{Action: "labelkeep", Regex: strings.Join(keptLabels, "|")},
		)
		spec.SampleLimit = new(int64(SampleLimit))
		spec.TargetLimit = new(int64(endpoint.MaxPods))
		spec.LabelLimit = new(int64(LabelLimit))
		spec.LabelValueLengthLimit = new(int64(LabelValueLengthLimit))
		spec.KeepDroppedTargets = new(int64(keepDroppedTargets))
		serverDefaults(&spec)
		result = append(result, &monitoringv1alpha1.ScrapeConfig{
			ObjectMeta: withManagedBy(monitoringutils.ConfigObjectMeta(configName+"-"+c.Component, namespace, prometheusName)),
			Spec:       spec,
		})
	}
	return result, nil
}

func (b *Bootstrap) name() string {
	return cmp.Or(b.Name, constants.BootstrapName)
}

// keptSeriesRegex matches "__name__;name;namespace;controller;result" of the series a controller's
// ScrapeConfig keeps: the reconcile totals of its own reconcilers and results, and the per-object
// series of the bootstrap objects.
func keptSeriesRegex(reconcilers []string, b *Bootstrap) string {
	own := `(?:` + quoteAll(reconcilers) + `)`
	keep := []string{
		`controller_runtime_reconcile_total;;;` + own + `;(?:` + quoteAll(reconcileResults) + `)`,
		`controller_runtime_reconcile_errors_total;;;` + own + `;`,
	}
	if b != nil {
		keep = append(keep, `[^;]+;`+regexp.QuoteMeta(b.name())+`;`+regexp.QuoteMeta(b.Namespace)+`;;`)
	}
	return `(?:` + strings.Join(keep, "|") + `)`
}

func quoteAll(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return strings.Join(quoted, "|")
}

// serverDefaults fills in what the API server defaults in a ScrapeConfig (the CRD's default
// action replace of a relabelling), so that the spec Deploy compares is the one the API server
// returns, and an unchanged shoot costs no write.
func serverDefaults(spec *monitoringv1alpha1.ScrapeConfigSpec) {
	for _, configs := range [][]monitoringv1.RelabelConfig{spec.RelabelConfigs, spec.MetricRelabelConfigs} {
		for i := range configs {
			if configs[i].Action == "" {
				configs[i].Action = "replace"
			}
		}
	}
}

// KeptMetrics are the metrics of the delivered controllers that the shoot's Prometheus keeps.
var KeptMetrics = []string{
	"controller_runtime_reconcile_total",
	"controller_runtime_reconcile_errors_total",
	"gotk_reconcile_condition",
	"gotk_reconcile_duration_seconds_bucket",
	"gotk_reconcile_duration_seconds_count",
	"gotk_reconcile_duration_seconds_sum",
	"gotk_suspend_status",
	"kluctldeployments_last_deploy_start_timestamp_seconds",
	"kluctldeployments_number_of_errors",
	"kluctldeployments_number_of_warnings",
}

// DashboardConfigMap returns the ConfigMap with the shoot's GitOps dashboard.
func DashboardConfigMap(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      DashboardConfigMapName,
			Namespace: namespace,
			Labels:    map[string]string{LabelShootDashboard: "true", constants.LabelManagedBy: constants.ExtensionName},
		},
		Data: map[string]string{dashboardKey: dashboard},
	}
}

// Dashboard returns the JSON document of the shoot's GitOps dashboard.
func Dashboard() string { return dashboard }

// Monitoring deploys and removes the monitoring objects of one shoot. It reads them with reader,
// which should not be a cache: the seed has many ConfigMaps and monitoring objects of others, and
// a few reads by name per reconcile cost less than watching them all. It writes only what changed.
type Monitoring struct {
	client    client.Client
	reader    client.Reader
	namespace string
	values    Values
}

// New returns the monitoring objects of the shoot namespace.
func New(c client.Client, reader client.Reader, namespace string, values Values) *Monitoring {
	return &Monitoring{client: c, reader: reader, namespace: namespace, values: values}
}

// Deploy creates or updates the objects and deletes the ScrapeConfigs of controllers that are no
// longer delivered.
func (m *Monitoring) Deploy(ctx context.Context) error {
	scrapeConfigs, err := ScrapeConfigs(m.namespace, m.values)
	if err != nil {
		return err
	}
	existing := &monitoringv1alpha1.ScrapeConfigList{}
	if err := m.reader.List(ctx, existing, client.InNamespace(m.namespace), client.MatchingLabels{constants.LabelManagedBy: constants.ExtensionName}); err != nil {
		return fmt.Errorf("failed listing the ScrapeConfigs: %w", err)
	}
	for i := range existing.Items {
		old := &existing.Items[i]
		if slices.ContainsFunc(scrapeConfigs, func(sc *monitoringv1alpha1.ScrapeConfig) bool { return sc.Name == old.Name }) {
			continue
		}
		if err := client.IgnoreNotFound(m.client.Delete(ctx, old)); err != nil {
			return fmt.Errorf("failed deleting ScrapeConfig %s: %w", old.Name, err)
		}
	}
	for _, sc := range scrapeConfigs {
		current := findScrapeConfig(existing.Items, sc.Name)
		if current == nil {
			if err := m.apply(ctx, sc, nil, nil); err != nil {
				return err
			}
			continue
		}
		if err := m.apply(ctx, sc, current, func() bool { return apiequality.Semantic.DeepEqual(current.Spec, sc.Spec) }); err != nil {
			return err
		}
	}

	rule := PrometheusRule(m.namespace, m.values)
	currentRule := &monitoringv1.PrometheusRule{}
	if err := m.read(ctx, rule, currentRule); err != nil {
		return err
	}
	if err := m.apply(ctx, rule, currentRule, func() bool { return apiequality.Semantic.DeepEqual(currentRule.Spec, rule.Spec) }); err != nil {
		return err
	}

	cm := DashboardConfigMap(m.namespace)
	currentCM := &corev1.ConfigMap{}
	if err := m.read(ctx, cm, currentCM); err != nil {
		return err
	}
	return m.apply(ctx, cm, currentCM, func() bool { return apiequality.Semantic.DeepEqual(currentCM.Data, cm.Data) })
}

// Destroy deletes every monitoring object of the shoot. It deletes only what exists, so that a
// shoot whose monitoring is turned off costs reads, not writes, on every reconcile.
func (m *Monitoring) Destroy(ctx context.Context) error {
	existing := &monitoringv1alpha1.ScrapeConfigList{}
	if err := m.reader.List(ctx, existing, client.InNamespace(m.namespace), client.MatchingLabels{constants.LabelManagedBy: constants.ExtensionName}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("failed listing the ScrapeConfigs: %w", err)
	}
	objects := []client.Object{
		&monitoringv1.PrometheusRule{ObjectMeta: monitoringutils.ConfigObjectMeta(configName, m.namespace, prometheusName)},
		DashboardConfigMap(m.namespace),
	}
	for i := range existing.Items {
		objects = append(objects, &existing.Items[i])
	}
	for _, obj := range objects {
		if err := m.reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				continue
			}
			return fmt.Errorf("failed reading %s: %w", obj.GetName(), err)
		}
		if err := m.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed deleting %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

// withManagedBy marks an object as the extension's, which Deploy and Destroy list by.
func withManagedBy(meta metav1.ObjectMeta) metav1.ObjectMeta {
	meta.Labels[constants.LabelManagedBy] = constants.ExtensionName
	return meta
}

func findScrapeConfig(items []monitoringv1alpha1.ScrapeConfig, name string) *monitoringv1alpha1.ScrapeConfig {
	for i := range items {
		if items[i].Name == name {
			return &items[i]
		}
	}
	return nil
}

// read reads the current state of desired into current; current keeps no name if there is none.
func (m *Monitoring) read(ctx context.Context, desired, current client.Object) error {
	if err := m.reader.Get(ctx, client.ObjectKeyFromObject(desired), current); err != nil {
		if apierrors.IsNotFound(err) {
			current.SetName("")
			return nil
		}
		return fmt.Errorf("failed reading %s: %w", desired.GetName(), err)
	}
	return nil
}

// apply creates desired if current is nil or unnamed, and updates it if its labels or its content
// (sameContent) differ.
func (m *Monitoring) apply(ctx context.Context, desired, current client.Object, sameContent func() bool) error {
	if current == nil || current.GetName() == "" {
		if err := m.client.Create(ctx, desired); err != nil {
			return fmt.Errorf("failed creating %s: %w", desired.GetName(), err)
		}
		return nil
	}
	if sameContent() && labelsKept(current.GetLabels(), desired.GetLabels()) {
		return nil
	}
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	desired.SetLabels(labels)
	desired.SetResourceVersion(current.GetResourceVersion())
	if err := m.client.Update(ctx, desired); err != nil {
		return fmt.Errorf("failed updating %s: %w", desired.GetName(), err)
	}
	return nil
}

func labelsKept(current, desired map[string]string) bool {
	for k, v := range desired {
		if current[k] != v {
			return false
		}
	}
	return true
}
