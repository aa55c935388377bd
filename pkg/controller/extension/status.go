// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"encoding/json"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/handover"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rollout"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/source"
)

// statusParts are the results of the reconcile's steps that the providerStatus reports.
type statusParts struct {
	ex             *extensionsv1alpha1.Extension
	cluster        *extensionscontroller.Cluster
	cfg            *fluxapi.FluxConfig
	requested      fluxconfig.Requested
	configHash     string
	previous       *fluxv1alpha1.FluxStatus
	selection      rollout.Selection
	source         *source.Result
	images         map[string]string
	storedVersions *fluxv1alpha1.StoredVersions
	handover       handover.Result
	// adoptionWarning says that a repository that manages Flux itself keeps the controllers.
	adoptionWarning string
}

// newStatus is the one place that builds the providerStatus. The warnings come in the order the
// steps ran: the providerConfig's conversion, the Kubernetes range, the source, the handover.
func (a *actuator) newStatus(p statusParts) *fluxv1alpha1.FluxStatus {
	cfg := p.cfg
	status := &fluxv1alpha1.FluxStatus{
		BootstrapMode:     string(cfg.Bootstrap.Mode),
		ProjectConfigHash: p.configHash,
		Requested:         &fluxv1alpha1.RequestedVersions{},
		Pending:           p.selection.Pending,
		ForcedMoves:       p.selection.ForcedMoves,
		KubernetesVersion: p.cluster.Shoot.Spec.Kubernetes.Version,
		Images:            p.images,
		StoredVersions:    p.storedVersions,
		Management:        string(cfg.Flux.Management),
	}
	for _, c := range releases.Specs {
		if c.Enabled(cfg) {
			*c.Installed(status) = *c.Version(cfg)
		}
		*c.Requested(status.Requested) = *c.Requested(&p.requested)
	}
	if name := bootstrap.ObjectName(cfg); name != constants.BootstrapName {
		status.BootstrapName = name
	}
	a.reportConversion(p.ex, status)
	if p.selection.KubernetesWarning != "" {
		status.Warnings = append(status.Warnings, p.selection.KubernetesWarning)
	}

	src := p.source
	status.Repository, status.Ref, status.Message = src.Repository, src.Ref, src.Message
	if key := src.DeployKey; key != nil {
		status.PublicKey, status.Fingerprint = key.AuthorizedKey, key.Fingerprint
		status.NextPublicKey, status.NextFingerprint = key.NextAuthorizedKey, key.NextFingerprint
		status.DeployKeySecret, status.DeployKey = src.DeployKeySecret, key.KeyName
	}
	status.Warnings = append(status.Warnings, src.Warnings...)
	// The shoot runs the revision the health check recorded until its controller applies another
	// one; the status patch would otherwise drop it.
	if src.Values != nil && p.previous != nil {
		status.LastAppliedRevision = p.previous.LastAppliedRevision
	}

	if p.adoptionWarning != "" {
		status.Warnings = append(status.Warnings, p.adoptionWarning)
	}
	if h := p.handover.Handover; h != nil {
		status.HandedOverAt, status.HandedOverVersion = &h.At, h.Version
		if p.handover.Warning != "" {
			status.Warnings = append(status.Warnings, p.handover.Warning)
			status.FluxVersion = h.Version
		}
		if p.handover.Images != nil {
			status.Images = p.handover.Images
		}
	}
	return status
}

// reportConversion shows the shoot owner what a providerConfig of stackit's extension became, so
// that he can write it instead. The document is bounded like a project's config.yaml: the
// providerConfig it comes from is, but its conversion spells out stackit's defaults.
func (a *actuator) reportConversion(ex *extensionsv1alpha1.Extension, status *fluxv1alpha1.FluxStatus) {
	conv := fluxconfig.ProviderConfigConversion(ex.Spec.ProviderConfig, manifests.SupportedVersions())
	if conv == nil {
		return
	}
	for _, w := range conv.Warnings {
		status.Warnings = append(status.Warnings, "spec.providerConfig "+w)
	}
	if limit := int(a.config.Limits.ProjectConfigMaxBytes); limit > 0 && len(conv.Native) > limit {
		status.Warnings = append(status.Warnings, fmt.Sprintf("the converted providerConfig has %d bytes, more than limits.projectConfigMaxBytes (%d), and is not shown", len(conv.Native), limit))
		return
	}
	status.NativeProviderConfig = conv.Native
}

// updateStatus writes the providerStatus and the status.state of a handover; resyncs of unchanged
// shoots do not write.
func (a *actuator) updateStatus(ctx context.Context, ex *extensionsv1alpha1.Extension, status *fluxv1alpha1.FluxStatus, h *managedresource.Handover) error {
	raw, err := helper.EncodeStatus(status)
	if err != nil {
		return err
	}
	state, err := handover.State(h)
	if err != nil {
		return err
	}
	conditions, foreign := adoption.WithoutForeignConditions(ex.Status.Conditions)
	if !foreign && ex.Status.ProviderStatus != nil && jsonEqual(ex.Status.ProviderStatus.Raw, raw.Raw) && rawEqual(ex.Status.State, state) {
		return nil
	}
	patch := client.MergeFrom(ex.DeepCopy())
	if foreign {
		// The list is replaced as a whole: the health check's conditions written meanwhile must not be lost.
		patch = client.MergeFromWithOptions(ex.DeepCopy(), client.MergeFromWithOptimisticLock{})
		ex.Status.Conditions = conditions
	}
	ex.Status.ProviderStatus = raw
	ex.Status.State = state
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("failed updating provider status: %w", err)
	}
	return nil
}

func rawEqual(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	return jsonEqual(a.Raw, b.Raw)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(x, y)
}
