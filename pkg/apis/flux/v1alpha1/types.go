// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

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

	// DefaultFluxNamespace is the default namespace of the Flux controllers.
	DefaultFluxNamespace = "flux-system"
	// DefaultKluctlNamespace is the default namespace of the kluctl controller.
	DefaultKluctlNamespace = "kluctl-system"
	// DefaultBranch is checked out when no ref is configured.
	DefaultBranch = "main"
	// DefaultOCITag is pulled when no OCI ref is configured.
	DefaultOCITag = "latest"
	// DefaultPath is the repository directory used when no path is configured.
	DefaultPath = "."
	// DefaultKluctlContext is the kubeconfig context of the bootstrap KluctlDeployment.
	DefaultKluctlContext = "default"

	// ComponentKluctlController is the kluctl controller, the key of its settings in controllers.
	ComponentKluctlController = "kluctl-controller"
	// ControllersDefaults is the key of controllers whose settings apply to every controller.
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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FluxConfig is the shoot-flux configuration. The same document is accepted as Extension
// providerConfig and under the key config.yaml of the project ConfigMap flux-config.
type FluxConfig struct {
	metav1.TypeMeta `json:",inline"`

	// Flux configures the Flux controllers.
	// +optional
	Flux *Flux `json:"flux,omitempty"`
	// Kluctl configures the kluctl controller.
	// +optional
	Kluctl *Kluctl `json:"kluctl,omitempty"`
	// Source is the git repository or OCI artifact to bootstrap from. Without a URL (source.url or
	// source.oci.url) in any configuration layer only the controllers are installed.
	// +optional
	Source *Source `json:"source,omitempty"`
	// Bootstrap configures the object that applies the repository.
	// +optional
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
	// AdditionalSecretResources are Shoot spec.resources Secrets copied into the shoot, e.g. for
	// credentials the deployed applications need. A later configuration layer replaces the list.
	// +optional
	AdditionalSecretResources []AdditionalSecretResource `json:"additionalSecretResources,omitempty"`
	// Monitoring configures the shoot's own monitoring of its GitOps.
	// +optional
	Monitoring *Monitoring `json:"monitoring,omitempty"`
	// Controllers tune the Deployments of the controllers in the shoot. The key "defaults" applies
	// to every controller; a component's key (e.g. source-controller, kluctl-controller) overrides
	// the defaults for that controller field by field.
	// +optional
	Controllers map[string]ControllerSettings `json:"controllers,omitempty"`
}

// Monitoring configures what the extension adds to Gardener's monitoring of the shoot.
type Monitoring struct {
	// Shoot configures the shoot's own monitoring (its Prometheus, Plutono and alerting).
	// +optional
	Shoot *ShootMonitoring `json:"shoot,omitempty"`
}

// ShootMonitoring configures the delivered controllers' part of the shoot's own monitoring.
type ShootMonitoring struct {
	// Enabled makes the shoot's Prometheus scrape the delivered controllers and adds alerting and
	// recording rules and a Plutono dashboard of the shoot's GitOps. Defaults to true; it takes
	// effect only if the operator's configuration enables it too (monitoring.shoot.enabled of the
	// extension).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ControllerSettings tune the Deployment of a controller. Unset fields keep what the extension
// renders.
type ControllerSettings struct {
	// Resources replace the resource requirements of the controller's container as a whole.
	// Defaults to the upstream manifests' (kluctl-controller: requests 100m CPU and 256Mi memory,
	// limit 1Gi memory).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Tolerations replace the tolerations of the controller's pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// NodeSelector adds labels to the node selector of the controller's pods, which keeps
	// kubernetes.io/os: linux unless overridden. A later layer replaces the whole map.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// PriorityClassName is the PriorityClass of the controller's pods. It must exist in the shoot,
	// e.g. system-cluster-critical; otherwise no pod of the controller can be created.
	// +optional
	PriorityClassName *string `json:"priorityClassName,omitempty"`
	// Concurrent is how many objects the controller reconciles at the same time, 1 to 100: Flux's
	// --concurrent, kluctl's --concurrency. Defaults to the controller's own default: 2 for
	// source-controller (per kind of source), 4 for the other Flux controllers and kluctl's.
	// +optional
	Concurrent *int32 `json:"concurrent,omitempty"`
}

// Flux configures the Flux controllers.
type Flux struct {
	// Version selects the Flux release: a release, e.g. v2.9.5, or a minor, e.g. v2.9 or v2.9.x,
	// which selects the newest patch release of that minor the extension embeds. The leading "v"
	// may be left out. Defaults to the operator's defaultFluxVersion.
	// +optional
	Version *string `json:"version,omitempty"`
	// Components are the Flux controllers to install. Defaults to [source-controller], plus
	// kustomize-controller in bootstrap mode flux. A later configuration layer replaces the list.
	// +optional
	Components []string `json:"components,omitempty"`
	// Namespace is the namespace of the Flux controllers. Defaults to flux-system.
	// +optional
	Namespace *string `json:"namespace,omitempty"`
	// Management is continuous (the extension owns the controllers: it reverts changes in the shoot
	// and rolls out versions) or handover (it installs them once and leaves them to the repository;
	// bootstrap objects and credentials are still delivered). Defaults to continuous.
	// +optional
	Management *ManagementMode `json:"management,omitempty"`
}

// Kluctl configures the kluctl controller.
type Kluctl struct {
	// Enabled installs the kluctl controller. Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Version selects the kluctl release like flux.version: a release, e.g. v2.28.2, or a minor,
	// e.g. v2.28. Defaults to the operator's defaultKluctlVersion.
	// +optional
	Version *string `json:"version,omitempty"`
	// Namespace is the namespace of the kluctl controller. Defaults to kluctl-system.
	// +optional
	Namespace *string `json:"namespace,omitempty"`
}

// Bootstrap configures the object that applies the repository.
type Bootstrap struct {
	// Mode is kluctl, flux or none. Defaults to kluctl; it is none whenever no source URL is configured.
	// +optional
	Mode *BootstrapMode `json:"mode,omitempty"`
	// Name is the name of the bootstrap objects in the shoot (the KluctlDeployment, or the source
	// and the Kustomization of mode flux). Defaults to shoot-flux-bootstrap; stackit's
	// configuration converts to flux-system, the name its extension gave them, which the
	// repository's own Kustomizations may reference.
	// +optional
	Name *string `json:"name,omitempty"`
	// Kluctl configures the KluctlDeployment of mode kluctl.
	// +optional
	Kluctl *KluctlBootstrap `json:"kluctl,omitempty"`
	// Flux configures the Kustomization of mode flux.
	// +optional
	Flux *FluxBootstrap `json:"flux,omitempty"`
	// ShootInfo delivers the shoot's identity (project, name, seed, region, Kubernetes version, ...)
	// as the ConfigMap shoot-info in the bootstrap namespace, as the kluctl argument "shoot" and as
	// the Kustomization's substitution variables (SHOOT_NAME, ...). Defaults to true.
	// +optional
	ShootInfo *bool `json:"shootInfo,omitempty"`
}

// KluctlBootstrap configures the bootstrap KluctlDeployment.
type KluctlBootstrap struct {
	// Target is the kluctl target to deploy.
	// +optional
	Target *string `json:"target,omitempty"`
	// Context is the kubeconfig context the controller deploys to. Defaults to "default".
	// +optional
	Context *string `json:"context,omitempty"`
	// Args are the kluctl deployment arguments, a JSON object. Configuration layers are combined as
	// JSON merge patches (RFC 7386): objects merge key by key, null removes a key.
	// +optional
	Args *runtime.RawExtension `json:"args,omitempty"`
	// Prune deletes orphaned objects. Defaults to false.
	// +optional
	Prune *bool `json:"prune,omitempty"`
	// Delete deletes the deployed objects when the KluctlDeployment is deleted. Defaults to false.
	// +optional
	Delete *bool `json:"delete,omitempty"`
	// Interval is the reconciliation interval. Defaults to 5m.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// RetryInterval is the interval after a failed reconciliation. Defaults to interval.
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
	// Timeout bounds a single reconciliation. Defaults to the controller's default.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DryRun renders without applying. Defaults to false.
	// +optional
	DryRun *bool `json:"dryRun,omitempty"`
	// Decryption configures SOPS decryption.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`
}

// Decryption configures SOPS decryption with a key from a Shoot spec.resources Secret.
type Decryption struct {
	// SecretResourceName names the Shoot spec.resources Secret with the SOPS key.
	SecretResourceName string `json:"secretResourceName"`
}

// FluxBootstrap configures the bootstrap Flux Kustomization.
type FluxBootstrap struct {
	// Path is the directory inside the repository. Defaults to source.path.
	// +optional
	Path *string `json:"path,omitempty"`
	// Prune deletes orphaned objects. Defaults to true.
	// +optional
	Prune *bool `json:"prune,omitempty"`
	// Interval is the reconciliation interval. Defaults to 10m.
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// TargetNamespace overrides the namespace of namespaced objects.
	// +optional
	TargetNamespace *string `json:"targetNamespace,omitempty"`
	// Wait makes the Kustomization wait until every object it applied is ready. Defaults to false.
	// +optional
	Wait *bool `json:"wait,omitempty"`
	// Timeout bounds one apply and, with wait, the wait. Defaults to kustomize-controller's default
	// (the interval).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// RetryInterval is the interval after a failed reconciliation. Defaults to interval.
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
	// ServiceAccountName is a service account in Flux's namespace that the Kustomization applies as,
	// which the repository or an owner creates. Defaults to kustomize-controller's own.
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// Decryption configures SOPS decryption.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`
	// PostBuild configures the variable substitution of the Kustomization, next to the shoot's
	// identity (bootstrap.shootInfo).
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`
	// Patches are strategic merge or JSON 6902 patches the Kustomization applies to the objects it
	// builds, at most 20 of at most 16384 bytes each. A later configuration layer replaces the list.
	// +optional
	Patches []Patch `json:"patches,omitempty"`
}

// PostBuild configures the variable substitution of the bootstrap Kustomization.
type PostBuild struct {
	// Substitute are variables and their values, at most 100. A name matches
	// ^[_a-zA-Z][_a-zA-Z0-9]*$ and has at most 128 characters, a value at most 4096 bytes; the
	// variables of the ConfigMap shoot-info (SHOOT_NAME, ..., SHOOT_INFO_NAME, ...) are reserved. A
	// later configuration layer replaces the map.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`
	// SubstituteFrom are ConfigMaps and Secrets in Flux's namespace whose keys are variables, at
	// most 20; a later entry's value wins over an earlier one's, and the ConfigMap shoot-info
	// (bootstrap.shootInfo) is substituted after them all. A later configuration layer replaces
	// the list.
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret in Flux's namespace with variables.
type SubstituteReference struct {
	// Kind is ConfigMap or Secret.
	Kind string `json:"kind"`
	// Name is the name of the ConfigMap or Secret.
	Name string `json:"name"`
	// Optional makes a missing ConfigMap or Secret count as empty; otherwise the Kustomization
	// fails until it exists. Defaults to false.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Patch is a patch of the objects the Kustomization builds.
type Patch struct {
	// Patch is a strategic merge patch or a JSON 6902 patch, as YAML or JSON.
	Patch string `json:"patch"`
	// Target selects the objects to patch; a strategic merge patch without it patches the object
	// it names.
	// +optional
	Target *PatchSelector `json:"target,omitempty"`
}

// PatchSelector selects objects by kustomize's rules: name and namespace are regular
// expressions, the selectors Kubernetes label selectors. Each field has at most 1024 characters.
type PatchSelector struct {
	// Group is the API group.
	// +optional
	Group string `json:"group,omitempty"`
	// Version is the API version.
	// +optional
	Version string `json:"version,omitempty"`
	// Kind is the kind.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Name matches the name.
	// +optional
	Name string `json:"name,omitempty"`
	// Namespace matches the namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// AnnotationSelector selects by annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// LabelSelector selects by labels.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// AdditionalSecretResource copies a Shoot spec.resources Secret into the shoot.
type AdditionalSecretResource struct {
	// Name is the name of the resource in the Shoot spec.resources.
	Name string `json:"name"`
	// TargetName is the name of the Secret in the shoot. Defaults to name.
	// +optional
	TargetName *string `json:"targetName,omitempty"`
	// Namespace is the namespace of the Secret in the shoot. Defaults to the namespace of the
	// bootstrap object: the Flux namespace in bootstrap mode flux, otherwise the kluctl namespace
	// (the Flux namespace if kluctl is disabled).
	// +optional
	Namespace *string `json:"namespace,omitempty"`
}
