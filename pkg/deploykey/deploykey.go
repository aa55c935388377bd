// Package deploykey keeps the SSH deploy keys of private git repositories in Secrets of the
// garden project namespace, where project members can read the public key, register it with
// their git host, check the recorded host keys and ask for a new key.
package deploykey

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Scope tells whether a deploy key is shared by all shoots of a project or belongs to one shoot.
type Scope string

const (
	// ScopeProject is a key shared by all shoots of a project that use the same repository.
	ScopeProject Scope = "project"
	// ScopeShoot is a key of a single shoot, deleted together with the shoot.
	ScopeShoot Scope = "shoot"
)

// RotateValue is the value of constants.AnnotationRotate that asks for a new key pair.
const RotateValue = "true"

var (
	// DefaultScanTimeout bounds a host key scan when Manager.ScanTimeout is not set.
	DefaultScanTimeout = 10 * time.Second
	// MaxWriteAttempts bounds how often a write that lost an optimistic-locking race against a
	// concurrent writer is retried on the fresh object before Ensure gives up for this reconcile.
	MaxWriteAttempts = 5
)

// SecretName returns the name of the deploy key Secret for a scope; shootName matters only
// for ScopeShoot.
func SecretName(scope Scope, shootName string) string {
	if scope == ScopeShoot {
		return constants.DeployKeySecretPrefix + "-" + shootName
	}
	return constants.DeployKeySecretPrefix
}

// Manager creates, reuses and rotates deploy key Secrets in the garden cluster.
type Manager struct {
	// Client reads and writes Secrets in the garden cluster. It should read from the API server
	// rather than a cache, or a Secret created by a concurrent reconcile may not be visible yet.
	Client client.Client
	// Algorithm of generated keys; empty means sshkey.DefaultAlgorithm.
	Algorithm sshkey.Algorithm
	// ScanTimeout bounds a host key scan; zero means DefaultScanTimeout.
	ScanTimeout time.Duration
	// ExtraKnownHosts are known_hosts lines the operator trusts; they are appended to every
	// result, and a git host found in them is not scanned.
	ExtraKnownHosts []byte
	// AllowInsecureHostKeys turns a failed host key scan into a key without host key checking
	// instead of an error.
	AllowInsecureHostKeys bool
	// Scanner fetches host keys as known_hosts lines; nil means sshkey.ScanHostKeyWith through
	// the Request's Dial.
	Scanner func(ctx context.Context, hostPort string, timeout time.Duration) ([]byte, error)
}

// Request describes the deploy key one shoot needs.
type Request struct {
	// Namespace is the garden project namespace, e.g. garden-foo.
	Namespace string
	// SecretName is the name of the deploy key Secret, see SecretName.
	SecretName string
	// Scope is recorded on a created Secret.
	Scope Scope
	// Comment ends the public key line so users can tell keys apart at their git host,
	// e.g. "shoot-flux garden-foo" or "shoot-flux garden-foo/bar".
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
}

// ScanFailedMessage is all a shoot owner learns about a failed or refused host key scan: the
// reasons differ by target (refused, timed out, no such host, denied by the host policy) and would
// let project members map the seed's network. The reason is in the extension's log.
const ScanFailedMessage = "the host cannot be reached from the seed or is not allowed by the operator's host policy"

// DeployKey is what a shoot needs to use a deploy key.
type DeployKey struct {
	// SecretName is the name of the Secret in the request's namespace.
	SecretName string
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
	// Created is set when this call created the Secret.
	Created bool
	// Rotated is set when this call replaced the key pair on request.
	Rotated bool
}

// Ensure returns the deploy key of the request's Secret, creating the Secret with a new key
// pair if it does not exist. An existing key is never replaced unless the Secret is annotated
// for rotation, so the key the user registered at the git host keeps working. Concurrent
// calls for the same Secret, also from other processes, end with one key pair: creation relies
// on Create failing for an existing name and rotation on optimistic locking.
func (m *Manager) Ensure(ctx context.Context, log logr.Logger, req Request) (*DeployKey, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	log = log.WithValues("secret", client.ObjectKey{Namespace: req.Namespace, Name: req.SecretName})

	secret, created, err := m.getOrCreate(ctx, log, req)
	if err != nil {
		return nil, err
	}
	secret, rotated, err := m.rotateIfRequested(ctx, log, req, secret)
	if err != nil {
		return nil, err
	}
	result, err := keyFromSecret(secret, req.Comment)
	if err != nil {
		return nil, err
	}
	result.Created, result.Rotated = created, rotated

	result.KnownHosts, result.InsecureHostKey, err = m.knownHosts(ctx, log, req, secret)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// Delete deletes a deploy key Secret this extension created. A Secret the user created under
// that name, or one that is already gone, is left alone.
func (m *Manager) Delete(ctx context.Context, namespace, name string) error {
	secret := &corev1.Secret{}
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading deploy key Secret %s/%s: %w", namespace, name, err)
	}
	if secret.Labels[constants.LabelManagedBy] != constants.ExtensionName {
		return nil
	}
	// The UID precondition keeps us from deleting a Secret recreated meanwhile for a new owner.
	err := m.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting deploy key Secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

func validateRequest(req Request) error {
	if req.Namespace == "" || req.SecretName == "" {
		return fmt.Errorf("deploy key request needs a namespace and a Secret name, got %q and %q", req.Namespace, req.SecretName)
	}
	if req.Scope != ScopeProject && req.Scope != ScopeShoot {
		return fmt.Errorf("invalid deploy key scope %q, must be %q or %q", req.Scope, ScopeProject, ScopeShoot)
	}
	return nil
}

func (m *Manager) getOrCreate(ctx context.Context, log logr.Logger, req Request) (*corev1.Secret, bool, error) {
	key := client.ObjectKey{Namespace: req.Namespace, Name: req.SecretName}
	secret := &corev1.Secret{}
	err := m.Client.Get(ctx, key, secret)
	if err == nil {
		return secret, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("reading deploy key Secret %s: %w", key, err)
	}

	pair, err := sshkey.Generate(m.Algorithm, req.Comment)
	if err != nil {
		return nil, false, fmt.Errorf("generating deploy key for Secret %s: %w", key, err)
	}
	secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: req.Namespace,
			Name:      req.SecretName,
			Labels: map[string]string{
				constants.LabelManagedBy: constants.ExtensionName,
				constants.LabelKeyScope:  string(req.Scope),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			constants.SecretKeyIdentity:    pair.PrivateKey,
			constants.SecretKeyIdentityPub: []byte(pair.AuthorizedKey),
		},
	}
	err = m.Client.Create(ctx, secret)
	if err == nil {
		log.Info("Created deploy key", "fingerprint", pair.Fingerprint)
		return secret, true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, false, fmt.Errorf("creating deploy key Secret %s: %w", key, err)
	}

	// Another reconcile created the Secret since we looked; its key is the one to use, and
	// ours was never shown to anyone.
	secret = &corev1.Secret{}
	if err := m.Client.Get(ctx, key, secret); err != nil {
		return nil, false, fmt.Errorf("reading deploy key Secret %s created concurrently: %w", key, err)
	}
	return secret, false, nil
}

func rotationRequested(secret *corev1.Secret) bool {
	return secret.Annotations[constants.AnnotationRotate] == RotateValue
}

func (m *Manager) rotateIfRequested(ctx context.Context, log logr.Logger, req Request, secret *corev1.Secret) (*corev1.Secret, bool, error) {
	key := client.ObjectKeyFromObject(secret)
	for attempt := 1; rotationRequested(secret); attempt++ {
		pair, err := sshkey.Generate(m.Algorithm, req.Comment)
		if err != nil {
			return nil, false, fmt.Errorf("generating new deploy key for Secret %s: %w", key, err)
		}
		updated := secret.DeepCopy()
		delete(updated.Annotations, constants.AnnotationRotate)
		if updated.Data == nil {
			updated.Data = map[string][]byte{}
		}
		updated.Data[constants.SecretKeyIdentity] = pair.PrivateKey
		updated.Data[constants.SecretKeyIdentityPub] = []byte(pair.AuthorizedKey)

		// The resourceVersion from our read makes the update fail if anybody changed the
		// Secret since, in particular a concurrent rotation whose key must not be overwritten.
		err = m.Client.Update(ctx, updated)
		if err == nil {
			log.Info("Rotated deploy key", "fingerprint", pair.Fingerprint)
			return updated, true, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, false, fmt.Errorf("rotating deploy key in Secret %s: %w", key, err)
		}
		if attempt >= MaxWriteAttempts {
			return nil, false, fmt.Errorf("rotating deploy key in Secret %s: gave up after %d conflicting writes: %w", key, attempt, err)
		}
		secret = &corev1.Secret{}
		if err := m.Client.Get(ctx, key, secret); err != nil {
			return nil, false, fmt.Errorf("reading deploy key Secret %s: %w", key, err)
		}
	}
	return secret, false, nil
}

// keyFromSecret reads the key pair of a deploy key Secret. A Secret without a usable private
// key is an error even if we created it: replacing it would silently invalidate whatever the
// user registered, so the user decides by deleting the Secret or annotating it for rotation.
func keyFromSecret(secret *corev1.Secret, comment string) (*DeployKey, error) {
	name := client.ObjectKeyFromObject(secret)
	howToFix := fmt.Sprintf("delete the Secret or annotate it with %s=%s to get a new key", constants.AnnotationRotate, RotateValue)
	identity := secret.Data[constants.SecretKeyIdentity]
	if len(bytes.TrimSpace(identity)) == 0 {
		return nil, fmt.Errorf("deploy key Secret %s has no private key in %q; %s", name, constants.SecretKeyIdentity, howToFix)
	}
	signer, err := sshkey.ParsePrivateKey(identity)
	if err != nil {
		return nil, fmt.Errorf("deploy key Secret %s has no usable private key in %q (%w); %s", name, constants.SecretKeyIdentity, err, howToFix)
	}

	// The stored public key carries the comment the user saw; if it does not belong to the
	// private key (the user replaced only the identity), the derived one is the truth.
	authorizedKey := sshkey.AuthorizedKey(signer.PublicKey(), comment)
	if pub := secret.Data[constants.SecretKeyIdentityPub]; len(pub) > 0 {
		if stored, _, err := sshkey.ParseAuthorizedKey(string(pub)); err == nil && sshkey.SamePublicKey(stored, signer.PublicKey()) {
			authorizedKey = string(pub)
		}
	}
	fingerprint, err := sshkey.FingerprintOf(authorizedKey)
	if err != nil {
		return nil, fmt.Errorf("deploy key Secret %s: %w", name, err)
	}
	return &DeployKey{
		SecretName:    secret.Name,
		PrivateKey:    identity,
		AuthorizedKey: authorizedKey,
		Fingerprint:   fingerprint,
	}, nil
}

func (m *Manager) knownHosts(ctx context.Context, log logr.Logger, req Request, secret *corev1.Secret) ([]byte, bool, error) {
	if err := sshkey.ValidateKnownHosts(m.ExtraKnownHosts); err != nil {
		return nil, false, fmt.Errorf("operator configured known_hosts: %w", err)
	}
	if len(bytes.TrimSpace(req.ConfiguredKnownHosts)) > 0 {
		if err := sshkey.ValidateKnownHosts(req.ConfiguredKnownHosts); err != nil {
			return nil, false, fmt.Errorf("source.knownHosts: %w", err)
		}
		return joinKnownHosts(req.ConfiguredKnownHosts, m.ExtraKnownHosts), false, nil
	}
	if req.GitHost == "" {
		return joinKnownHosts(m.ExtraKnownHosts), false, nil
	}

	key := client.ObjectKeyFromObject(secret)
	stored := secret.Data[constants.SecretKeyKnownHosts]
	if err := sshkey.ValidateKnownHosts(stored); err != nil {
		return nil, false, fmt.Errorf("deploy key Secret %s, key %s: %w", key, constants.SecretKeyKnownHosts, err)
	}
	// A stored entry wins over a new scan: the user may have checked or replaced it, and a
	// changed host key must fail loudly rather than be trusted on sight.
	if sshkey.KnownHostsContains(stored, req.GitHost) || sshkey.KnownHostsContains(m.ExtraKnownHosts, req.GitHost) {
		return joinKnownHosts(stored, m.ExtraKnownHosts), false, nil
	}

	host, port := sshkey.SplitHostPort(req.GitHost)
	hostPort := net.JoinHostPort(host, port)
	scanned, err := m.scan(ctx, req.Dial, hostPort)
	if err != nil {
		if m.AllowInsecureHostKeys {
			log.Info("Cannot determine SSH host key, connecting without host key checking", "host", hostPort, "reason", err.Error())
			return joinKnownHosts(stored, m.ExtraKnownHosts), true, nil
		}
		log.Info("Cannot determine SSH host key", "host", hostPort, "reason", err.Error())
		return nil, false, fmt.Errorf("cannot determine the SSH host key of %q: %s; set source.knownHosts or add it to Secret %s key %s",
			hostPort, ScanFailedMessage, key, constants.SecretKeyKnownHosts)
	}

	stored, err = m.storeKnownHosts(ctx, log, secret, hostPort, scanned)
	if err != nil {
		return nil, false, err
	}
	return joinKnownHosts(stored, m.ExtraKnownHosts), false, nil
}

func (m *Manager) scan(ctx context.Context, dial sshkey.DialFunc, hostPort string) ([]byte, error) {
	scanner := m.Scanner
	if scanner == nil {
		scanner = func(ctx context.Context, hostPort string, timeout time.Duration) ([]byte, error) {
			return sshkey.ScanHostKeyWith(ctx, dial, hostPort, timeout)
		}
	}
	timeout := m.ScanTimeout
	if timeout <= 0 {
		timeout = DefaultScanTimeout
	}
	scanned, err := scanner(ctx, hostPort, timeout)
	if err != nil {
		return nil, err
	}
	if err := sshkey.ValidateKnownHosts(scanned); err != nil {
		return nil, err
	}
	if !sshkey.KnownHostsContains(scanned, hostPort) {
		return nil, errors.New("the scan returned no key for this host")
	}
	return scanned, nil
}

// storeKnownHosts appends scanned host keys to the Secret, so later reconciles trust the key
// seen first and users can inspect it. If a concurrent reconcile stored a key for the host
// first, that one is used.
func (m *Manager) storeKnownHosts(ctx context.Context, log logr.Logger, secret *corev1.Secret, hostPort string, scanned []byte) ([]byte, error) {
	key := client.ObjectKeyFromObject(secret)
	for attempt := 1; ; attempt++ {
		updated := secret.DeepCopy()
		if updated.Data == nil {
			updated.Data = map[string][]byte{}
		}
		updated.Data[constants.SecretKeyKnownHosts] = joinKnownHosts(secret.Data[constants.SecretKeyKnownHosts], scanned)
		err := m.Client.Update(ctx, updated)
		if err == nil {
			log.Info("Stored scanned SSH host keys", "host", hostPort)
			return updated.Data[constants.SecretKeyKnownHosts], nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("storing SSH host keys in Secret %s: %w", key, err)
		}
		if attempt >= MaxWriteAttempts {
			return nil, fmt.Errorf("storing SSH host keys in Secret %s: gave up after %d conflicting writes: %w", key, attempt, err)
		}
		secret = &corev1.Secret{}
		if err := m.Client.Get(ctx, key, secret); err != nil {
			return nil, fmt.Errorf("reading deploy key Secret %s: %w", key, err)
		}
		if stored := secret.Data[constants.SecretKeyKnownHosts]; sshkey.KnownHostsContains(stored, hostPort) {
			return stored, nil
		}
	}
}

// joinKnownHosts concatenates known_hosts data, making sure every part ends with a newline so
// the last line of one part does not run into the first of the next.
func joinKnownHosts(parts ...[]byte) []byte {
	var out []byte
	for _, part := range parts {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		out = append(out, part...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out
}
