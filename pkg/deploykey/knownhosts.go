// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

func (m *Manager) knownHosts(ctx context.Context, log logr.Logger, req Request, secret *corev1.Secret) ([]byte, bool, error) {
	if errs := sshkey.ValidateKnownHosts(string(m.ExtraKnownHosts), sshkey.KnownHostsLimits{}, field.NewPath("knownHosts")); len(errs) > 0 {
		return nil, false, fmt.Errorf("operator configured known_hosts: %w", errs.ToAggregate())
	}
	if len(bytes.TrimSpace(req.ConfiguredKnownHosts)) > 0 {
		// The configuration resolution has checked them already, with the same limits.
		if errs := sshkey.ValidateKnownHosts(string(req.ConfiguredKnownHosts), m.KnownHostsLimits, field.NewPath("source", "knownHosts")); len(errs) > 0 {
			return nil, false, fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
		}
		return sshkey.JoinKnownHosts(req.ConfiguredKnownHosts, m.ExtraKnownHosts), false, nil
	}
	if req.GitHost == "" {
		return sshkey.JoinKnownHosts(m.ExtraKnownHosts), false, nil
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
		return sshkey.JoinKnownHosts(stored, m.ExtraKnownHosts), false, nil
	}

	host, port := sshkey.SplitHostPort(req.GitHost)
	hostPort := net.JoinHostPort(host, port)
	scanned, err := m.scan(ctx, req.Dial, hostPort)
	if err != nil {
		if m.AllowInsecureHostKeys {
			log.Info("Cannot determine SSH host key, connecting without host key checking", "host", hostPort, "reason", err.Error())
			return sshkey.JoinKnownHosts(stored, m.ExtraKnownHosts), true, nil
		}
		log.Info("Cannot determine SSH host key", "host", hostPort, "reason", err.Error())
		return nil, false, fmt.Errorf("cannot determine the SSH host key of %q: %s; set source.knownHosts or add it to Secret %s key %s",
			hostPort, ScanFailedMessage, key, constants.SecretKeyKnownHosts)
	}

	stored, err = m.storeKnownHosts(ctx, log, req.Namespace, hostPort, scanned)
	if err != nil {
		return nil, false, err
	}
	return sshkey.JoinKnownHosts(stored, m.ExtraKnownHosts), false, nil
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
		joined := sshkey.JoinKnownHosts(current, scanned)
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
