// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package deploykey

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var (
	// MaxWriteAttempts bounds how often a write that lost an optimistic-locking race against a
	// concurrent writer is retried on the fresh object before Ensure gives up for this reconcile.
	MaxWriteAttempts = 5
)

func setPair(secret *corev1.Secret, keyName, repository string, pair *sshkey.KeyPair) {
	secret.Data[keyName+suffixIdentity] = pair.PrivateKey
	secret.Data[keyName+suffixIdentityPub] = []byte(pair.AuthorizedKey)
	if repository != "" {
		secret.Data[keyName+suffixRepository] = []byte(repository)
	}
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
