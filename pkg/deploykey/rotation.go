// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// RotateAll is the value of constants.AnnotationRotate that asks for new key pairs for every key
// in the Secret; any other value is a comma-separated list of key names.
const RotateAll = "true"

// A rotation warning names at most maxReportedKeys data keys, the rest are counted, and cuts
// each (a name in the annotation may be longer than a data key) to maxReportedKeyLength bytes.
const (
	maxReportedKeys      = 5
	maxReportedKeyLength = 253
)

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

// rotateIfRequested carries out the rotation annotations for all own key pairs at once and removes
// them; it returns what it did and whether it changed the Secret. generated holds the pairs of
// earlier attempts of the same Ensure. A request planRotation refuses is replaced by
// constants.AnnotationRotateRefused before any key is generated (see
// docs/development/design-notes.md, "Deploy key rotation").
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

// commentOf keeps the comment of a key pair's public key for its successor.
func commentOf(authorizedKey []byte) string {
	_, comment, err := sshkey.ParseAuthorizedKey(string(authorizedKey))
	if err != nil {
		return ""
	}
	return comment
}
