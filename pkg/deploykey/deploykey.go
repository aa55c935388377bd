// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package deploykey keeps the SSH deploy keys of private git repositories in one Secret per garden
// project namespace, where project members can read the public keys, register them with their git
// host, check the recorded host keys and ask for new keys.
//
// The Secret has a fixed name (constants.DeployKeysSecretName), so the extension's garden
// permissions can be restricted to it. It holds one key pair per repository (or per shoot and
// repository): a git host such as GitHub refuses a deploy key that is already registered at another
// repository, so a key must not be shared between repositories.
package deploykey

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
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

// RotateAll is the value of constants.AnnotationRotate that asks for new key pairs for every key
// in the Secret; any other value is a comma-separated list of key names.
const RotateAll = "true"

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

var (
	// MaxWriteAttempts bounds how often a write that lost an optimistic-locking race against a
	// concurrent writer is retried on the fresh object before Ensure gives up for this reconcile.
	MaxWriteAttempts = 5
)

// A rotation warning names at most maxReportedKeys data keys, the rest are counted, and cuts
// each (a name in the annotation may be longer than a data key) to maxReportedKeyLength bytes.
const (
	maxReportedKeys      = 5
	maxReportedKeyLength = 253
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

// DataKeys returns the data keys of the Secret that hold the private and the public key of a key
// pair, e.g. for a kubectl command that prints the public key.
func DataKeys(keyName string) (identity, identityPub string) {
	return keyName + suffixIdentity, keyName + suffixIdentityPub
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
		created, adopted, rotated bool
		skipped, refused          string
		replacedKeys              int
		// Key pairs generated by an earlier attempt of this call, rotated ones by name and the
		// request's new one: a write that lost a race is retried with the same keys rather than
		// new ones, since generating an RSA key takes up to seconds of CPU.
		generated = map[string]*sshkey.KeyPair{}
		pair      *sshkey.KeyPair
		// rotating is set while this call holds the project's rotation. The shoots of a project
		// reconcile at once when its ConfigMap changes, and all would see the request: one
		// generates the keys, the others go on with the keys they read, as a reconcile that read
		// just before the rotation does, and pick the new ones up on their next reconcile.
		rotating bool
	)
	defer func() {
		if rotating {
			m.rotating.Delete(req.Namespace)
		}
	}()
	secret, err := m.write(ctx, req.Namespace, true, func(secret *corev1.Secret) (bool, error) {
		created, adopted, rotated, skipped, refused = false, false, false, "", ""
		if err := m.checkDataKeys(secret); err != nil {
			return false, err
		}
		if rotationRequested(secret) && !rotating {
			_, busy := m.rotating.LoadOrStore(req.Namespace, struct{}{})
			rotating = !busy
		}
		var (
			rotation rotation
			changed  bool
			err      error
		)
		if rotating {
			if rotation, changed, err = m.rotateIfRequested(ctx, secret, generated); err != nil {
				return false, err
			}
			// Prepared key pairs count against the limit like any other data keys.
			if err := m.checkDataKeys(secret); err != nil {
				return false, fmt.Errorf("cannot prepare the requested key pairs: %w", err)
			}
		}
		rotated, skipped, refused, replacedKeys = slices.Contains(rotation.rotated, req.KeyName), rotation.skipped, rotation.refused, len(rotation.rotated)
		if _, ok := secret.Data[req.KeyName+suffixIdentity]; ok {
			return changed, nil
		}
		if pair == nil {
			if pair, err = m.newPair(req); err != nil {
				return false, err
			}
		}
		setPair(secret, req.KeyName, req.Repository, pair)
		if err := m.checkDataKeys(secret); err != nil {
			return false, fmt.Errorf("cannot add key pair %s: %w", req.KeyName, err)
		}
		created, adopted = true, len(req.Adopt) > 0
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	metrics.RecordDeployKeys(created && !adopted, replacedKeys)
	if skipped != "" {
		log.Info("Rotation left data keys alone that are no key pairs of the extension", "dataKeys", skipped)
	}
	if refused != "" {
		log.Info("Refused a rotation request", "reason", refused)
	}

	result, err := m.keyFromSecret(secret, req.KeyName, req.Comment)
	if err != nil {
		return nil, err
	}
	result.Created, result.Adopted, result.Rotated, result.RotationSkipped, result.RotationRefused = created, adopted, rotated, skipped, refused
	switch {
	case adopted:
		log.Info("Moved the deploy key in use into the project's deploy key Secret", "fingerprint", result.Fingerprint)
	case created:
		log.Info("Created deploy key", "fingerprint", result.Fingerprint)
	case rotated:
		log.Info("Rotated deploy key", "fingerprint", result.Fingerprint)
	}

	result.KnownHosts, result.InsecureHostKey, err = m.knownHosts(ctx, log, req, secret)
	if err != nil {
		return nil, err
	}
	return result, nil
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

func setPair(secret *corev1.Secret, keyName, repository string, pair *sshkey.KeyPair) {
	secret.Data[keyName+suffixIdentity] = pair.PrivateKey
	secret.Data[keyName+suffixIdentityPub] = []byte(pair.AuthorizedKey)
	if repository != "" {
		secret.Data[keyName+suffixRepository] = []byte(repository)
	}
}

// rotation is what rotateIfRequested did.
type rotation struct {
	// rotated are the names of the replaced key pairs.
	rotated []string
	// skipped names, for the user, the data keys the request covered but the rotation left alone
	// as they are no key pairs of the extension; empty if there are none.
	skipped string
	// refused says why the request was refused; empty if it was carried out.
	refused string
}

// rotationRequested tells whether the Secret asks for a rotation or for its preparation.
func rotationRequested(secret *corev1.Secret) bool {
	_, rotate := secret.Annotations[constants.AnnotationRotate]
	_, prepare := secret.Annotations[constants.AnnotationRotatePrepare]
	return rotate || prepare
}

// rotateIfRequested carries out the rotation annotations and removes them; it returns what it did
// and whether it changed the Secret. The rotation annotation replaces the key pairs it names: with
// the pending pair a preparation stored, or else with a new one. The preparation annotation stores
// a pending pair next to each key pair it names, which users register at the git host while the
// shoots keep using the current one. Whichever reconcile sees an annotation first carries it out
// for all key pairs at once, so it cannot stay behind for keys no shoot uses any more; the other
// shoots pick their new key up on their next reconcile. A rotation is done before a preparation,
// so both at once switch to the pending keys and prepare the ones after them.
//
// Only key pairs of the extension are rotated (see ownKeyPairs): the Secret is the project
// admins', and a data key they added for their own purpose must neither be replaced nor cost a
// key generation. generated holds the pairs of earlier attempts of the same Ensure, which are
// used again instead of new ones.
//
// A request that cannot be carried out (see planRotation) is refused before any key is generated:
// its annotations are replaced by constants.AnnotationRotateRefused with the reason, so that it is
// not tried again on every reconcile of every shoot of the project. Key generation stops when ctx
// ends; the request then stays for the next reconcile.
func (m *Manager) rotateIfRequested(ctx context.Context, secret *corev1.Secret, generated map[string]*sshkey.KeyPair) (rotation, bool, error) {
	plan := m.planRotation(secret)
	if plan.refused != "" {
		delete(secret.Annotations, constants.AnnotationRotate)
		delete(secret.Annotations, constants.AnnotationRotatePrepare)
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, constants.AnnotationRotateRefused, plan.refused)
		return rotation{refused: plan.refused}, true, nil
	}
	result := rotation{skipped: plan.skipped}
	for _, name := range plan.rotate {
		pair, err := m.pendingPair(secret, name)
		if err != nil {
			return rotation{}, false, err
		}
		if pair == nil {
			if pair, err = m.generate(ctx, secret, generated, name, name); err != nil {
				return rotation{}, false, err
			}
		}
		setPair(secret, name, "", pair)
		delete(secret.Data, name+suffixNextIdentity)
		delete(secret.Data, name+suffixNextIdentityPub)
		result.rotated = append(result.rotated, name)
	}
	for _, name := range plan.prepare {
		pair, err := m.generate(ctx, secret, generated, name+suffixNext, name)
		if err != nil {
			return rotation{}, false, err
		}
		secret.Data[name+suffixNextIdentity] = pair.PrivateKey
		secret.Data[name+suffixNextIdentityPub] = []byte(pair.AuthorizedKey)
	}
	delete(secret.Annotations, constants.AnnotationRotate)
	delete(secret.Annotations, constants.AnnotationRotatePrepare)
	delete(secret.Annotations, constants.AnnotationRotateRefused)
	return result, true, nil
}

// rotationPlan is what a rotation request asks for, checked before any key is generated.
type rotationPlan struct {
	// rotate are the key pairs to replace, prepare those that get a new pending pair.
	rotate, prepare []string
	// skipped names the data keys the request covered that are no key pairs of the extension.
	skipped string
	// refused says why the request cannot be carried out; empty if it can.
	refused string
}

// planRotation reads the rotation annotations of the Secret and checks, before any key is
// generated, that the request can be carried out: every pending pair it would use is readable, it
// generates at most MaxRotatedKeys key pairs and the Secret stays within MaxDataKeys. A request
// that fails one of these would otherwise generate its keys on every reconcile and never store
// them.
func (m *Manager) planRotation(secret *corev1.Secret) rotationPlan {
	var (
		plan    rotationPlan
		ignored []string
		// after are the data keys the Secret would have, to check the count before generating.
		after      = map[string]bool{}
		generating int
	)
	for key := range secret.Data {
		after[key] = true
	}
	own := ownKeyPairs(secret)
	if value, ok := secret.Annotations[constants.AnnotationRotate]; ok {
		names, skipped := requestedKeyPairs(secret, value, own)
		ignored = append(ignored, skipped...)
		for _, name := range names {
			pair, err := m.pendingPair(secret, name)
			if err != nil {
				plan.refused = err.Error()
				return plan
			}
			if pair == nil {
				generating++
			}
			delete(after, name+suffixNextIdentity)
			delete(after, name+suffixNextIdentityPub)
		}
		plan.rotate = names
	}
	if value, ok := secret.Annotations[constants.AnnotationRotatePrepare]; ok {
		names, skipped := requestedKeyPairs(secret, value, own)
		ignored = append(ignored, skipped...)
		for _, name := range names {
			// A pending pair stays: the user may have registered it already.
			if after[name+suffixNextIdentity] {
				continue
			}
			generating++
			after[name+suffixNextIdentity], after[name+suffixNextIdentityPub] = true, true
			plan.prepare = append(plan.prepare, name)
		}
	}
	slices.Sort(ignored)
	plan.skipped = summarize(slices.Compact(ignored))

	maxRotated := cmp.Or(m.MaxRotatedKeys, constants.DefaultDeployKeysMaxRotatedKeys)
	maxDataKeys := cmp.Or(m.MaxDataKeys, constants.DefaultDeployKeysMaxDataKeys)
	switch {
	case generating > maxRotated:
		plan.refused = fmt.Sprintf("the request needs %d new key pairs, more than the %d one rotation may generate; name the key pairs in batches (%s=<name>,<name>)",
			generating, maxRotated, constants.AnnotationRotate)
	case len(after) > maxDataKeys:
		plan.refused = fmt.Sprintf("the pending key pairs would make %d data keys, more than the %d allowed; remove the key pairs no shoot uses", len(after), maxDataKeys)
	}
	return plan
}

// requestedKeyPairs returns the names of own key pairs a rotation annotation's value names, sorted
// and each once (the annotation is the project admin's), and what it names that is none.
func requestedKeyPairs(secret *corev1.Secret, value string, own map[string]bool) (names, ignored []string) {
	if strings.TrimSpace(value) == RotateAll {
		return slices.Sorted(maps.Keys(own)), foreignDataKeys(secret, own)
	}
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case own[name]:
			names = append(names, name)
		default:
			ignored = append(ignored, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), ignored
}

// generate returns a new key pair for the key pair name with the comment of its current public
// key, or the one an earlier attempt generated under id. It generates nothing once ctx ended.
func (m *Manager) generate(ctx context.Context, secret *corev1.Secret, generated map[string]*sshkey.KeyPair, id, name string) (*sshkey.KeyPair, error) {
	if pair := generated[id]; pair != nil {
		return pair, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("generating new deploy key %s: %w", name, err)
	}
	pair, err := sshkey.Generate(m.Algorithm, commentOf(secret.Data[name+suffixIdentityPub]))
	if err != nil {
		return nil, fmt.Errorf("generating new deploy key %s: %w", name, err)
	}
	generated[id] = pair
	return pair, nil
}

// pendingPair returns the pending key pair of name a preparation stored, nil if there is none. An
// unusable one is an error rather than replaced by a new key: the user registered the pending
// public key and expects exactly it to be used.
func (m *Manager) pendingPair(secret *corev1.Secret, name string) (*sshkey.KeyPair, error) {
	identity, ok := secret.Data[name+suffixNextIdentity]
	if !ok {
		return nil, nil
	}
	signer, err := sshkey.ParsePrivateKey(identity, m.privateKeyLimits())
	if err != nil {
		return nil, fmt.Errorf("deploy key Secret %s has no usable pending private key in %q (%w); remove the data keys %s%s* to rotate to a new key",
			client.ObjectKeyFromObject(secret), name+suffixNextIdentity, err, name, suffixNext)
	}
	authorizedKey := string(secret.Data[name+suffixNextIdentityPub])
	if stored, _, err := sshkey.ParseAuthorizedKey(authorizedKey); err != nil || !sshkey.SamePublicKey(stored, signer.PublicKey()) {
		authorizedKey = sshkey.AuthorizedKey(signer.PublicKey(), commentOf(secret.Data[name+suffixIdentityPub]))
	}
	return &sshkey.KeyPair{PrivateKey: identity, AuthorizedKey: authorizedKey}, nil
}

// ownKeyPairs returns the names of the key pairs of the extension in the Secret: a private key
// whose name KeyName makes from the repository recorded next to it, as Ensure stores them.
func ownKeyPairs(secret *corev1.Secret) map[string]bool {
	own := map[string]bool{}
	for key := range secret.Data {
		if name, ok := strings.CutSuffix(key, suffixRepository); ok && isOwnKeyPair(secret, name) {
			own[name] = true
		}
	}
	return own
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

// foreignDataKeys lists the data keys that belong neither to one of own key pairs nor are
// known_hosts, sorted.
func foreignDataKeys(secret *corev1.Secret, own map[string]bool) []string {
	var out []string
	for key := range secret.Data {
		if key == constants.SecretKeyKnownHosts {
			continue
		}
		name := key
		// The pending suffixes first: they end with the current ones.
		for _, suffix := range []string{suffixNextIdentityPub, suffixNextIdentity, suffixIdentityPub, suffixIdentity, suffixRepository} {
			if n, ok := strings.CutSuffix(key, suffix); ok {
				name = n
				break
			}
		}
		if !own[name] {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// summarize names the first few keys, each cut to a data key's length, and counts the rest: the
// list is the project admin's and goes into a status.
func summarize(keys []string) string {
	shown := make([]string, 0, maxReportedKeys)
	for _, key := range keys[:min(len(keys), maxReportedKeys)] {
		if len(key) > maxReportedKeyLength {
			key = strings.ToValidUTF8(key[:maxReportedKeyLength], "") + "..."
		}
		shown = append(shown, fmt.Sprintf("%q", key))
	}
	if len(keys) <= maxReportedKeys {
		return strings.Join(shown, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(shown, ", "), len(keys)-maxReportedKeys)
}

// checkDataKeys fails when the Secret has more data keys than the Manager handles.
func (m *Manager) checkDataKeys(secret *corev1.Secret) error {
	limit := cmp.Or(m.MaxDataKeys, constants.DefaultDeployKeysMaxDataKeys)
	if len(secret.Data) > limit {
		return &DataKeysError{Secret: client.ObjectKeyFromObject(secret), Count: len(secret.Data), Limit: limit}
	}
	return nil
}

// DataKeysError tells that the deploy key Secret has (or would get) more data keys than the
// Manager handles: the project's admins have to remove some, a retry does not help.
type DataKeysError struct {
	// Secret is the deploy key Secret.
	Secret client.ObjectKey
	// Count is the number of its data keys.
	Count int
	// Limit is the Manager's MaxDataKeys.
	Limit int
}

func (e *DataKeysError) Error() string {
	return fmt.Sprintf("deploy key Secret %s: data: %d keys, more than the %d allowed; remove the key pairs no shoot uses", e.Secret, e.Count, e.Limit)
}

// commentOf keeps the comment of a key pair's public key for its successor.
func commentOf(authorizedKey []byte) string {
	_, comment, err := sshkey.ParseAuthorizedKey(string(authorizedKey))
	if err != nil {
		return ""
	}
	return comment
}

// write applies mutate to the project's deploy key Secret and stores the result if mutate reports
// a change. A missing Secret is created when create is set (and mutate changes it) or left missing
// otherwise. A write that lost a race against another writer is retried on the fresh object, so
// mutate must be idempotent and look at the object it is given.
func (m *Manager) write(ctx context.Context, namespace string, create bool, mutate func(*corev1.Secret) (bool, error)) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: namespace, Name: constants.DeployKeysSecretName}
	for attempt := 1; ; attempt++ {
		secret := &corev1.Secret{}
		err := m.Client.Get(ctx, key, secret)
		exists := err == nil
		switch {
		case apierrors.IsNotFound(err):
			if !create {
				return nil, nil
			}
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: constants.DeployKeysSecretName}, Type: corev1.SecretTypeOpaque}
		case err != nil:
			return nil, fmt.Errorf("reading deploy key Secret %s: %w", key, err)
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		changed, err := mutate(secret)
		if err != nil {
			return nil, err
		}
		if !changed {
			return secret, nil
		}
		// The garden admission policy lets the extension write only Secrets that carry its label.
		metav1.SetMetaDataLabel(&secret.ObjectMeta, constants.LabelManagedBy, constants.ExtensionName)

		if exists {
			// The resourceVersion from our read makes the update fail if anybody changed the Secret
			// since, in particular a concurrent writer whose key must not be overwritten.
			err = m.Client.Update(ctx, secret)
		} else {
			err = m.Client.Create(ctx, secret)
		}
		if err == nil {
			return secret, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("writing deploy key Secret %s: %w", key, err)
		}
		if attempt >= MaxWriteAttempts {
			return nil, fmt.Errorf("writing deploy key Secret %s: gave up after %d conflicting writes: %w", key, attempt, err)
		}
	}
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
	if m.PrivateKeyLimits == (sshkey.PrivateKeyLimits{}) {
		return sshkey.DefaultPrivateKeyLimits()
	}
	return m.PrivateKeyLimits
}

// Fingerprint returns the fingerprint of the public key of an OpenSSH private key, which must be
// within limits.
func Fingerprint(privateKey []byte, limits sshkey.PrivateKeyLimits) (string, error) {
	signer, err := sshkey.ParsePrivateKey(privateKey, limits)
	if err != nil {
		return "", err
	}
	return sshkey.FingerprintOf(sshkey.AuthorizedKey(signer.PublicKey(), ""))
}

func (m *Manager) knownHosts(ctx context.Context, log logr.Logger, req Request, secret *corev1.Secret) ([]byte, bool, error) {
	if errs := sshkey.ValidateKnownHosts(string(m.ExtraKnownHosts), sshkey.KnownHostsLimits{}, field.NewPath("knownHosts")); len(errs) > 0 {
		return nil, false, fmt.Errorf("operator configured known_hosts: %w", errs.ToAggregate())
	}
	if len(bytes.TrimSpace(req.ConfiguredKnownHosts)) > 0 {
		// The configuration resolution has checked them already, with the same limits.
		if errs := sshkey.ValidateKnownHosts(string(req.ConfiguredKnownHosts), m.KnownHostsLimits, field.NewPath("source", "knownHosts")); len(errs) > 0 {
			return nil, false, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
		}
		return JoinKnownHosts(req.ConfiguredKnownHosts, m.ExtraKnownHosts), false, nil
	}
	if req.GitHost == "" {
		return JoinKnownHosts(m.ExtraKnownHosts), false, nil
	}

	key := client.ObjectKeyFromObject(secret)
	stored := secret.Data[constants.SecretKeyKnownHosts]
	// Project admins edit the Secret: its known_hosts is bounded before it is matched, and a bad
	// one is theirs to fix, not worth retrying.
	if errs := sshkey.ValidateKnownHosts(string(stored), m.KnownHostsLimits, knownHostsPath); len(errs) > 0 {
		return nil, false, secretProblems(key, errs, "")
	}
	// A stored entry wins over a new scan: the user may have checked or replaced it, and a
	// changed host key must fail loudly rather than be trusted on sight.
	if sshkey.KnownHostsContains(stored, req.GitHost) || sshkey.KnownHostsContains(m.ExtraKnownHosts, req.GitHost) {
		return JoinKnownHosts(stored, m.ExtraKnownHosts), false, nil
	}

	host, port := sshkey.SplitHostPort(req.GitHost)
	hostPort := net.JoinHostPort(host, port)
	scanned, err := m.scan(ctx, req.Dial, hostPort)
	if err != nil {
		if m.AllowInsecureHostKeys {
			log.Info("Cannot determine SSH host key, connecting without host key checking", "host", hostPort, "reason", err.Error())
			return JoinKnownHosts(stored, m.ExtraKnownHosts), true, nil
		}
		log.Info("Cannot determine SSH host key", "host", hostPort, "reason", err.Error())
		return nil, false, fmt.Errorf("cannot determine the SSH host key of %q: %s; set source.knownHosts or add it to Secret %s key %s",
			hostPort, ScanFailedMessage, key, constants.SecretKeyKnownHosts)
	}

	stored, err = m.storeKnownHosts(ctx, log, req.Namespace, hostPort, scanned)
	if err != nil {
		return nil, false, err
	}
	return JoinKnownHosts(stored, m.ExtraKnownHosts), false, nil
}

func (m *Manager) scan(ctx context.Context, dial sshkey.DialFunc, hostPort string) ([]byte, error) {
	scanner := m.Scanner
	if scanner == nil {
		scanner = func(ctx context.Context, hostPort string, timeout time.Duration) ([]byte, error) {
			return sshkey.ScanHostKeyWith(ctx, dial, hostPort, timeout)
		}
	}
	if m.ScanTimeout <= 0 {
		return nil, fmt.Errorf("no timeout for the host key scan configured")
	}
	scanned, err := scanner(ctx, hostPort, m.ScanTimeout)
	metrics.RecordHostKeyScan(err)
	if err != nil {
		return nil, err
	}
	if errs := sshkey.ValidateKnownHosts(string(scanned), sshkey.KnownHostsLimits{}, field.NewPath("scan")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if !sshkey.KnownHostsContains(scanned, hostPort) {
		return nil, errors.New("the scan returned no key for this host")
	}
	return scanned, nil
}

// storeKnownHosts appends scanned host keys to the Secret, so later reconciles trust the key
// seen first and users can inspect it. If a concurrent reconcile stored a key for the host
// first, that one is used.
func (m *Manager) storeKnownHosts(ctx context.Context, log logr.Logger, namespace, hostPort string, scanned []byte) ([]byte, error) {
	stored := false
	secret, err := m.write(ctx, namespace, true, func(secret *corev1.Secret) (bool, error) {
		current := secret.Data[constants.SecretKeyKnownHosts]
		if sshkey.KnownHostsContains(current, hostPort) {
			stored = false
			return false, nil
		}
		joined := JoinKnownHosts(current, scanned)
		if errs := sshkey.ValidateKnownHosts(string(joined), m.KnownHostsLimits, knownHostsPath); len(errs) > 0 {
			return false, secretProblems(client.ObjectKeyFromObject(secret), errs,
				fmt.Sprintf("with the scanned host keys of %s; remove entries no longer needed or set source.knownHosts", hostPort))
		}
		secret.Data[constants.SecretKeyKnownHosts] = joined
		if err := m.checkDataKeys(secret); err != nil {
			return false, err
		}
		stored = true
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("storing SSH host keys: %w", err)
	}
	if stored {
		log.Info("Stored scanned SSH host keys", "host", hostPort)
	}
	return secret.Data[constants.SecretKeyKnownHosts], nil
}

// knownHostsPath is the known_hosts of the deploy key Secret as a project admin edits it.
var knownHostsPath = field.NewPath("data").Key(constants.SecretKeyKnownHosts)

// secretProblems reports what is wrong with the known_hosts of the deploy key Secret as a
// configuration error, which names the Secret, the data key and the line; doing, if set, says
// what the extension was doing.
func secretProblems(key client.ObjectKey, errs field.ErrorList, doing string) error {
	origin := "Secret " + key.String()
	problems := make([]string, 0, len(errs))
	for _, err := range errs {
		problem := origin + ": " + err.Error()
		if doing != "" {
			problem += " (" + doing + ")"
		}
		problems = append(problems, problem)
	}
	return configerror.New(problems...)
}

// JoinKnownHosts concatenates known_hosts data, making sure every part ends with a newline so the
// last line of one part does not run into the first of the next.
func JoinKnownHosts(parts ...[]byte) []byte {
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
