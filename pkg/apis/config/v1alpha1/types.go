// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
)

// KeyAlgorithm is the algorithm of generated deploy keys.
type KeyAlgorithm string

const (
	// KeyAlgorithmEd25519 generates Ed25519 keys.
	KeyAlgorithmEd25519 KeyAlgorithm = "ed25519"
	// KeyAlgorithmRSA4096 generates 4096 bit RSA keys for git servers that do not accept Ed25519.
	KeyAlgorithmRSA4096 KeyAlgorithm = "rsa-4096"
)

// KeyScope is what a generated deploy key is shared by.
type KeyScope string

const (
	// KeyScopeRepository shares a deploy key among the shoots of a project that use the same
	// repository; each repository has its own key, since git hosts such as GitHub refuse a deploy
	// key that another repository already has.
	KeyScopeRepository KeyScope = "repository"
	// KeyScopeProject is the name of KeyScopeRepository in earlier releases, which shared one key
	// among all repositories of a project. It is accepted and means KeyScopeRepository.
	KeyScopeProject KeyScope = "project"
	// KeyScopeShoot generates a deploy key per shoot and repository, removed with the shoot.
	KeyScopeShoot KeyScope = "shoot"
)

// The defaults are minors, so that shoots that do not choose a version get the newest embedded
// patch release of the minor, also when an extension version embeds a newer one.
const (
	// DefaultFluxVersion is the Flux version of shoots that do not choose one.
	DefaultFluxVersion = "v2.9"
	// DefaultKluctlVersion is the kluctl version of shoots that do not choose one.
	DefaultKluctlVersion = "v2.28"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ControllerConfiguration is the configuration of the shoot-flux extension controller.
type ControllerConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// DefaultFluxVersion is the Flux version of shoots that do not choose one: a release (v2.9.5) or
	// a minor (v2.9, v2.9.x), which selects the newest embedded patch of that minor. Defaults to v2.9.
	// +optional
	DefaultFluxVersion *string `json:"defaultFluxVersion,omitempty"`
	// DefaultKluctlVersion is the kluctl version of shoots that do not choose one, a release or a
	// minor like DefaultFluxVersion. Defaults to v2.28.
	// +optional
	DefaultKluctlVersion *string `json:"defaultKluctlVersion,omitempty"`
	// SSHKey configures generated deploy keys.
	// +optional
	SSHKey *SSHKeyConfig `json:"sshKey,omitempty"`
	// KnownHosts are known_hosts lines the operator trusts (e.g. the keys of github.com), appended to
	// the known_hosts the controller generates.
	// +optional
	KnownHosts *string `json:"knownHosts,omitempty"`
	// Registry replaces the registry of all images, e.g. with a mirror: a host with a dot, a port or
	// localhost, and an optional path, e.g. registry.example.com/mirror or mirror:5000. A bare
	// name like "mirror" is refused, because container runtimes would read it as a Docker Hub
	// namespace.
	// +optional
	Registry *string `json:"registry,omitempty"`
	// ImagePullSecretFile is the path of a .dockerconfigjson file (the data of a Secret of type
	// kubernetes.io/dockerconfigjson) with the credentials of the registry. The extension delivers it
	// as the Secret shoot-flux-image-pull into the controllers' namespaces and names it in the pods'
	// imagePullSecrets. The chart mounts it from imagePullSecret.dockerConfigJSON.
	// +optional
	ImagePullSecretFile *string `json:"imagePullSecretFile,omitempty"`
	// Controllers tune the Deployments of the controllers in all shoots, in the format of the
	// FluxConfig's controllers: keyed by "defaults" or a component. They are the lowest
	// configuration layer: the project ConfigMap and the providerConfig override them per key
	// and field.
	// +optional
	Controllers map[string]ControllerSettings `json:"controllers,omitempty"`
	// Timeouts bound the controller's waits.
	// +optional
	Timeouts *Timeouts `json:"timeouts,omitempty"`
	// AllowInsecureHostKeys lets the kluctl controller in the shoot connect without host key checking
	// when no host key of the repository host is known (not in source.knownHosts, the operator's
	// knownHosts or the deploy key Secret) and the scan from the seed fails or is refused. Flux
	// cannot skip the check, so bootstrap mode flux still fails. Defaults to false.
	// +optional
	AllowInsecureHostKeys *bool `json:"allowInsecureHostKeys,omitempty"`
	// HealthCheckConfig configures the health check controller.
	// +optional
	HealthCheckConfig *healthcheckconfigv1alpha1.HealthCheckConfig `json:"healthCheckConfig,omitempty"`
	// HostPolicy limits the hosts the controller connects to from the seed to scan the SSH host keys
	// of repository hosts. By default only public addresses on SSH ports are scanned; names of
	// cluster services, the seed's own networks and loopback, link-local, private and multicast
	// addresses are refused.
	// +optional
	HostPolicy *HostPolicy `json:"hostPolicy,omitempty"`
	// Rollout says when a change of a shoot's Flux or kluctl release that neither its owner nor
	// its project admin made (a newer embedded patch after an extension upgrade, a moved
	// defaultFluxVersion or defaultKluctlVersion) is installed.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`
	// Limits bound the inputs of project admins and shoot owners, so that one tenant's input cannot
	// cost the others of the seed CPU, memory or etcd space. The admission and every reconcile check
	// them; an input over a limit fails naming the field and keeps the last good deployment.
	// +optional
	Limits *Limits `json:"limits,omitempty"`
	// Monitoring configures what the extension adds to Gardener's monitoring.
	// +optional
	Monitoring *Monitoring `json:"monitoring,omitempty"`
}

// Monitoring configures what the extension adds to Gardener's monitoring.
type Monitoring struct {
	// Shoot configures the shoots' own monitoring (each shoot's Prometheus, Plutono and alerting).
	// +optional
	Shoot *ShootMonitoring `json:"shoot,omitempty"`
}

// ShootMonitoring configures the delivered controllers' part of each shoot's own monitoring.
type ShootMonitoring struct {
	// Enabled makes each shoot's Prometheus scrape the controllers the extension delivers into the
	// shoot, and adds alerting and recording rules and a Plutono dashboard of the shoot's GitOps to
	// the shoot's namespace in the seed. A project (monitoring.shoot.enabled of its ConfigMap) or a
	// shoot owner can turn it off for their shoots. Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// Limits bound what project admins and shoot owners can make the extension read, keep and write.
// Every limit must be positive; the defaults are in defaults.go, each with its reason.
type Limits struct {
	// ProjectConfigMapMaxBytes bounds the keys and values of data and binaryData of a project
	// ConfigMap flux-config, together. Defaults to 49152 (48 KiB).
	// +optional
	ProjectConfigMapMaxBytes *int32 `json:"projectConfigMapMaxBytes,omitempty"`
	// ProjectConfigMaxBytes bounds the key config.yaml of a project ConfigMap flux-config. At most
	// projectConfigMapMaxBytes. Defaults to 32768 (32 KiB).
	// +optional
	ProjectConfigMaxBytes *int32 `json:"projectConfigMaxBytes,omitempty"`
	// ProviderConfigMaxBytes bounds the providerConfig of a Shoot's shoot-flux extension, checked
	// before it is decoded. Defaults to 32768 (32 KiB).
	// +optional
	ProviderConfigMaxBytes *int32 `json:"providerConfigMaxBytes,omitempty"`
	// KluctlArgsMaxBytes bounds bootstrap.kluctl.args of one configuration layer (config.yaml or a
	// providerConfig), serialized as compact JSON. Defaults to 16384 (16 KiB).
	// +optional
	KluctlArgsMaxBytes *int32 `json:"kluctlArgsMaxBytes,omitempty"`
	// ControllersMaxBytes bounds the controllers of one configuration layer (config.yaml or a
	// providerConfig), serialized as compact JSON. Defaults to 16384 (16 KiB).
	// +optional
	ControllersMaxBytes *int32 `json:"controllersMaxBytes,omitempty"`
	// AdditionalSecretResourcesMaxCount bounds the entries of additionalSecretResources. Defaults
	// to 16.
	// +optional
	AdditionalSecretResourcesMaxCount *int32 `json:"additionalSecretResourcesMaxCount,omitempty"`
	// AdditionalSecretResourcesMaxBytes bounds the sum of the keys and values of the Secrets that
	// additionalSecretResources name. Defaults to 262144 (256 KiB).
	// +optional
	AdditionalSecretResourcesMaxBytes *int32 `json:"additionalSecretResourcesMaxBytes,omitempty"`
	// KnownHostsMaxBytes bounds a known_hosts document of a tenant (source.knownHosts, known_hosts
	// of a credentials Secret or of shoot-flux-deploy-keys). Defaults to 65536 (64 KiB).
	// +optional
	KnownHostsMaxBytes *int32 `json:"knownHostsMaxBytes,omitempty"`
	// KnownHostsMaxLines bounds the lines of a known_hosts document of a tenant. Defaults to 1000.
	// +optional
	KnownHostsMaxLines *int32 `json:"knownHostsMaxLines,omitempty"`
	// HostPatternMaxLength bounds one host pattern of a known_hosts line. Defaults to 300.
	// +optional
	HostPatternMaxLength *int32 `json:"hostPatternMaxLength,omitempty"`
	// HostPatternMaxWildcards bounds the wildcards (* and ?) of one host pattern. Defaults to 3.
	// +optional
	HostPatternMaxWildcards *int32 `json:"hostPatternMaxWildcards,omitempty"`
	// PrivateKeyMaxBytes bounds a private key of a tenant (a key pair of shoot-flux-deploy-keys, the
	// identity of a credentials Secret) in PEM format, checked before it is parsed. Defaults to
	// 16384 (16 KiB).
	// +optional
	PrivateKeyMaxBytes *int32 `json:"privateKeyMaxBytes,omitempty"`
	// PrivateKeyMaxBits bounds the modulus of an RSA private key of a tenant, checked before it is
	// parsed. At most 16384, the largest RSA key OpenSSH accepts. Defaults to 16384.
	// +optional
	PrivateKeyMaxBits *int32 `json:"privateKeyMaxBits,omitempty"`
	// DeployKeysMaxEntries bounds the data keys of a project's Secret shoot-flux-deploy-keys.
	// Defaults to 1500.
	// +optional
	DeployKeysMaxEntries *int32 `json:"deployKeysMaxEntries,omitempty"`
	// DeployKeysMaxRotatedKeys bounds the key pairs one rotation request on shoot-flux-deploy-keys
	// generates (rotate and rotate-prepare together); a request for more is refused. Defaults to 50.
	// +optional
	DeployKeysMaxRotatedKeys *int32 `json:"deployKeysMaxRotatedKeys,omitempty"`
	// ProjectWorkersPercent bounds the share of the controller's workers (--max-concurrent-reconciles)
	// the shoots of one project occupy at once, in percent, at least one worker, so that a project
	// whose reconciles hang cannot hold all workers. Defaults to 50.
	// +optional
	ProjectWorkersPercent *int32 `json:"projectWorkersPercent,omitempty"`
	// ReservedWorkersPercent is the share of the controller's workers (--max-concurrent-reconciles),
	// in percent, rounded up, at least one, that projects with a reconcile in flight do not take:
	// it is kept for the first reconcile of a project with nothing in flight, so that projects
	// holding their shares together (however many) do not hold every worker. Defaults to 10.
	// +optional
	ReservedWorkersPercent *int32 `json:"reservedWorkersPercent,omitempty"`
}

// RolloutWindow is when changes of a shoot's releases that nobody of its project asked for are
// installed.
type RolloutWindow string

const (
	// RolloutWindowMaintenance installs them in the shoot's maintenance time window (or when the
	// shoot is maintained on request), as Gardener applies the changes nobody asked for.
	RolloutWindowMaintenance RolloutWindow = "maintenance"
	// RolloutWindowImmediate installs them at the shoot's next reconcile.
	RolloutWindowImmediate RolloutWindow = "immediate"
)

// Rollout configures how changes nobody of a project asked for reach its shoots.
type Rollout struct {
	// Window is when they are installed: maintenance (default) or immediate. Until then the shoot
	// keeps its installed release, and its providerStatus shows the pending one.
	// +optional
	Window *RolloutWindow `json:"window,omitempty"`
	// Releases are the lifecycle of the embedded Flux and kluctl releases: classification and
	// expiration date. An embedded release not listed is supported and does not expire. Give the
	// admission the same list (its runtime chart's rollout.releases).
	// +optional
	Releases *Releases `json:"releases,omitempty"`
}

// Releases are the lifecycles of the embedded Flux and kluctl releases.
type Releases struct {
	// Flux lists Flux releases, e.g. v2.7.5.
	// +optional
	Flux []ReleaseLifecycle `json:"flux,omitempty"`
	// Kluctl lists kluctl releases, e.g. v2.28.2.
	// +optional
	Kluctl []ReleaseLifecycle `json:"kluctl,omitempty"`
}

// ReleaseClassification tells how an embedded release is to be used, as Gardener classifies the
// Kubernetes versions of a CloudProfile.
type ReleaseClassification string

const (
	// ReleaseSupported is a release for every shoot, the target of forced moves.
	ReleaseSupported ReleaseClassification = "supported"
	// ReleaseDeprecated still works; the admission warns when a Shoot or project selects it.
	ReleaseDeprecated ReleaseClassification = "deprecated"
	// ReleasePreview is delivered when selected, with a warning of the admission, and never the
	// target of a forced move.
	ReleasePreview ReleaseClassification = "preview"
)

// ReleaseLifecycle is the lifecycle of one embedded release.
type ReleaseLifecycle struct {
	// Version is an embedded release, e.g. v2.7.5.
	Version string `json:"version"`
	// Classification is supported (default), deprecated or preview.
	// +optional
	Classification *ReleaseClassification `json:"classification,omitempty"`
	// ExpirationDate is when the release expires: the admission denies a new selection of it, and
	// shoots on it move in their maintenance time window to the newest supported patch of its
	// minor, or else of the next minor with a supported release (Gardener's force-update rule for
	// expired Kubernetes versions).
	// +optional
	ExpirationDate *metav1.Time `json:"expirationDate,omitempty"`
}

// HostPolicy limits the hosts the controller connects to from the seed for SSH host key scans.
// Names are resolved once and every address is checked; the seed's pod, service and node networks
// are always refused.
type HostPolicy struct {
	// AllowedNetworks are CIDRs that may be scanned although they are not public, e.g. the network
	// of a git server in a private network.
	// +optional
	AllowedNetworks []string `json:"allowedNetworks,omitempty"`
	// AllowedPorts are the ports, or ranges like "1024-65535", that may be scanned. Defaults to 22,
	// 443, 2222, 7999 and 29418.
	// +optional
	AllowedPorts []string `json:"allowedPorts,omitempty"`
}

// SSHKeyConfig configures generated deploy keys.
type SSHKeyConfig struct {
	// Algorithm is ed25519 or rsa-4096. Defaults to ed25519.
	// +optional
	Algorithm *KeyAlgorithm `json:"algorithm,omitempty"`
	// Scope is repository (one key per repository, shared by the shoots of a project that use it) or
	// shoot (one key per shoot and repository, removed with the shoot). Defaults to repository;
	// project, the name of earlier releases, means repository.
	// +optional
	Scope *KeyScope `json:"scope,omitempty"`
}

// Timeouts bound the controller's waits.
type Timeouts struct {
	// ManagedResourceApplied bounds the wait for the ManagedResources to be applied. Defaults to 2m.
	// +optional
	ManagedResourceApplied *metav1.Duration `json:"managedResourceApplied,omitempty"`
	// Deletion bounds the wait for the ManagedResources to be deleted. Defaults to 5m.
	// +optional
	Deletion *metav1.Duration `json:"deletion,omitempty"`
	// HostKeyScan bounds the scan of the repository host's SSH keys. Defaults to 10s.
	// +optional
	HostKeyScan *metav1.Duration `json:"hostKeyScan,omitempty"`
	// BootstrapFinalizers is how long disabling the extension lets the controllers remove their
	// finalizers from the bootstrap objects before it leaves the objects in the shoot. Defaults to
	// 1m.
	// +optional
	BootstrapFinalizers *metav1.Duration `json:"bootstrapFinalizers,omitempty"`
}

// ControllerSettings tune the Deployment of a controller, serialized like the ControllerSettings of
// the FluxConfig (providerConfig). Unset fields keep what the extension renders.
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
