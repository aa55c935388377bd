// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package flux

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	// ComponentSourceController is the Flux source-controller; every installation needs it.
	ComponentSourceController = "source-controller"
	// ComponentKustomizeController is the Flux kustomize-controller; bootstrap mode flux needs it.
	ComponentKustomizeController = "kustomize-controller"
	// ComponentHelmController is the Flux helm-controller.
	ComponentHelmController = "helm-controller"
	// ComponentNotificationController is the Flux notification-controller.
	ComponentNotificationController = "notification-controller"
)

// KnownComponents lists the Flux components the extension can install, in installation order.
var KnownComponents = []string{
	ComponentSourceController,
	ComponentKustomizeController,
	ComponentHelmController,
	ComponentNotificationController,
}

const (
	// ComponentKluctlController is the kluctl controller, the key of its settings in
	// FluxConfig.Controllers.
	ComponentKluctlController = "kluctl-controller"
	// ControllersDefaults is the key of FluxConfig.Controllers whose settings apply to every
	// controller, below the settings under the controller's own key.
	ControllersDefaults = "defaults"
)

// BootstrapMode selects which object the extension creates in the shoot to apply the repository.
type BootstrapMode string

const (
	// BootstrapModeKluctl creates a KluctlDeployment.
	BootstrapModeKluctl BootstrapMode = "kluctl"
	// BootstrapModeFlux creates a Flux GitRepository and Kustomization.
	BootstrapModeFlux BootstrapMode = "flux"
	// BootstrapModeNone installs the controllers only.
	BootstrapModeNone BootstrapMode = "none"
)

// ManagementMode tells who owns the Flux controllers once they are installed.
type ManagementMode string

const (
	// ManagementContinuous keeps the controllers owned by the extension: drift is reverted and
	// version changes roll out.
	ManagementContinuous ManagementMode = "continuous"
	// ManagementHandover installs the controllers once and hands them over to the user, whose
	// repository then manages Flux itself.
	ManagementHandover ManagementMode = "handover"
)

// RepositoryType tells whether the repository needs credentials.
type RepositoryType string

const (
	// RepositoryTypePublic repositories are fetched without credentials.
	RepositoryTypePublic RepositoryType = "public"
	// RepositoryTypePrivate repositories are fetched with a generated deploy key or user credentials.
	RepositoryTypePrivate RepositoryType = "private"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FluxConfig is the effective shoot-flux configuration of one shoot.
type FluxConfig struct {
	metav1.TypeMeta

	// Flux configures the Flux controllers.
	Flux Flux
	// Kluctl configures the kluctl controller.
	Kluctl Kluctl
	// Source is the git repository or OCI artifact to bootstrap from; nil installs the controllers
	// only.
	Source *Source
	// Bootstrap configures the object that applies the repository.
	Bootstrap Bootstrap
	// AdditionalSecretResources are Shoot spec.resources Secrets copied into the shoot.
	AdditionalSecretResources []AdditionalSecretResource
	// Controllers tune the Deployments of the controllers, keyed by ControllersDefaults or a
	// component (KnownComponents or ComponentKluctlController). In the configuration
	// fluxconfig.Resolve returns, the defaults are applied to the entry of every component.
	Controllers map[string]ControllerSettings
	// Monitoring configures the shoot's own monitoring of its GitOps.
	Monitoring Monitoring
}

// Monitoring configures what the extension adds to Gardener's monitoring of the shoot.
type Monitoring struct {
	// Shoot configures the shoot's own monitoring.
	Shoot ShootMonitoring
}

// ShootMonitoring configures the delivered controllers' part of the shoot's own monitoring.
type ShootMonitoring struct {
	// Enabled adds the scrape configuration, rules and dashboard of the delivered controllers.
	Enabled bool
}

// ControllerSettings tune the Deployment of a controller; unset fields keep the rendered manifests.
type ControllerSettings struct {
	// Resources replace the resource requirements of the controller's container.
	Resources *corev1.ResourceRequirements
	// Tolerations replace the tolerations of the pods.
	Tolerations []corev1.Toleration
	// NodeSelector adds to the node selector of the pods.
	NodeSelector map[string]string
	// PriorityClassName is the priority class of the pods.
	PriorityClassName string
	// Concurrent is the number of objects the controller reconciles at the same time.
	Concurrent *int32
}

// Flux configures the Flux controllers.
type Flux struct {
	// Version selects the Flux release, a release or a minor (see helper.ResolveVersion); in the
	// configuration fluxconfig.Resolve returns it is the selected release, with a leading "v".
	Version string
	// Components are the Flux controllers to install.
	Components []string
	// Namespace is the namespace of the Flux controllers.
	Namespace string
	// Management tells whether the extension keeps owning the controllers after installing them.
	Management ManagementMode
}

// Kluctl configures the kluctl controller.
type Kluctl struct {
	// Enabled installs the kluctl controller.
	Enabled bool
	// Version selects the kluctl release like Flux.Version.
	Version string
	// Namespace is the namespace of the kluctl controller.
	Namespace string
}

// Bootstrap configures the object that applies the repository.
type Bootstrap struct {
	// Mode selects the bootstrap object.
	Mode BootstrapMode
	// Name is the name of the bootstrap objects in the shoot.
	Name string
	// Kluctl configures the KluctlDeployment of mode kluctl.
	Kluctl KluctlBootstrap
	// Flux configures the Kustomization of mode flux.
	Flux FluxBootstrap
	// ShootInfo delivers the shoot's identity with the bootstrap: the ConfigMap shoot-info, the
	// kluctl argument "shoot" and the Kustomization's substitution variables.
	ShootInfo bool
}

// KluctlBootstrap configures the bootstrap KluctlDeployment.
type KluctlBootstrap struct {
	// Target is the kluctl target; empty deploys without a target.
	Target string
	// Context is the kubeconfig context the controller deploys to.
	Context string
	// Args are the kluctl deployment arguments, a JSON object.
	Args *runtime.RawExtension
	// Prune deletes orphaned objects.
	Prune bool
	// Delete deletes the deployed objects when the KluctlDeployment is deleted.
	Delete bool
	// Interval is the reconciliation interval.
	Interval metav1.Duration
	// RetryInterval is the interval after a failed reconciliation; nil means Interval.
	RetryInterval *metav1.Duration
	// Timeout bounds a single reconciliation; nil means the controller default.
	Timeout *metav1.Duration
	// DryRun renders without applying.
	DryRun bool
	// Decryption configures SOPS decryption.
	Decryption *Decryption
}

// Decryption configures SOPS decryption with a key from a Shoot spec.resources Secret.
type Decryption struct {
	// SecretResourceName names the Shoot spec.resources Secret with the SOPS key.
	SecretResourceName string
}

// FluxBootstrap configures the bootstrap Flux Kustomization.
type FluxBootstrap struct {
	// Path is the directory inside the repository.
	Path string
	// Prune deletes orphaned objects.
	Prune bool
	// Interval is the reconciliation interval.
	Interval metav1.Duration
	// TargetNamespace overrides the namespace of namespaced objects; empty keeps them.
	TargetNamespace string
	// Wait makes the Kustomization wait until every object it applied is ready.
	Wait bool
	// Timeout bounds one apply and, with Wait, the wait; nil means the controller default.
	Timeout *metav1.Duration
	// RetryInterval is the interval after a failed reconciliation; nil means Interval.
	RetryInterval *metav1.Duration
	// ServiceAccountName is the service account of Flux's namespace the Kustomization applies as;
	// empty means kustomize-controller's own.
	ServiceAccountName string
	// Decryption configures SOPS decryption.
	Decryption *Decryption
	// PostBuild configures the variable substitution beside the shoot's identity; nil sets none.
	PostBuild *PostBuild
	// Patches are the patches the Kustomization applies to the objects it builds.
	Patches []Patch
}

// PostBuild configures the variable substitution of the bootstrap Kustomization.
type PostBuild struct {
	// Substitute are variables and their values.
	Substitute map[string]string
	// SubstituteFrom are ConfigMaps and Secrets in Flux's namespace with variables.
	SubstituteFrom []SubstituteReference
}

// SubstituteReference names a ConfigMap or Secret in Flux's namespace with variables.
type SubstituteReference struct {
	// Kind is ConfigMap or Secret.
	Kind string
	// Name is the name of the ConfigMap or Secret.
	Name string
	// Optional makes a missing object count as empty.
	Optional bool
}

// Patch is a patch of the objects the Kustomization builds.
type Patch struct {
	// Patch is a strategic merge patch or a JSON 6902 patch.
	Patch string
	// Target selects the objects to patch.
	Target *PatchSelector
}

// PatchSelector selects objects by kustomize's rules.
type PatchSelector struct {
	Group              string
	Version            string
	Kind               string
	Name               string
	Namespace          string
	AnnotationSelector string
	LabelSelector      string
}

// AdditionalSecretResource copies a Shoot spec.resources Secret into the shoot.
type AdditionalSecretResource struct {
	// Name is the name of the resource in the Shoot spec.resources.
	Name string
	// TargetName is the name of the Secret in the shoot.
	TargetName string
	// Namespace is the namespace of the Secret in the shoot.
	Namespace string
}

// RequestedVersions are the version selectors of the tenants' configuration layers.
type RequestedVersions struct {
	// Flux is the selector of flux.version.
	Flux string
	// Kluctl is the selector of kluctl.version.
	Kluctl string
}

// PendingRelease is a release change that waits for the shoot's maintenance time window.
type PendingRelease struct {
	// FluxVersion is the Flux release the shoot moves to.
	FluxVersion string
	// KluctlVersion is the kluctl release the shoot moves to.
	KluctlVersion string
	// Reason tells why the change waits.
	Reason string
	// NextMaintenance is the begin of the shoot's next maintenance time window.
	NextMaintenance *metav1.Time
}

// ForcedMove is a move of a shoot off an expired release.
type ForcedMove struct {
	// Component is flux or kluctl.
	Component string
	// From is the expired release, To the one that replaced it.
	From, To string
	// ExpirationDate is when From expired.
	ExpirationDate metav1.Time
	// Time is when the shoot was moved.
	Time metav1.Time
}

// StoredVersions is the stored-version migration before the controllers' CRDs change.
type StoredVersions struct {
	// CheckedFor names the releases and components whose CRDs the shoot's CRDs were checked
	// against.
	CheckedFor string
	// Migrated are the kinds the last migration rewrote.
	Migrated []MigratedKind
	// Time is when the last migration ran.
	Time *metav1.Time
}

// MigratedKind is the migration of one CRD's objects.
type MigratedKind struct {
	// CRD is the CRD's name and Kind its kind.
	CRD, Kind string
	// From are the stored versions dropped, To the storage version the objects were rewritten at.
	From []string
	To   string
	// Objects is the number of objects rewritten.
	Objects int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FluxStatus is what the extension reports in the Extension providerStatus.
type FluxStatus struct {
	metav1.TypeMeta

	// FluxVersion is the installed Flux release.
	FluxVersion string
	// KluctlVersion is the installed kluctl release; empty when kluctl is disabled.
	KluctlVersion string
	// Requested are the version selectors of the tenants' layers when the releases were selected.
	Requested *RequestedVersions
	// Pending is a release change nobody of the project asked for that waits for the maintenance
	// time window.
	Pending *PendingRelease
	// ForcedMoves are the last move off an expired release of each component.
	ForcedMoves []ForcedMove
	// StoredVersions is the last check of the shoot's CRDs for stored versions the installed
	// CRDs drop, and the migration it made.
	StoredVersions *StoredVersions
	// Images are the container images of the installed controllers, keyed by component.
	Images map[string]string
	// Management is the effective flux.management.
	Management string
	// HandedOverAt is when the controllers were handed over; nil while the extension owns them.
	HandedOverAt *metav1.Time
	// HandedOverVersion is the Flux release that was handed over.
	HandedOverVersion string
	// Repository is the bootstrapped repository URL.
	Repository string
	// Ref is the bootstrapped revision.
	Ref string
	// BootstrapMode is the effective bootstrap mode.
	BootstrapMode string
	// BootstrapName is the name of the bootstrap objects; empty means shoot-flux-bootstrap.
	BootstrapName string
	// PublicKey is the authorized_keys line of the deploy key to add to the repository.
	PublicKey string
	// Fingerprint is the SHA256 fingerprint of the deploy key.
	Fingerprint string
	// NextPublicKey is the authorized_keys line of the pending deploy key a staged rotation
	// prepared: add it to the repository before the rotation makes it the deploy key.
	NextPublicKey string
	// NextFingerprint is the SHA256 fingerprint of the pending deploy key.
	NextFingerprint string
	// LastAppliedRevision is the revision of the repository the bootstrap last applied in the
	// shoot, as its controller reports it.
	LastAppliedRevision string
	// DeployKeySecret is the garden Secret that holds the deploy key.
	DeployKeySecret string
	// DeployKey is the name of the deploy key in DeployKeySecret; its public key is in the data
	// key "<name>.identity.pub".
	DeployKey string
	// ProjectConfigHash identifies the data of the project ConfigMap flux-config this state was
	// built from; empty when the project has none.
	ProjectConfigHash string
	// KubernetesVersion is the shoot's Kubernetes version this state was reconciled for.
	KubernetesVersion string
	// NativeProviderConfig is the providerConfig of this extension that a providerConfig written
	// for stackit's extension converts to, as YAML.
	NativeProviderConfig string
	// Warnings are problems that do not stop the reconciliation.
	Warnings []string
	// Message summarises the state for humans.
	Message string
}
