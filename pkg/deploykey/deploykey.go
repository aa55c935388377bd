// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package deploykey keeps the SSH deploy keys of private git repositories in one Secret of fixed
// name per project namespace of the garden, where project members read the public keys and host
// keys and ask for new keys. Each repository gets its own key pair: git hosts refuse a deploy key
// registered at another repository.
package deploykey

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Manager creates, reuses and rotates the key pairs in the deploy key Secrets of the garden.
type Manager struct {
	// Client reads and writes Secrets in the garden cluster. It should read from the API server
	// rather than a cache, or a key stored by a concurrent reconcile may not be visible yet.
	Client client.Client
	// Algorithm of generated keys; empty means sshkey.DefaultAlgorithm.
	Algorithm sshkey.Algorithm
	// ScanTimeout bounds a host key scan (the operator's timeouts.hostKeyScan).
	ScanTimeout time.Duration
	// ExtraKnownHosts are known_hosts lines the operator trusts; they are appended to every
	// result, and a git host found in them is not scanned.
	ExtraKnownHosts []byte
	// KnownHostsLimits bound the known_hosts of the Secret, which project admins write, and of
	// Request.ConfiguredKnownHosts; a scan is not stored if the result would exceed them. Zero
	// fields are unbounded.
	KnownHostsLimits sshkey.KnownHostsLimits
	// AllowInsecureHostKeys turns a failed host key scan into a key without host key checking
	// instead of an error.
	AllowInsecureHostKeys bool
	// Scanner fetches host keys as known_hosts lines; nil means sshkey.ScanHostKeyWith through
	// the Request's Dial.
	Scanner func(ctx context.Context, hostPort string, timeout time.Duration) ([]byte, error)
	// MaxDataKeys bounds the number of data keys of the deploy key Secret that Ensure handles;
	// zero means constants.DefaultDeployKeysMaxDataKeys.
	MaxDataKeys int
	// MaxRotatedKeys bounds the key pairs one rotation request generates; zero means
	// constants.DefaultDeployKeysMaxRotatedKeys.
	MaxRotatedKeys int
	// PrivateKeyLimits bound the private keys of the Secret, which project admins write, and of
	// Request.Adopt before they are parsed; zero means sshkey.DefaultPrivateKeyLimits.
	PrivateKeyLimits sshkey.PrivateKeyLimits

	// rotating holds the project namespaces whose Secret a reconcile of this process is rotating.
	rotating sync.Map
}

// Request describes the deploy key one shoot needs.
type Request struct {
	// Namespace is the garden project namespace, e.g. garden-foo.
	Namespace string
	// KeyName is the name of the key pair in the Secret, see KeyName.
	KeyName string
	// Repository is recorded next to a new key pair, e.g. "github.com:22/org/repo".
	Repository string
	// Comment ends the public key line of a new key so users can tell keys apart at their git
	// host, e.g. "shoot-flux garden-foo github.com:22/org/repo".
	Comment string
	// GitHost is the "host:port" of the SSH git server; empty when the repository is not
	// reached through SSH, which skips host key handling.
	GitHost string
	// ConfiguredKnownHosts are the known_hosts the user configured for the repository; they
	// take precedence over the Secret and scanning.
	ConfiguredKnownHosts []byte
	// Dial opens the connections of a host key scan, e.g. through the operator's host policy
	// (hostpolicy.Policy.DialContext); nil dials directly.
	Dial sshkey.DialFunc
	// Adopt is the private key to store when the Secret has no key pair of this name yet, instead
	// of generating one: the key a shoot already uses, so that the key registered at the git host
	// keeps working when keys move to this Secret.
	Adopt []byte
}

// ScanFailedMessage is all a shoot owner learns about a failed or refused host key scan: the
// reasons differ by target (refused, timed out, no such host, denied by the host policy) and would
// let project members map the seed's network. The reason is in the extension's log.
const ScanFailedMessage = "the host cannot be reached from the seed or is not allowed by the operator's host policy"

// DeployKey is what a shoot needs to use a deploy key.
type DeployKey struct {
	// SecretName is the name of the Secret in the request's namespace.
	SecretName string
	// KeyName is the name of the key pair in the Secret.
	KeyName string
	// PrivateKey is the OpenSSH private key. It must never reach a log, event or status.
	PrivateKey []byte
	// AuthorizedKey is the public key as authorized_keys line, to be registered at the git host.
	AuthorizedKey string
	// Fingerprint is the SHA256 fingerprint of the public key.
	Fingerprint string
	// KnownHosts is the known_hosts data the shoot verifies the git host with.
	KnownHosts []byte
	// InsecureHostKey is set when no host key could be determined and the operator allows
	// connecting without host key checking.
	InsecureHostKey bool
	// Created is set when this call stored a new key pair.
	Created bool
	// Adopted is set when this call stored the request's Adopt key.
	Adopted bool
	// Rotated is set when this call replaced the key pair on request.
	Rotated bool
	// NextAuthorizedKey and NextFingerprint are the public key of the pending key pair a staged
	// rotation prepared, which the next rotation makes the current one; empty without one.
	NextAuthorizedKey string
	NextFingerprint   string
	// RotationSkipped is set when this call carried out a rotation request and left data keys
	// alone that are not key pairs of the extension: it names them for a warning to the user.
	RotationSkipped string
	// RotationRefused is set when this call refused a rotation request that could not be carried
	// out, before generating any key: it says why, for a warning to the user.
	RotationRefused string
}

// Ensure returns the request's key pair, storing a new (or the adopted) key pair in the project's
// Secret, and the Secret itself, if they do not exist. An existing key is never replaced unless the
// Secret is annotated for its rotation, so the key the user registered at the git host keeps
// working. Concurrent calls, also from other processes, end with one key pair per name: creation
// relies on Create failing for an existing Secret and every change on optimistic locking.
func (m *Manager) Ensure(ctx context.Context, log logr.Logger, req Request) (*DeployKey, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	log = log.WithValues("secret", client.ObjectKey{Namespace: req.Namespace, Name: constants.DeployKeysSecretName}, "key", req.KeyName)

	var (
		out  outcome
		keys = generatedKeys{rotated: map[string]*sshkey.KeyPair{}}
		// rotating is set while this call holds the project's rotation. The shoots of a project
		// reconcile at once when its ConfigMap changes and all would see the request: one
		// generates the keys, the others go on with the keys they read and pick the new ones up
		// on their next reconcile.
		rotating bool
	)
	defer func() {
		if rotating {
			m.rotating.Delete(req.Namespace)
		}
	}()
	secret, err := m.write(ctx, req.Namespace, true, func(secret *corev1.Secret) (bool, error) {
		if err := m.checkDataKeys(secret); err != nil {
			return false, err
		}
		if rotationRequested(secret) && !rotating {
			_, busy := m.rotating.LoadOrStore(req.Namespace, struct{}{})
			rotating = !busy
		}
		var (
			changed bool
			err     error
		)
		out, changed, err = m.ensurePair(ctx, secret, req, rotating, &keys)
		return changed, err
	})
	if err != nil {
		return nil, err
	}
	metrics.RecordDeployKeys(out.created && !out.adopted, out.replacedKeys)
	if out.skipped != "" {
		log.Info("Rotation left data keys alone that are no key pairs of the extension", "dataKeys", out.skipped)
	}
	if out.refused != "" {
		log.Info("Refused a rotation request", "reason", out.refused)
	}

	result, err := m.keyFromSecret(secret, req.KeyName, req.Comment)
	if err != nil {
		return nil, err
	}
	result.Created, result.Adopted, result.Rotated, result.RotationSkipped, result.RotationRefused = out.created, out.adopted, out.rotated, out.skipped, out.refused
	switch {
	case out.adopted:
		log.Info("Moved the deploy key in use into the project's deploy key Secret", "fingerprint", result.Fingerprint)
	case out.created:
		log.Info("Created deploy key", "fingerprint", result.Fingerprint)
	case out.rotated:
		log.Info("Rotated deploy key", "fingerprint", result.Fingerprint)
	}

	result.KnownHosts, result.InsecureHostKey, err = m.knownHosts(ctx, log, req, secret)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// outcome is what one attempt of Ensure did to the Secret.
type outcome struct {
	// created and adopted tell that the request's key pair was stored, generated or adopted.
	created, adopted bool
	// rotated tells that the request's key pair was replaced on request.
	rotated bool
	// skipped and refused are the rotation's, see rotation.
	skipped, refused string
	// replacedKeys counts the key pairs the rotation replaced.
	replacedKeys int
}

// generatedKeys are the key pairs earlier attempts of one Ensure generated: a write that lost a
// race is retried with the same keys rather than new ones, since generating an RSA key takes up
// to seconds of CPU.
type generatedKeys struct {
	// rotated are the rotation's, by name (see generate).
	rotated map[string]*sshkey.KeyPair
	// requested is the request's new (or adopted) key pair.
	requested *sshkey.KeyPair
}

// ensurePair is one attempt of Ensure on the Secret as read: it carries out a rotation request if
// rotating (this call holds the project's rotation), then adds the request's key pair if it is
// missing. It returns what it did and whether it changed the Secret; apart from the key pairs in
// keys it depends on nothing but its arguments, so a retry on a fresh Secret starts over.
func (m *Manager) ensurePair(ctx context.Context, secret *corev1.Secret, req Request, rotating bool, keys *generatedKeys) (outcome, bool, error) {
	var (
		rot     rotation
		changed bool
		err     error
	)
	if rotating {
		if rot, changed, err = m.rotateIfRequested(ctx, secret, keys.rotated); err != nil {
			return outcome{}, false, err
		}
		// Prepared key pairs count against the limit like any other data keys.
		if err := m.checkDataKeys(secret); err != nil {
			return outcome{}, false, fmt.Errorf("cannot prepare the requested key pairs: %w", err)
		}
	}
	out := outcome{
		rotated:      slices.Contains(rot.rotated, req.KeyName),
		skipped:      rot.skipped,
		refused:      rot.refused,
		replacedKeys: len(rot.rotated),
	}
	if _, ok := secret.Data[req.KeyName+suffixIdentity]; ok {
		return out, changed, nil
	}
	if keys.requested == nil {
		if keys.requested, err = m.newPair(req); err != nil {
			return outcome{}, false, err
		}
	}
	setPair(secret, req.KeyName, req.Repository, keys.requested)
	if err := m.checkDataKeys(secret); err != nil {
		return outcome{}, false, fmt.Errorf("cannot add key pair %s: %w", req.KeyName, err)
	}
	out.created, out.adopted = true, len(req.Adopt) > 0
	return out, true, nil
}

// Forget removes the key pairs of a shoot (ScopeShoot) from the project's Secret; the key pairs of
// repositories stay, since other shoots may use them.
func (m *Manager) Forget(ctx context.Context, namespace, shootName string) error {
	prefix := shootPrefix(shootName)
	_, err := m.write(ctx, namespace, false, func(secret *corev1.Secret) (bool, error) {
		changed := false
		for key := range secret.Data {
			if strings.HasPrefix(key, prefix) {
				delete(secret.Data, key)
				changed = true
			}
		}
		return changed, nil
	})
	return err
}

func validateRequest(req Request) error {
	if req.Namespace == "" || req.KeyName == "" {
		return fmt.Errorf("deploy key request needs a namespace and a key name, got %q and %q", req.Namespace, req.KeyName)
	}
	if !strings.HasPrefix(req.KeyName, prefixRepository) && !strings.HasPrefix(req.KeyName, prefixShoot) {
		return fmt.Errorf("deploy key name %q was not made by KeyName", req.KeyName)
	}
	return nil
}

// newPair returns the request's key pair to store: the adopted private key, or a new one.
func (m *Manager) newPair(req Request) (*sshkey.KeyPair, error) {
	if len(req.Adopt) == 0 {
		pair, err := sshkey.Generate(m.Algorithm, req.Comment)
		if err != nil {
			return nil, fmt.Errorf("generating deploy key %s: %w", req.KeyName, err)
		}
		return pair, nil
	}
	signer, err := sshkey.ParsePrivateKey(req.Adopt, m.privateKeyLimits())
	if err != nil {
		return nil, fmt.Errorf("deploy key to adopt for %s is not usable: %w", req.KeyName, err)
	}
	authorizedKey := sshkey.AuthorizedKey(signer.PublicKey(), req.Comment)
	fingerprint, err := sshkey.FingerprintOf(authorizedKey)
	if err != nil {
		return nil, err
	}
	return &sshkey.KeyPair{PrivateKey: req.Adopt, AuthorizedKey: authorizedKey, Fingerprint: fingerprint}, nil
}

// keyFromSecret reads a key pair of the deploy key Secret. A key pair without a usable private key
// is an error even if we created it: replacing it would silently invalidate whatever the user
// registered, so the user decides by removing the key pair or asking for its rotation.
func (m *Manager) keyFromSecret(secret *corev1.Secret, keyName, comment string) (*DeployKey, error) {
	name := client.ObjectKeyFromObject(secret)
	identityKey, pubKey := DataKeys(keyName)
	howToFix := fmt.Sprintf("remove the data keys %s* to get a new key", keyName)
	if isOwnKeyPair(secret, keyName) {
		howToFix = fmt.Sprintf("remove the data keys %s* or annotate the Secret with %s=%s to get a new key", keyName, constants.AnnotationRotate, keyName)
	}
	identity := secret.Data[identityKey]
	if len(bytes.TrimSpace(identity)) == 0 {
		return nil, fmt.Errorf("deploy key Secret %s has no private key in %q; %s", name, identityKey, howToFix)
	}
	signer, err := sshkey.ParsePrivateKey(identity, m.privateKeyLimits())
	if err != nil {
		return nil, fmt.Errorf("deploy key Secret %s has no usable private key in %q (%w); %s", name, identityKey, err, howToFix)
	}

	// The stored public key carries the comment the user saw; if it does not belong to the
	// private key (the user replaced only the identity), the derived one is the truth.
	authorizedKey := sshkey.AuthorizedKey(signer.PublicKey(), comment)
	if pub := secret.Data[pubKey]; len(pub) > 0 {
		if stored, _, err := sshkey.ParseAuthorizedKey(string(pub)); err == nil && sshkey.SamePublicKey(stored, signer.PublicKey()) {
			authorizedKey = string(pub)
		}
	}
	fingerprint, err := sshkey.FingerprintOf(authorizedKey)
	if err != nil {
		return nil, fmt.Errorf("deploy key Secret %s: %w", name, err)
	}
	key := &DeployKey{
		SecretName:    secret.Name,
		KeyName:       keyName,
		PrivateKey:    identity,
		AuthorizedKey: authorizedKey,
		Fingerprint:   fingerprint,
	}
	// The pending key is only shown; a broken one is reported by the rotation that would use it.
	if next, _ := m.pendingPair(secret, keyName); next != nil {
		if nextFingerprint, err := sshkey.FingerprintOf(next.AuthorizedKey); err == nil {
			key.NextAuthorizedKey, key.NextFingerprint = next.AuthorizedKey, nextFingerprint
		}
	}
	return key, nil
}

func (m *Manager) privateKeyLimits() sshkey.PrivateKeyLimits {
	return m.PrivateKeyLimits.OrDefault()
}
