// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package monitoring

import (
	"fmt"
	"strings"

	monitoringutils "github.com/gardener/gardener/pkg/component/observability/monitoring/utils"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

const (
	// FailingFor is how long a repository source or deployment must fail before its alert fires.
	// The health check's BootstrapReady turns False after 10 minutes; the alert follows once the
	// controllers had time to retry (their default retry interval is 1 to 5 minutes).
	FailingFor = "15m"
	// ControllerDownFor is how long no pod of a delivered controller may answer.
	ControllerDownFor = "15m"

	// RecordErrors and RecordSuccesses are the recorded reconcile rates per controller. Gardener
	// federates recording rules named shoot:<metric>:<aggregation> to its aggregate Prometheus.
	RecordErrors    = "shoot:shoot_flux_reconcile_errors:rate10m"
	RecordSuccesses = "shoot:shoot_flux_reconcile_successes:rate10m"

	// Alert names.
	AlertControllerDown    = "ShootFluxControllerDown"
	AlertSourceFailing     = "ShootFluxSourceFailing"
	AlertDeploymentFailing = "ShootFluxDeploymentFailing"

	ruleGroup = "shoot-flux.rules"
	// serviceLabel groups the alerts of the extension in the shoot's alerting.
	serviceLabel = "shoot-flux"
)

// Records are the recording rules every shoot gets.
var Records = []string{RecordErrors, RecordSuccesses}

// PrometheusRule returns the recording and alerting rules of the shoot's GitOps: a delivered
// controller that is down, and, with bootstrap objects, a repository source or a deployment that
// keeps failing. The alerts are for the shoot owner (visibility owner), who owns the repository.
func PrometheusRule(namespace string, values Values) *monitoringv1.PrometheusRule {
	var rules []monitoringv1.Rule
	if len(values.Controllers) > 0 {
		rules = append(rules,
			monitoringv1.Rule{
				Record: RecordErrors,
				Expr:   intstr.FromString(`sum by (job, controller) (` + reconcileRates("controller_runtime_reconcile_errors_total", "", values.Controllers) + `)`),
			},
			// Flux's controllers requeue a successful reconcile after its interval (result
			// requeue_after) and return failures as errors.
			monitoringv1.Rule{
				Record: RecordSuccesses,
				Expr:   intstr.FromString(`sum by (job, controller) (` + reconcileRates("controller_runtime_reconcile_total", `,result=~"success|requeue_after"`, values.Controllers) + `)`),
			},
		)
	}
	for _, c := range values.Controllers {
		rules = append(rules, monitoringv1.Rule{
			Alert:  AlertControllerDown,
			Expr:   intstr.FromString(fmt.Sprintf(`absent(up{job=%q} == 1)`, JobName(c.Component))),
			For:    new(monitoringv1.Duration(ControllerDownFor)),
			Labels: alertLabels("warning", map[string]string{"controller": c.Component}),
			Annotations: map[string]string{
				"summary": fmt.Sprintf("The %s of the shoot's GitOps is down.", c.Component),
				"description": fmt.Sprintf("No pod of Deployment %s/%s answered the shoot's Prometheus for %s: the shoot's "+
					"repository is not applied until it runs again. `kubectl -n %s get pods` and `kubectl -n %s describe "+
					"deployment %s` in the shoot show why (image pull, scheduling, crash loop, resources).",
					c.Namespace, c.Component, ControllerDownFor, c.Namespace, c.Namespace, c.Component),
			},
		})
	}
	if b := values.Bootstrap; b != nil {
		rules = append(rules, bootstrapRules(b)...)
	}
	return &monitoringv1.PrometheusRule{
		ObjectMeta: withManagedBy(monitoringutils.ConfigObjectMeta(configName, namespace, prometheusName)),
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: ruleGroup, Rules: rules}}},
	}
}

// bootstrapRules alert on the bootstrap objects: on kluctl's Ready condition per KluctlDeployment
// and, as Flux exports no object conditions since 2.1, on source-controller's failed fetches.
// kustomize-controller requeues a failed Kustomization without an error
// (test/promrules/samples), so only the health check's BootstrapReady reports it.
func bootstrapRules(b *Bootstrap) []monitoringv1.Rule {
	keyHint := ""
	if b.DeployKey {
		keyHint = " The repository is fetched with the extension's deploy key: if the host refuses it, register the public key " +
			"(providerStatus.publicKey of the shoot's Extension, or the ConfigMap " + constants.StatusConfigMapName + " in namespace " +
			b.Namespace + " of the shoot) as a read-only deploy key of the repository."
	}
	if b.Mode == fluxapi.BootstrapModeKluctl {
		return []monitoringv1.Rule{{
			Alert: AlertDeploymentFailing,
			Expr: intstr.FromString(fmt.Sprintf(`max by (namespace, name) (gotk_reconcile_condition{job=%q,kind="KluctlDeployment",name=%q,namespace=%q,type="Ready",status="False"}) == 1`,
				JobName(fluxapi.ComponentKluctlController), b.name(), b.Namespace)),
			For:    new(monitoringv1.Duration(FailingFor)),
			Labels: alertLabels("warning", nil),
			Annotations: map[string]string{
				"summary": "KluctlDeployment {{ $labels.namespace }}/{{ $labels.name }} of the shoot is not ready.",
				"description": "The kluctl controller has reported KluctlDeployment {{ $labels.namespace }}/{{ $labels.name }} not ready for " + FailingFor +
					": it cannot fetch the repository or deploy it, and the shoot keeps what was deployed last. " +
					"`kubectl -n {{ $labels.namespace }} get kluctldeployment {{ $labels.name }} -o yaml` in the shoot shows the cause in status.conditions " +
					"and status.lastDeployResult; fix the repository, the target or the credentials." + keyHint,
			},
		}}
	}

	sourceKind, sourceController := "GitRepository", "gitrepository"
	if b.OCI {
		sourceKind, sourceController = "OCIRepository", "ocirepository"
	}
	return []monitoringv1.Rule{{
		Alert:  AlertSourceFailing,
		Expr:   intstr.FromString(failingExpr(fluxapi.ComponentSourceController, sourceController)),
		For:    new(monitoringv1.Duration(FailingFor)),
		Labels: alertLabels("warning", map[string]string{"kind": sourceKind}),
		Annotations: map[string]string{
			"summary": fmt.Sprintf("%s %s/%s of the shoot cannot be fetched.", sourceKind, b.Namespace, b.name()),
			"description": fmt.Sprintf("source-controller has fetched no %s of the shoot for %s while its attempts fail, so the shoot "+
				"keeps the revision fetched last. `kubectl -n %s describe %s %s` in the shoot names the cause: the "+
				"URL, the ref, the credentials or the host.", sourceKind, FailingFor, b.Namespace, sourceController, b.name()) + keyHint,
		},
	}}
}

// reconcileRates is the 10 minutes' rate of metric of each delivered controller's own reconcilers,
// so that the records, which Gardener federates, have at most one series per reconciler of a
// delivered controller whatever a pod of the shoot exports (the ScrapeConfigs keep only these too).
func reconcileRates(metric, matchers string, controllers []Controller) string {
	var rates []string
	for _, c := range controllers {
		endpoint, err := manifests.ControllerMetricsEndpoint(c.Component)
		if err != nil {
			// ScrapeConfigs refuses the controller; it has no series.
			continue
		}
		rates = append(rates, fmt.Sprintf(`rate(%s{job=%q,controller=~%q%s}[10m])`, metric, JobName(c.Component), quoteAll(endpoint.Reconcilers), matchers))
	}
	return strings.Join(rates, " or ")
}

// failingExpr is true while the controller's reconciles of the kind fail and none succeeds.
func failingExpr(component, controller string) string {
	selector := fmt.Sprintf(`{job=%q,controller=%q}`, JobName(component), controller)
	return RecordErrors + selector + " > 0 unless on (job, controller) " + RecordSuccesses + selector + " > 0"
}

func alertLabels(severity string, extra map[string]string) map[string]string {
	labels := map[string]string{
		"service":    serviceLabel,
		"severity":   severity,
		"type":       "shoot",
		"visibility": "owner",
	}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}
