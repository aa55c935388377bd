// Package monitoring adds the delivered controllers to the shoot's own monitoring, Gardener's
// contract for extensions (gardener docs/extensions/logging-and-monitoring.md): ScrapeConfigs and a
// PrometheusRule labelled prometheus=shoot and a dashboard ConfigMap labelled
// dashboard.monitoring.gardener.cloud/shoot=true in the shoot's namespace of the seed, which the
// shoot's Prometheus, Plutono and alerting pick up. The controllers run in the shoot, so the shoot's
// Prometheus scrapes them through the shoot's kube-apiserver with its shoot-access token.
package monitoring

import (
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

// Bootstrap are the bootstrap objects in the shoot, named constants.BootstrapName.
type Bootstrap struct {
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

// ScrapeConfigs return a ScrapeConfig per delivered controller. Each keeps only the series the
// rules and the dashboard use, and of the per-object series only those of the bootstrap objects:
// the shoot owner decides how many Flux and kluctl objects the shoot has, and the shoot's
// Prometheus runs in the seed.
func ScrapeConfigs(namespace string, values Values) ([]*monitoringv1alpha1.ScrapeConfig, error) {
	keep := []string{`controller_runtime_reconcile_(?:errors_)?total;;`}
	if b := values.Bootstrap; b != nil {
		keep = append(keep, `[^;]+;`+regexp.QuoteMeta(constants.BootstrapName)+`;`+regexp.QuoteMeta(b.Namespace))
	}
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
		spec.MetricRelabelConfigs = append(spec.MetricRelabelConfigs, monitoringv1.RelabelConfig{
			SourceLabels: []monitoringv1.LabelName{"__name__", "name", "namespace"},
			Action:       "keep",
			Regex:        `(?:` + strings.Join(keep, "|") + `)`,
		})
		result = append(result, &monitoringv1alpha1.ScrapeConfig{
			ObjectMeta: withManagedBy(monitoringutils.ConfigObjectMeta(configName+"-"+c.Component, namespace, prometheusName)),
			Spec:       spec,
		})
	}
	return result, nil
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
