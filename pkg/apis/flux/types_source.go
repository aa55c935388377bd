// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package flux

// Source is a git repository, or an OCI artifact when OCI is set; then the git fields are empty.
type Source struct {
	// URL is an ssh://, scp-like or https:// git URL.
	URL string
	// Ref is the revision to check out.
	Ref GitRef
	// Path is the directory inside the repository.
	Path string
	// Type tells whether the repository needs credentials.
	Type RepositoryType
	// KnownHosts are the known_hosts lines trusted for the repository host; when set, the host is not
	// scanned.
	KnownHosts string
	// SecretResourceName names a Shoot spec.resources Secret with user credentials; empty means a
	// generated deploy key for private repositories.
	SecretResourceName string
	// OCI is the OCI artifact to bootstrap from instead of a git repository.
	OCI *OCISource
	// Ignore are the GitRepository's .gitignore-style ignore rules; nil keeps source-controller's
	// default rules.
	Ignore *string
	// Provider is the GitRepository's authentication provider; empty means Flux's default.
	Provider string
	// Verify configures the GitRepository's signature verification; nil verifies nothing.
	Verify *GitVerification
}

// OCISource is an OCI artifact in Flux's artifact format.
type OCISource struct {
	// URL is oci://registry[:port]/repository, without tag or digest.
	URL string
	// Ref is the artifact version to pull.
	Ref OCIRef
	// Path is the directory inside the artifact.
	Path string
	// SecretResourceName names a Shoot spec.resources Secret with registry credentials; empty means
	// anonymous pulls.
	SecretResourceName string
	// Ignore are the OCIRepository's ignore rules, like Source.Ignore.
	Ignore *string
	// Provider is the OCIRepository's authentication provider; empty means Flux's default.
	Provider string
	// CertSecretRef names the Secret with the registry's CA or client certificate.
	CertSecretRef *SecretReference
	// Verify configures the OCIRepository's signature verification; nil verifies nothing.
	Verify *OCIVerification
}

// OCIRef is a tag, a digest or a semantic version range; exactly one is set.
type OCIRef struct {
	// Tag is an image tag.
	Tag string
	// Digest is a manifest digest, algorithm:hex.
	Digest string
	// SemVer is a semantic version range of tags.
	SemVer string
}

// GitRef is a branch, a tag, a commit, a semantic version range or a reference name; exactly one
// is set.
type GitRef struct {
	// Branch is a branch name.
	Branch string
	// Tag is a tag name.
	Tag string
	// Commit is a full commit SHA.
	Commit string
	// SemVer is a semantic version range of tags.
	SemVer string
	// Name is a reference name, e.g. refs/pull/42/head.
	Name string
}

// SecretReference names a Secret in Flux's namespace of the shoot.
type SecretReference struct {
	Name string
}

// GitVerification configures the signature verification of the GitRepository.
type GitVerification struct {
	// Mode is HEAD, Tag or TagAndHEAD; empty means Flux's default, HEAD.
	Mode string
	// SecretRef names the Secret with the trusted public keys.
	SecretRef SecretReference
}

// OCIVerification configures the signature verification of the OCIRepository.
type OCIVerification struct {
	// Provider is cosign or notation; empty means cosign.
	Provider string
	// SecretRef names the Secret with the trusted keys; nil for keyless cosign signatures.
	SecretRef *SecretReference
	// MatchOIDCIdentity are the identities a keyless cosign signature may have.
	MatchOIDCIdentity []OIDCIdentityMatch
}

// OIDCIdentityMatch matches the issuer and subject of a keyless signature by regular expressions.
type OIDCIdentityMatch struct {
	Issuer  string
	Subject string
}
