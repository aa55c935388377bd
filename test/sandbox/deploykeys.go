// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// DeployPublicKeys returns the public keys of the deploy key Secret in the project namespace, one
// authorized_keys line each, sorted; none while the extension has not generated any. The demo
// and the benchmark register them at the git server as a developer registers them at the git host.
func (s *Sandbox) DeployPublicKeys(ctx context.Context, namespace string) ([]string, error) {
	secret := &corev1.Secret{}
	if err := s.Garden.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.DeployKeysSecretName}, secret); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("failed reading deploy keys of %s: %w", namespace, err)
	}
	var keys []string
	for key, value := range secret.Data {
		if strings.HasSuffix(key, "."+constants.SecretKeyIdentityPub) {
			keys = append(keys, strings.TrimSpace(string(value)))
		}
	}
	sort.Strings(keys)
	return keys, nil
}
