// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// ConditionTypeBootstrapReady is the Extension condition that tells the shoot owner whether the
// bootstrap deployment of the configured repository works. gardenlet maps only its well-known
// condition types (SystemComponentsHealthy, ...) into the Shoot, so a broken user repository is
// visible here without marking the shoot's system components unhealthy.
const ConditionTypeBootstrapReady = "BootstrapReady"

// BootstrapChecker reports the state of the bootstrap objects in the shoot: the KluctlDeployment
// in kluctl mode, the GitRepository and Kustomization in flux mode.
type BootstrapChecker struct {
	logger   logr.Logger
	seed     client.Client
	shoot    client.Client
	reporter *RevisionReporter
}

var (
	_ healthcheck.HealthCheck  = (*BootstrapChecker)(nil)
	_ healthcheck.SourceClient = (*BootstrapChecker)(nil)
	_ healthcheck.TargetClient = (*BootstrapChecker)(nil)
)

// CheckBootstrap returns a health check of the bootstrap objects that hands a newly applied
// revision to reporter.
func CheckBootstrap(reporter *RevisionReporter) *BootstrapChecker {
	return &BootstrapChecker{logger: logf.Log.WithName("healthcheck-bootstrap"), reporter: reporter}
}

// InjectSourceClient implements healthcheck.SourceClient.
func (b *BootstrapChecker) InjectSourceClient(c client.Client) { b.seed = c }

// InjectTargetClient implements healthcheck.TargetClient.
func (b *BootstrapChecker) InjectTargetClient(c client.Client) { b.shoot = c }

// SetLoggerSuffix implements healthcheck.HealthCheck.
func (b *BootstrapChecker) SetLoggerSuffix(provider, extension string) {
	b.logger = logf.Log.WithName("healthcheck-bootstrap").WithValues("provider", provider, "extension", extension)
}

// Check implements healthcheck.HealthCheck.
func (b *BootstrapChecker) Check(ctx context.Context, request types.NamespacedName) (*healthcheck.SingleCheckResult, error) {
	result, newRevision, err := CheckBootstrapState(ctx, b.seed, b.shoot, request)
	if err == nil && newRevision != "" && b.reporter != nil {
		b.reporter.Report(request, newRevision)
	}
	return result, err
}

// CheckBootstrapState evaluates the bootstrap objects of the Extension named by request.
// newRevision is the revision the bootstrap last applied if the providerStatus does not record it
// yet, empty otherwise.
func CheckBootstrapState(ctx context.Context, seed, shoot client.Client, request types.NamespacedName) (result *healthcheck.SingleCheckResult, newRevision string, err error) {
	ex := &extensionsv1alpha1.Extension{}
	if err := seed.Get(ctx, request, ex); err != nil {
		return nil, "", fmt.Errorf("failed reading extension: %w", err)
	}
	status := bootstrapStatus(ex)
	if status == nil {
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue, Detail: "no bootstrap configured"}, "", nil
	}
	kinds := bootstrap.ObjectKinds(fluxapi.BootstrapMode(status.BootstrapMode), strings.HasPrefix(status.Repository, helper.OCIScheme))
	if len(kinds) == 0 {
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue, Detail: "no bootstrap configured"}, "", nil
	}
	name := cmp.Or(status.BootstrapName, constants.BootstrapName)
	namespace, err := bootstrapNamespace(ctx, seed, request.Namespace, kinds[len(kinds)-1], name)
	if err != nil {
		return nil, "", err
	}
	result, applied, err := checkObjects(ctx, shoot, namespace, name, kinds...)
	if err != nil || applied == status.LastAppliedRevision {
		return result, "", err
	}
	return result, applied, nil
}

// bootstrapStatus returns the providerStatus of the last successful reconcile if it deployed a
// bootstrap: one with a source. An unreadable status counts as none; the next reconcile replaces it.
func bootstrapStatus(ex *extensionsv1alpha1.Extension) *fluxv1alpha1.FluxStatus {
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil || status == nil || status.Repository == "" {
		return nil
	}
	return status
}

// bootstrapNamespace returns the namespace of the bootstrap objects in the shoot as the bootstrap
// ManagedResource's status records it for the deployer name, or the mode's default before the
// first apply, so that the check reads a fixed number of objects by name instead of listing.
func bootstrapNamespace(ctx context.Context, seed client.Client, seedNamespace string, deployer schema.GroupVersionKind, name string) (string, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, mr); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("failed reading managed resource %s: %w", constants.ManagedResourceBootstrap, err)
	}
	for _, ref := range mr.Status.Resources {
		if ref.Kind == deployer.Kind && ref.Name == name && ref.Namespace != "" {
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == deployer.Group {
				return ref.Namespace, nil
			}
		}
	}
	if deployer == bootstrap.KluctlDeploymentGVK {
		return fluxv1alpha1.DefaultKluctlNamespace, nil
	}
	return fluxv1alpha1.DefaultFluxNamespace, nil
}

// checkObjects returns the readiness of the first object of gvks named name in namespace that is not ready,
// and the revision that the last of them, the one that deploys, reports as applied.
func checkObjects(ctx context.Context, shoot client.Client, namespace, name string, gvks ...schema.GroupVersionKind) (*healthcheck.SingleCheckResult, string, error) {
	var result *healthcheck.SingleCheckResult
	applied := ""
	for _, gvk := range gvks {
		kind := gvk.Kind
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := shoot.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: fmt.Sprintf("%s %s not found in the shoot (namespace %s)", kind, name, namespace)}, "", nil
			}
			return nil, "", fmt.Errorf("failed reading %s %s/%s in the shoot: %w", kind, namespace, name, err)
		}
		if rev := appliedRevision(kind, obj); rev != "" {
			applied = rev
		}
		if r := readiness(kind, obj); r.Status != gardencorev1beta1.ConditionTrue && result == nil {
			result = r
		}
	}
	if result == nil {
		result = &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue}
	}
	return result, applied, nil
}

// maxDetail bounds the condition detail: a message names the cause, not every failing object.
const maxDetail = 400

// readiness interprets the Ready condition that kluctl and Flux controllers report, and kluctl's
// own status fields: lastPrepareError (Ready=False only points there) and the errors of the last
// deploy result, which may exist while Ready is still True.
func readiness(kind string, obj *unstructured.Unstructured) *healthcheck.SingleCheckResult {
	name := fmt.Sprintf("%s %s/%s", kind, obj.GetNamespace(), obj.GetName())
	if rev := revision(kind, obj); rev != "" {
		// Named first, so that shortening a long cause keeps it.
		name += " (" + rev + ")"
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var ready map[string]any
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			ready = m
		}
	}
	threshold := BootstrapProgressingThreshold
	if ready == nil {
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionProgressing, Detail: name + " has not reported readiness yet", ProgressingThreshold: &threshold}
	}
	message, _ := ready["message"].(string)
	reason, _ := ready["reason"].(string)
	switch ready["status"] {
	case "True":
	case "Unknown":
		// kluctl and Flux report Unknown while they reconcile; only lasting too long is a failure.
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionProgressing, Detail: shorten(fmt.Sprintf("%s is reconciling (%s): %s", name, reason, message)), ProgressingThreshold: &threshold}
	default:
		if prepareError, _, _ := unstructured.NestedString(obj.Object, "status", "lastPrepareError"); prepareError != "" {
			message = prepareError
		}
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: shorten(fmt.Sprintf("%s is not ready (%s): %s", name, reason, message))}
	}
	if errs := deployErrors(obj); len(errs) > 0 {
		return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionFalse, Detail: shorten(fmt.Sprintf("%s: last deployment had %d error(s): %s", name, len(errs), strings.Join(errs, "; ")))}
	}
	return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue}
}

// revision names the revision the object last deployed, as its controller reports it (kluctl's
// commit, a Kustomization's applied or a source's fetched revision); empty without one. It tells
// the shoot owner what the shoot runs while the bootstrap is not ready; only unsuccessful
// conditions carry it, as the library writes a fixed message for healthy ones.
func revision(kind string, obj *unstructured.Unstructured) string {
	label, rev := readRevision(kind, obj)
	if rev == "" {
		return ""
	}
	return label + " " + rev
}

// appliedRevision is the revision an object that deploys (KluctlDeployment, Kustomization)
// reports as applied; empty for a source or while there is none.
func appliedRevision(kind string, obj *unstructured.Unstructured) string {
	if kind == bootstrap.GitRepositoryGVK.Kind || kind == bootstrap.OCIRepositoryGVK.Kind {
		return ""
	}
	_, rev := readRevision(kind, obj)
	return rev
}

// MaxRevisionLength bounds a revision read from the shoot, in bytes. The shoot's admin controls
// the status of the bootstrap objects, and the revision goes into the seed's Extension status
// (condition detail, providerStatus.lastAppliedRevision); real ones are a few dozen characters
// (main@sha1:<40 hex>, an OCI tag with a sha256 digest).
const MaxRevisionLength = 256

// revisionCut ends a revision that was cut to MaxRevisionLength.
const revisionCut = "...(cut)"

// readRevision reads the revision of an object as revisionField names it, cut to
// MaxRevisionLength: the one place where revisions enter from the shoot.
func readRevision(kind string, obj *unstructured.Unstructured) (label, rev string) {
	label, path := revisionField(kind)
	if path == nil {
		return "", ""
	}
	rev, _, _ = unstructured.NestedString(obj.Object, path...)
	if len(rev) > MaxRevisionLength {
		rev = strings.ToValidUTF8(rev[:MaxRevisionLength-len(revisionCut)], "") + revisionCut
	}
	return label, rev
}

func revisionField(kind string) (label string, path []string) {
	switch kind {
	case bootstrap.KluctlDeploymentGVK.Kind:
		return "last deployed commit", []string{"status", "lastDeployResult", "gitInfo", "commit"}
	case bootstrap.KustomizationGVK.Kind:
		return "last applied revision", []string{"status", "lastAppliedRevision"}
	case bootstrap.GitRepositoryGVK.Kind, bootstrap.OCIRepositoryGVK.Kind:
		return "last fetched revision", []string{"status", "artifact", "revision"}
	}
	return "", nil
}

// deployErrors reads status.lastDeployResult.errors as kluctl writes it: a list of
// {ref: {group, version, kind, namespace, name}, message}.
func deployErrors(obj *unstructured.Unstructured) []string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "lastDeployResult", "errors")
	var out []string
	for _, item := range list {
		e, ok := item.(map[string]any)
		if !ok {
			continue
		}
		message, _ := e["message"].(string)
		ref, _ := e["ref"].(map[string]any)
		kind, _ := ref["kind"].(string)
		namespace, _ := ref["namespace"].(string)
		objName, _ := ref["name"].(string)
		switch {
		case kind == "":
		case namespace == "":
			message = fmt.Sprintf("%s %s: %s", kind, objName, message)
		default:
			message = fmt.Sprintf("%s %s/%s: %s", kind, namespace, objName, message)
		}
		out = append(out, message)
	}
	return out
}

func shorten(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	return s[:maxDetail-3] + "..."
}
