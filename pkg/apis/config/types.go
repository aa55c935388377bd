// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package config

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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ControllerConfiguration is the configuration of the shoot-flux extension controller.
type ControllerConfiguration struct {
	metav1.TypeMeta

	// DefaultFluxVersion is the Flux version of shoots that do not choose one: a release or a minor
	// (see helper.ResolveVersion of the flux API).
	DefaultFluxVersion string
	// DefaultKluctlVersion is the kluctl version of shoots that do not choose one: a release or a
	// minor.
	DefaultKluctlVersion string
	// SSHKey configures generated deploy keys.
	SSHKey SSHKeyConfig
	// KnownHosts are known_hosts lines the operator trusts, appended to the generated known_hosts.
	KnownHosts string
	// Registry replaces the registry of all images; empty keeps the image vector's registries.
	Registry string
	// ImagePullSecretFile is the path of a .dockerconfigjson file with the credentials of the
	// registry; empty means the controllers pull without credentials.
	ImagePullSecretFile string
	// Controllers are the operator's settings of the controllers' Deployments, the lowest layer
	// below the project ConfigMap and the providerConfig.
	Controllers map[string]ControllerSettings
	// Timeouts bound the controller's waits.
	Timeouts Timeouts
	// AllowInsecureHostKeys lets the kluctl controller connect without host key checking when no
	// host key of the repository host is known and the scan fails.
	AllowInsecureHostKeys bool
	// HealthCheckConfig configures the health check controller.
	HealthCheckConfig *healthcheckconfigv1alpha1.HealthCheckConfig
	// HostPolicy limits the hosts the controller connects to from the seed to scan SSH host keys.
	HostPolicy HostPolicy
	// GardenClusterIdentity is the garden's cluster identity, which gardenlet hands to the chart
	// (gardener.garden.clusterIdentity) and the chart to the flag --garden-cluster-identity; the
	// ConfigMap shoot-info carries it as stackit's extension did. Not part of the file.
	// +k8s:conversion-gen=false
	GardenClusterIdentity string
	// Limits bound the inputs of project admins and shoot owners.
	Limits Limits
	// Rollout says when changes of a shoot's releases that nobody of its project asked for are
	// installed.
	Rollout Rollout
	// Monitoring configures what the extension adds to Gardener's monitoring.
	Monitoring Monitoring
}

// Monitoring configures what the extension adds to Gardener's monitoring.
type Monitoring struct {
	// Shoot configures the shoots' own monitoring.
	Shoot ShootMonitoring
}

// ShootMonitoring configures the delivered controllers' part of each shoot's own monitoring.
type ShootMonitoring struct {
	// Enabled adds the scrape configuration, rules and dashboard to shoots whose project and owner
	// do not turn them off.
	Enabled bool
}

// RolloutWindow is when changes of a shoot's releases that neither its owner nor its project
// admin made are installed.
type RolloutWindow string

const (
	// RolloutWindowMaintenance installs them in the shoot's maintenance time window.
	RolloutWindowMaintenance RolloutWindow = "maintenance"
	// RolloutWindowImmediate installs them at the shoot's next reconcile.
	RolloutWindowImmediate RolloutWindow = "immediate"
)

// Rollout configures how changes nobody of a project asked for reach its shoots.
type Rollout struct {
	// Window is when they are installed.
	Window RolloutWindow
	// Releases are the operator's lifecycle of the embedded releases; an embedded release not
	// listed is supported and does not expire.
	Releases Releases
}

// Releases are the lifecycles of the embedded Flux and kluctl releases.
type Releases struct {
	Flux   []ReleaseLifecycle
	Kluctl []ReleaseLifecycle
}

// ReleaseClassification tells how an embedded release is to be used, as Gardener classifies the
// Kubernetes versions of a CloudProfile.
type ReleaseClassification string

const (
	// ReleaseSupported is a release for every shoot, the target of forced moves.
	ReleaseSupported ReleaseClassification = "supported"
	// ReleaseDeprecated still works; selecting it draws a warning.
	ReleaseDeprecated ReleaseClassification = "deprecated"
	// ReleasePreview is delivered when selected, with a warning, and never the target of a forced
	// move.
	ReleasePreview ReleaseClassification = "preview"
)

// ReleaseLifecycle is the lifecycle of one embedded release.
type ReleaseLifecycle struct {
	// Version is the release, e.g. v2.7.5.
	Version string
	// Classification is how the release is to be used.
	Classification ReleaseClassification
	// ExpirationDate is when the release expires: a new selection of it is denied, and shoots on it
	// move in their maintenance time window to the newest supported patch of its minor, or of the
	// next supported minor. Nil for none.
	ExpirationDate *metav1.Time
}

// Limits bound what project admins and shoot owners can make the extension read, keep and write.
// The defaults and their reasons are in the versioned API (v1alpha1.SetDefaults_Limits).
type Limits struct {
	// ProjectConfigMapMaxBytes bounds the keys and values of data and binaryData of a project
	// ConfigMap flux-config.
	ProjectConfigMapMaxBytes int32
	// ProjectConfigMaxBytes bounds the key config.yaml of a project ConfigMap flux-config.
	ProjectConfigMaxBytes int32
	// ProviderConfigMaxBytes bounds the providerConfig of a Shoot's shoot-flux extension.
	ProviderConfigMaxBytes int32
	// KluctlArgsMaxBytes bounds bootstrap.kluctl.args of one configuration layer, serialized as
	// compact JSON.
	KluctlArgsMaxBytes int32
	// ControllersMaxBytes bounds the controllers of one configuration layer, serialized as compact
	// JSON.
	ControllersMaxBytes int32
	// AdditionalSecretResourcesMaxCount bounds the entries of additionalSecretResources.
	AdditionalSecretResourcesMaxCount int32
	// AdditionalSecretResourcesMaxBytes bounds the sum of the keys and values of the Secrets that
	// additionalSecretResources name.
	AdditionalSecretResourcesMaxBytes int32
	// KnownHostsMaxBytes bounds a known_hosts document of a tenant.
	KnownHostsMaxBytes int32
	// KnownHostsMaxLines bounds the lines of a known_hosts document of a tenant.
	KnownHostsMaxLines int32
	// HostPatternMaxLength bounds one host pattern of a known_hosts line.
	HostPatternMaxLength int32
	// HostPatternMaxWildcards bounds the wildcards (* and ?) of one host pattern.
	HostPatternMaxWildcards int32
	// PrivateKeyMaxBytes bounds a private key of a tenant in PEM format.
	PrivateKeyMaxBytes int32
	// PrivateKeyMaxBits bounds the modulus of an RSA private key of a tenant.
	PrivateKeyMaxBits int32
	// DeployKeysMaxEntries bounds the data keys of a project's Secret shoot-flux-deploy-keys.
	DeployKeysMaxEntries int32
	// DeployKeysMaxRotatedKeys bounds the key pairs one rotation request of a project generates.
	DeployKeysMaxRotatedKeys int32
	// ProjectWorkersPercent bounds the share of the controller's workers the shoots of one
	// project occupy at once, in percent.
	ProjectWorkersPercent int32
	// ReservedWorkersPercent is the share of the controller's workers, in percent, that only the
	// first reconcile of a project with nothing in flight may take.
	ReservedWorkersPercent int32
}

// KnownHostsLimits are the limits of a tenant's known_hosts, in the form of
// sshkey.KnownHostsLimits, so that a conversion sshkey.KnownHostsLimits(l) turns one into the other.
type KnownHostsLimits struct {
	MaxBytes, MaxLines, MaxPatternLength, MaxWildcards int
}

// KnownHosts returns the limits of a tenant's known_hosts.
func (l Limits) KnownHosts() KnownHostsLimits {
	return KnownHostsLimits{
		MaxBytes:         int(l.KnownHostsMaxBytes),
		MaxLines:         int(l.KnownHostsMaxLines),
		MaxPatternLength: int(l.HostPatternMaxLength),
		MaxWildcards:     int(l.HostPatternMaxWildcards),
	}
}

// PrivateKeyLimits are the limits of a tenant's private keys, in the form of
// sshkey.PrivateKeyLimits, so that a conversion sshkey.PrivateKeyLimits(l) turns one into the other.
type PrivateKeyLimits struct {
	MaxBytes, MaxBits int
}

// PrivateKey returns the limits of a tenant's private keys.
func (l Limits) PrivateKey() PrivateKeyLimits {
	return PrivateKeyLimits{MaxBytes: int(l.PrivateKeyMaxBytes), MaxBits: int(l.PrivateKeyMaxBits)}
}

// HostPolicy limits the hosts the controller connects to from the seed to scan SSH host keys.
type HostPolicy struct {
	// AllowedNetworks are CIDRs that may be scanned although they are not public.
	AllowedNetworks []string
	// AllowedPorts are the ports (or ranges "from-to") that may be scanned; empty means the
	// defaults of package hostpolicy.
	AllowedPorts []string
}

// SSHKeyConfig configures generated deploy keys.
type SSHKeyConfig struct {
	// Algorithm is the key algorithm.
	Algorithm KeyAlgorithm
	// Scope is what a key is shared by.
	Scope KeyScope
}

// Timeouts bound the controller's waits.
type Timeouts struct {
	// ManagedResourceApplied bounds the wait for the ManagedResources to be applied.
	ManagedResourceApplied metav1.Duration
	// Deletion bounds the wait for the ManagedResources to be deleted.
	Deletion metav1.Duration
	// HostKeyScan bounds the scan of the repository host's SSH keys.
	HostKeyScan metav1.Duration
	// BootstrapFinalizers is how long disabling the extension lets the controllers remove their
	// finalizers from the bootstrap objects before it leaves the objects in the shoot.
	BootstrapFinalizers metav1.Duration
}

// ControllerSettings tune the Deployment of a controller, with the fields of the FluxConfig's
// ControllerSettings: the settings are merged with the layers of the shoots' configuration, so an
// unset field (nil) keeps the lower layer's.
type ControllerSettings struct {
	// Resources replace the resource requirements of the controller's container.
	Resources *corev1.ResourceRequirements
	// Tolerations replace the tolerations of the controller's pods.
	Tolerations []corev1.Toleration
	// NodeSelector adds labels to the node selector of the controller's pods.
	NodeSelector map[string]string
	// PriorityClassName is the PriorityClass of the controller's pods.
	PriorityClassName *string
	// Concurrent is how many objects the controller reconciles at the same time.
	Concurrent *int32
}
