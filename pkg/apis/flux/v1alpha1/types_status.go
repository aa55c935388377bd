// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequestedVersions are the version selectors of the tenants' configuration layers (project
// ConfigMap, providerConfig); empty where they leave the version to the operator's default.
type RequestedVersions struct {
	// Flux is the selector of flux.version.
	// +optional
	Flux string `json:"flux,omitempty"`
	// Kluctl is the selector of kluctl.version.
	// +optional
	Kluctl string `json:"kluctl,omitempty"`
}

// PendingRelease is a release change that waits for the shoot's maintenance time window.
type PendingRelease struct {
	// FluxVersion is the Flux release the shoot moves to in its window; empty if Flux stays.
	// +optional
	FluxVersion string `json:"fluxVersion,omitempty"`
	// KluctlVersion is the kluctl release the shoot moves to in its window; empty if kluctl stays.
	// +optional
	KluctlVersion string `json:"kluctlVersion,omitempty"`
	// Reason tells why the change waits.
	Reason string `json:"reason"`
	// NextMaintenance is the begin of the shoot's next maintenance time window.
	// +optional
	NextMaintenance *metav1.Time `json:"nextMaintenance,omitempty"`
}

// ForcedMove is a move of a shoot off an expired release, to the newest supported patch of its
// minor or else of the next minor with a supported release.
type ForcedMove struct {
	// Component is flux or kluctl.
	Component string `json:"component"`
	// From is the expired release.
	From string `json:"from"`
	// To is the release that replaced it.
	To string `json:"to"`
	// ExpirationDate is when From expired.
	ExpirationDate metav1.Time `json:"expirationDate"`
	// Time is when the shoot was moved.
	Time metav1.Time `json:"time"`
}

// StoredVersions is the stored-version migration before the controllers' CRDs change.
type StoredVersions struct {
	// CheckedFor names the Flux and kluctl releases and components whose CRDs the shoot's CRDs
	// were last checked against, e.g. "flux v2.9.5 (helm-controller,kustomize-controller,...)";
	// a change of them checks again.
	CheckedFor string `json:"checkedFor"`
	// Migrated are the kinds whose objects the last migration rewrote; a later check that
	// migrates nothing keeps them.
	// +optional
	Migrated []MigratedKind `json:"migrated,omitempty"`
	// Time is when the last migration ran; unset while none ran.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// MigratedKind is the migration of one CRD's objects.
type MigratedKind struct {
	// CRD is the CRD's name, e.g. ocirepositories.source.toolkit.fluxcd.io.
	CRD string `json:"crd"`
	// Kind is the objects' kind.
	Kind string `json:"kind"`
	// From are the versions removed from the CRD's status.storedVersions.
	From []string `json:"from"`
	// To is the storage version the objects were rewritten at, now the only stored version.
	To string `json:"to"`
	// Objects is the number of objects rewritten.
	Objects int32 `json:"objects"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FluxStatus is what the extension reports in the Extension providerStatus.
type FluxStatus struct {
	metav1.TypeMeta `json:",inline"`

	// FluxVersion is the installed Flux release, the one flux.version selected (a minor selects
	// its newest embedded patch).
	// +optional
	FluxVersion string `json:"fluxVersion,omitempty"`
	// KluctlVersion is the installed kluctl release; empty when kluctl is disabled.
	// +optional
	KluctlVersion string `json:"kluctlVersion,omitempty"`
	// Requested are the version selectors the shoot's owner and project admin wrote when the
	// installed releases were selected; a release that changes while they stay the same is a
	// change nobody of the project asked for, installed in the maintenance time window.
	// +optional
	Requested *RequestedVersions `json:"requested,omitempty"`
	// Pending is a change of the releases nobody of the project asked for that waits for the
	// shoot's maintenance time window; nil if none.
	// +optional
	Pending *PendingRelease `json:"pending,omitempty"`
	// ForcedMoves are the last move of each component off a release the operator let expire
	// (rollout.releases of the extension's configuration), made in the shoot's maintenance time
	// window; the Extension has an event ReleaseExpired for each.
	// +optional
	ForcedMoves []ForcedMove `json:"forcedMoves,omitempty"`
	// StoredVersions is the last check of the shoot's CRDs for versions listed in their
	// status.storedVersions that the CRDs about to be installed no longer have, and the migration
	// it made: the objects of such a kind are rewritten at the new storage version and
	// storedVersions trimmed before the controllers are deployed (docs/operations/upgrades.md).
	// +optional
	StoredVersions *StoredVersions `json:"storedVersions,omitempty"`
	// Images are the container images of the installed controllers, keyed by component:
	// source-controller, kustomize-controller, helm-controller, notification-controller and
	// kluctl-controller, as far as installed.
	// +optional
	Images map[string]string `json:"images,omitempty"`
	// Management is the effective flux.management: continuous or handover.
	// +optional
	Management string `json:"management,omitempty"`
	// HandedOverAt is when the extension handed the controllers over and stopped managing them;
	// unset while it manages them (management continuous).
	// +optional
	HandedOverAt *metav1.Time `json:"handedOverAt,omitempty"`
	// HandedOverVersion is the Flux release the extension installed before handing the controllers
	// over. In management handover, fluxVersion and images tell what the configuration selects,
	// which the extension does not roll out.
	// +optional
	HandedOverVersion string `json:"handedOverVersion,omitempty"`
	// Repository is the bootstrapped repository URL.
	// +optional
	Repository string `json:"repository,omitempty"`
	// Ref is the bootstrapped revision.
	// +optional
	Ref string `json:"ref,omitempty"`
	// BootstrapMode is the effective bootstrap mode.
	// +optional
	BootstrapMode string `json:"bootstrapMode,omitempty"`
	// BootstrapName is the name of the bootstrap objects in the shoot; empty means
	// shoot-flux-bootstrap.
	// +optional
	BootstrapName string `json:"bootstrapName,omitempty"`
	// PublicKey is the authorized_keys line of the deploy key to add to the repository.
	// +optional
	PublicKey string `json:"publicKey,omitempty"`
	// Fingerprint is the SHA256 fingerprint of the deploy key.
	// +optional
	Fingerprint string `json:"fingerprint,omitempty"`
	// NextPublicKey is the authorized_keys line of the pending deploy key a staged rotation
	// prepared: add it to the repository before the rotation makes it the deploy key.
	// +optional
	NextPublicKey string `json:"nextPublicKey,omitempty"`
	// NextFingerprint is the SHA256 fingerprint of the pending deploy key.
	// +optional
	NextFingerprint string `json:"nextFingerprint,omitempty"`
	// LastAppliedRevision is the revision of the repository the bootstrap last applied in the
	// shoot, as its controller reports it: the commit of kluctl's last deployment, the
	// lastAppliedRevision of the Flux Kustomization (e.g. main@sha1:<commit>). The health check
	// updates it within a sync period of the controller's report.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// DeployKeySecret is the garden Secret that holds the deploy key.
	// +optional
	DeployKeySecret string `json:"deployKeySecret,omitempty"`
	// DeployKey is the name of the deploy key in DeployKeySecret; its public key is in the data
	// key "<name>.identity.pub".
	// +optional
	DeployKey string `json:"deployKey,omitempty"`
	// ProjectConfigHash identifies the data of the project ConfigMap flux-config this state was
	// built from; empty when the project has none. After a restart, the extension reconciles only
	// the shoots whose hash differs from their project's current ConfigMap.
	// +optional
	ProjectConfigHash string `json:"projectConfigHash,omitempty"`
	// KubernetesVersion is the shoot's Kubernetes version this state was reconciled for; the
	// metric of shoots outside their Flux release's Kubernetes range reads it.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// NativeProviderConfig is the providerConfig of this extension that a providerConfig written
	// for stackit's extension converts to, as YAML: write it into the Shoot to move to it. Empty for
	// a providerConfig of this extension.
	// +optional
	NativeProviderConfig string `json:"nativeProviderConfig,omitempty"`
	// Warnings are problems that do not stop the reconciliation.
	// +optional
	Warnings []string `json:"warnings,omitempty"`
	// Message summarises the state for humans.
	// +optional
	Message string `json:"message,omitempty"`
}
