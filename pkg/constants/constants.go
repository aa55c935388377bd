// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package constants holds names shared by the extension's controller, admission and tests.
package constants

const (
	// ExtensionType is the type of the Extension resource this extension reconciles.
	ExtensionType = "shoot-flux"
	// ServiceName is the name of the extension controller.
	ServiceName = ExtensionType
	// ExtensionName is the name used for the controller registration and the manager.
	ExtensionName = "gardener-extension-" + ServiceName
	// Origin is the origin recorded on the ManagedResources this extension owns.
	Origin = ServiceName

	// ManagedResourceControllers is the ManagedResource with Flux and kluctl controllers.
	ManagedResourceControllers = "extension-shoot-flux-controllers"
	// ManagedResourceBootstrap is the ManagedResource with the git credentials and the bootstrap objects.
	ManagedResourceBootstrap = "extension-shoot-flux-bootstrap"

	// ProjectConfigMapName is the name of the project ConfigMap in the garden cluster.
	ProjectConfigMapName = "flux-config"
	// ConfigMapKeyConfig is the key of the full FluxConfig document in the project ConfigMap.
	ConfigMapKeyConfig = "config.yaml"
	// ConfigMapKeyFluxVersion is the legacy key (23technologies format) for the Flux version.
	ConfigMapKeyFluxVersion = "fluxVersion"
	// ConfigMapKeyRepositoryURL is the legacy key for the repository URL.
	ConfigMapKeyRepositoryURL = "repositoryUrl"
	// ConfigMapKeyRepositoryBranch is the legacy key for the repository branch.
	ConfigMapKeyRepositoryBranch = "repositoryBranch"
	// ConfigMapKeyRepositoryType is the legacy key for the repository type (public|private).
	ConfigMapKeyRepositoryType = "repositoryType"

	// SecretKeyIdentity is the data key of the OpenSSH private key in deploy key and credential Secrets.
	SecretKeyIdentity = "identity"
	// SecretKeyIdentityPub is the data key of the authorized_keys line of a deploy key.
	SecretKeyIdentityPub = "identity.pub"
	// SecretKeyKnownHosts is the data key of the known_hosts file.
	SecretKeyKnownHosts = "known_hosts"
	// SecretKeyUsername is the data key of a basic-auth user name.
	SecretKeyUsername = "username"
	// SecretKeyPassword is the data key of a basic-auth password or token.
	SecretKeyPassword = "password"
	// SecretKeyToken is the data key of an OCI registry bearer token.
	SecretKeyToken = "token"

	// AnnotationRotate on the deploy key Secret asks the extension for new key pairs: "true" for
	// all of them, or a comma-separated list of key names.
	AnnotationRotate = "shoot-flux.extensions.gardener.cloud/rotate"
	// AnnotationRotatePrepare on the deploy key Secret asks the extension for pending ("next") key
	// pairs, "true" for all of them or a comma-separated list of key names, that AnnotationRotate
	// later makes the current ones: users register the next public key first, so no shoot loses
	// access in between.
	AnnotationRotatePrepare = "shoot-flux.extensions.gardener.cloud/rotate-prepare"
	// AnnotationRotateRefused on the deploy key Secret is written by the extension in place of a
	// rotation request it cannot carry out, with the reason; the next request it carries out
	// removes it.
	AnnotationRotateRefused = "shoot-flux.extensions.gardener.cloud/rotate-refused"
	// AnnotationDroppedDataBytes marks a project ConfigMap in the extension's garden cache whose
	// data and binaryData were over the operator's limit and were not kept; its value is their
	// size in bytes. The cache keeps no other annotation, so only the cache sets it.
	AnnotationDroppedDataBytes = "shoot-flux.extensions.gardener.cloud/dropped-data-bytes"
	// AnnotationHandedOverAt on the controllers ManagedResource records when the extension handed the
	// controllers over to the user (flux.management handover) and stopped managing them; together with
	// gardener-resource-manager's ignore annotation it marks the handover, RFC 3339.
	AnnotationHandedOverAt = "shoot-flux.extensions.gardener.cloud/handed-over-at"
	// AnnotationHandedOverVersion on the controllers ManagedResource records the release handed over.
	AnnotationHandedOverVersion = "shoot-flux.extensions.gardener.cloud/handed-over-version"
	// LabelManagedBy marks garden objects written by this extension.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// DeployKeysSecretName is the one Secret per garden project namespace that holds the project's
	// deploy keys. It is the only Secret the extension creates or updates in the garden; the garden
	// RBAC and admission policy (example/garden-rbac.yaml) allow no other.
	DeployKeysSecretName = "shoot-flux-deploy-keys"
	// LegacyDeployKeySecretName is the project's deploy key Secret of releases before
	// DeployKeysSecretName; shoot-scoped keys were named LegacyDeployKeySecretName-<shoot>. Keys
	// in use are migrated from them, which is why the extension may read this Secret.
	LegacyDeployKeySecretName = "shoot-flux-deploy-key"

	// GitCredentialsSecretName is the name of the git credentials Secret in the shoot.
	GitCredentialsSecretName = "shoot-flux-git-credentials"
	// OCICredentialsSecretName is the name of the OCI registry credentials Secret in the shoot.
	OCICredentialsSecretName = "shoot-flux-oci-credentials"
	// DecryptionSecretName is the name of the SOPS key Secret in the shoot.
	DecryptionSecretName = "shoot-flux-sops"
	// BootstrapName is the name of the bootstrap KluctlDeployment or GitRepository/Kustomization in the shoot.
	BootstrapName = "shoot-flux-bootstrap"
	// ShootInfoConfigMapName is the ConfigMap with the shoot's identity in the bootstrap namespace of
	// the shoot; its keys are the Kustomization's substitution variables (SHOOT_NAME, ...).
	ShootInfoConfigMapName = "shoot-info"
	// KluctlArgShoot is the kluctl argument that holds the shoot's identity.
	KluctlArgShoot = "shoot"
	// StatusConfigMapName is the ConfigMap in the bootstrap namespace of the shoot that tells the
	// shoot owner what the extension deployed, and the deploy key to register.
	StatusConfigMapName = "shoot-flux-status"
	// ImagePullSecretName is the Secret with the operator's registry credentials in the
	// controllers' namespaces of the shoot, named in the pods' imagePullSecrets.
	ImagePullSecretName = "shoot-flux-image-pull"
)

// ReservedSecretNames are the Secrets the extension itself writes into the shoot, next to the
// bootstrap object; an additional Secret must not take their names.
var ReservedSecretNames = []string{GitCredentialsSecretName, OCICredentialsSecretName, DecryptionSecretName, ImagePullSecretName}

// DefaultDeployKeysMaxDataKeys bounds the data keys of a project's deploy key Secret unless the
// operator configures otherwise (deployKeysMaxEntries): room for 500 key pairs of three keys each,
// fewer while rotations keep pending pairs. Project admins write the Secret, and every key costs
// work on each reconcile of each shoot of the project.
const DefaultDeployKeysMaxDataKeys = 1500

// DefaultDeployKeysMaxRotatedKeys is how many key pairs one rotation request may ask the extension
// to generate unless the operator configures otherwise (deployKeysMaxRotatedKeys). The request is a
// project admin's annotation and is carried out within one reconcile: an rsa-4096 key takes about
// 0.8 s of CPU, so 50 keys take up to 40 s, while a project that rotates more names its keys in
// batches.
const DefaultDeployKeysMaxRotatedKeys = 50

// ShootInfoVariables are the keys of the ConfigMap shoot-info, the Kustomization's substitution
// variables of the shoot's identity: this extension's and those stackit's extension wrote. They are
// reserved in bootstrap.flux.postBuild.substitute, whose values would win over them.
var ShootInfoVariables = []string{
	"SHOOT_PROJECT", "SHOOT_NAME", "SHOOT_NAMESPACE", "SHOOT_SEED", "SHOOT_REGION", "SHOOT_PROVIDER_TYPE",
	"SHOOT_KUBERNETES_VERSION", "SHOOT_PURPOSE", "SHOOT_DOMAIN",
	"SHOOT_INFO_NAME", "SHOOT_INFO_CLUSTER_IDENTITY", "SHOOT_INFO_TECHNICAL_ID", "SHOOT_INFO_GARDEN_CLUSTER_IDENTITY",
}
