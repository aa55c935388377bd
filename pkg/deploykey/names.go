// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// Scope tells whether a deploy key is shared by all shoots of a project that use a repository or
// belongs to one shoot.
type Scope string

const (
	// ScopeRepository is a key shared by all shoots of a project that use the same repository.
	ScopeRepository Scope = "repository"
	// ScopeShoot is a key of a single shoot (and repository), removed together with the shoot.
	ScopeShoot Scope = "shoot"
)

// Suffixes of the data keys of one key pair: "<name>.identity" and so on. known_hosts is shared by
// all key pairs (constants.SecretKeyKnownHosts), since host keys belong to hosts, not repositories.
const (
	suffixIdentity    = "." + constants.SecretKeyIdentity
	suffixIdentityPub = "." + constants.SecretKeyIdentityPub
	// suffixRepository records which repository a key pair is for, so users can tell them apart.
	suffixRepository = ".repository"
	// suffixNext marks the pending key pair of a staged rotation, "<name>.next.identity" and
	// "<name>.next.identity.pub": no name KeyName makes ends with it (they end with a hash), so a
	// pending pair is never taken for a key pair of its own.
	suffixNext            = ".next"
	suffixNextIdentity    = suffixNext + suffixIdentity
	suffixNextIdentityPub = suffixNext + suffixIdentityPub
)

const (
	prefixRepository = "repo."
	prefixShoot      = "shoot."
	// maxSlugLength keeps the data keys well below the 253 characters Kubernetes allows.
	maxSlugLength = 100
)

// KeyName returns the name of the key pair for a repository ("host:port/path", see
// helper.GitURL.Repository) in the deploy key Secret; shootName matters only for ScopeShoot. The
// name is readable (host and path) and unique (a hash of the repository), and only contains
// characters Secret data keys allow.
func KeyName(scope Scope, shootName, repository string) string {
	sum := sha256.Sum256([]byte(repository))
	name := slug(repository) + "-" + hex.EncodeToString(sum[:])[:10]
	if scope == ScopeShoot {
		return prefixShoot + shootName + "." + name
	}
	return prefixRepository + name
}

func slug(repository string) string {
	var b strings.Builder
	for _, r := range repository {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_.-")
	if len(s) > maxSlugLength {
		s = s[:maxSlugLength]
	}
	return s
}

// shootPrefix is what the names of a shoot's key pairs start with.
func shootPrefix(shootName string) string {
	return prefixShoot + shootName + "."
}

// DataKeys returns the data keys of the Secret that hold the private and the public key of a key
// pair, e.g. for a kubectl command that prints the public key.
func DataKeys(keyName string) (identity, identityPub string) {
	return keyName + suffixIdentity, keyName + suffixIdentityPub
}

// isOwnKeyPair tells whether the Secret has a key pair of the extension of this name.
func isOwnKeyPair(secret *corev1.Secret, name string) bool {
	repository, ok := secret.Data[name+suffixRepository]
	if !ok {
		return false
	}
	if _, ok := secret.Data[name+suffixIdentity]; !ok {
		return false
	}
	scope, shootName, ok := parseKeyName(name)
	return ok && KeyName(scope, shootName, string(repository)) == name
}

// parseKeyName returns the scope and shoot a name made by KeyName has; ok is false for names
// KeyName does not make. Shoot names have no dots, so the shoot's part ends at the first one.
func parseKeyName(name string) (scope Scope, shootName string, ok bool) {
	if strings.HasPrefix(name, prefixRepository) {
		return ScopeRepository, "", true
	}
	rest, found := strings.CutPrefix(name, prefixShoot)
	if !found {
		return "", "", false
	}
	shootName, _, found = strings.Cut(rest, ".")
	return ScopeShoot, shootName, found && shootName != ""
}
