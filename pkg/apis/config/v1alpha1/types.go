package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
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
	Controllers map[string]fluxv1alpha1.ControllerSettings `json:"controllers,omitempty"`
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
