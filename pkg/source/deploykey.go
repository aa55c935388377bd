// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package source

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// KeyScope maps the operator's setting to the deploy key scope; "project", the name of earlier
// releases, now means one key per repository.
func KeyScope(cfg config.ControllerConfiguration) deploykey.Scope {
	if cfg.SSHKey.Scope == config.KeyScopeShoot {
		return deploykey.ScopeShoot
	}
	return deploykey.ScopeRepository
}

// KeyAlgorithm maps the operator's setting to the algorithm of generated deploy keys.
func KeyAlgorithm(cfg config.ControllerConfiguration) sshkey.Algorithm {
	if cfg.SSHKey.Algorithm == config.KeyAlgorithmRSA4096 {
		return sshkey.AlgorithmRSA4096
	}
	return sshkey.AlgorithmED25519
}

// deployKey returns the generated deploy key of the shoot's repository; in gets the warnings.
func (r *Resolver) deployKey(ctx context.Context, log logr.Logger, req Request, url *helper.GitURL, in *Result) (*deploykey.DeployKey, error) {
	cluster, cfg, previous := req.Cluster, req.Config, req.Previous
	if url.Scheme != helper.SchemeSSH {
		return nil, configerror.Wrap(fmt.Errorf("source.type: private repositories over %s need credentials in source.secretResourceName; generated deploy keys only work with ssh URLs", url.Scheme))
	}
	shoot := cluster.Shoot
	scope := KeyScope(r.Config)
	repository := url.Repository()
	comment := "shoot-flux " + shoot.Namespace + " " + repository
	if scope == deploykey.ScopeShoot {
		comment = "shoot-flux " + shoot.Namespace + "/" + shoot.Name + " " + repository
	}
	policy, err := hostpolicy.New(r.Config.HostPolicy.AllowedNetworks, r.Config.HostPolicy.AllowedPorts, seedNetworks(log, cluster))
	if err != nil {
		return nil, fmt.Errorf("host policy: %w", err)
	}
	inUse, migrateErr := r.keyInUse(ctx, req.SeedNamespace, shoot.Namespace, previous, url)
	key, err := r.Keys.Ensure(ctx, log, deploykey.Request{
		Namespace:            shoot.Namespace,
		KeyName:              deploykey.KeyName(scope, shoot.Name, repository),
		Repository:           repository,
		Comment:              comment,
		GitHost:              url.HostPort(),
		ConfiguredKnownHosts: []byte(cfg.Source.KnownHosts),
		Dial:                 policy.DialContext,
		Adopt:                inUse,
	})
	if err != nil {
		if _, ok := errors.AsType[*deploykey.DataKeysError](err); ok {
			return nil, configerror.Wrap(fmt.Errorf("failed ensuring deploy key: %w", err))
		}
		return nil, fmt.Errorf("failed ensuring deploy key: %w", err)
	}
	if migrateErr != nil && key.Created && !key.Adopted {
		log.Info("Generated a new deploy key: the one this shoot used cannot be read", "reason", migrateErr.Error())
		in.Warnings = append(in.Warnings, fmt.Sprintf("The deploy key of an earlier release (%s) could not be moved into Secret %s, so a new key was generated: register it at the repository.", previous.DeployKeySecret, constants.DeployKeysSecretName))
	}

	if key.RotationSkipped != "" {
		// Only the reconcile that carried the rotation out reports it, in its own shoot's status:
		// the request is gone from the Secret then.
		in.Warnings = append(in.Warnings, fmt.Sprintf("The rotation requested on Secret %s/%s left data keys alone that are no key pairs of the extension: %s.", shoot.Namespace, key.SecretName, key.RotationSkipped))
	}

	if key.RotationRefused != "" {
		in.Warnings = append(in.Warnings, fmt.Sprintf("The rotation requested on Secret %s/%s was refused, no key was changed: %s.", shoot.Namespace, key.SecretName, key.RotationRefused))
	}

	in.DeployKey = key
	in.DeployKeySecret = shoot.Namespace + "/" + key.SecretName
	return key, nil
}

// keyInUse returns the private key the shoot was deployed with by a release that kept deploy keys
// in Secrets named shoot-flux-deploy-key[-<shoot>], if that was for the same repository; the key is
// registered at the git host, so it must stay the repository's key. It reads the key the seed
// delivers to the shoot, or else the project's Secret of that release. nil without error means
// there is nothing to migrate.
func (r *Resolver) keyInUse(ctx context.Context, seedNamespace, projectNamespace string, previous *fluxv1alpha1.FluxStatus, url *helper.GitURL) ([]byte, error) {
	if previous == nil || previous.Fingerprint == "" {
		return nil, nil
	}
	_, name, _ := strings.Cut(previous.DeployKeySecret, "/")
	if name != constants.LegacyDeployKeySecretName && !strings.HasPrefix(name, constants.LegacyDeployKeySecretName+"-") {
		return nil, nil
	}
	// A repository this release cannot parse is not the one the shoot uses now.
	if previousURL, err := helper.ParseGitURL(previous.Repository); err != nil || previousURL.Repository() != url.Repository() {
		return nil, nil //nolint:nilerr // nothing to migrate
	}

	delivered, err := bootstrap.DeliveredIdentity(ctx, r.Seed, seedNamespace)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the delivered deploy key: %w", err)
	}
	if r.matchesFingerprint(delivered, previous.Fingerprint) {
		return delivered, nil
	}
	if name != constants.LegacyDeployKeySecretName {
		return nil, fmt.Errorf("the shoot no longer has the key with fingerprint %s", previous.Fingerprint)
	}
	legacy := &corev1.Secret{}
	if err := r.Garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: name}, legacy); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", projectNamespace, name, err)
	}
	if identity := legacy.Data[constants.SecretKeyIdentity]; r.matchesFingerprint(identity, previous.Fingerprint) {
		return identity, nil
	}
	return nil, fmt.Errorf("neither the shoot nor Secret %s/%s has the key with fingerprint %s", projectNamespace, name, previous.Fingerprint)
}

func (r *Resolver) matchesFingerprint(privateKey []byte, fingerprint string) bool {
	if len(privateKey) == 0 {
		return false
	}
	// The legacy Secret is the project's to write.
	got, err := sshkey.Fingerprint(privateKey, r.PrivateKeyLimits)
	return err == nil && got == fingerprint
}

// seedNetworks are the seed's pod, service and node networks and the networks the seed blocks for
// shoot control planes, which a host key scan must never reach.
func seedNetworks(log logr.Logger, cluster *extensionscontroller.Cluster) []netip.Prefix {
	if cluster.Seed == nil {
		return nil
	}
	n := cluster.Seed.Spec.Networks
	cidrs := []*string{&n.Pods, &n.Services, n.Nodes}
	for i := range n.BlockCIDRs {
		cidrs = append(cidrs, &n.BlockCIDRs[i])
	}
	var out []netip.Prefix
	for _, cidr := range cidrs {
		if cidr == nil || *cidr == "" {
			continue
		}
		// A seed may list several networks of a kind, separated by commas (dual-stack).
		for _, c := range strings.Split(*cidr, ",") {
			prefix, err := netip.ParsePrefix(strings.TrimSpace(c))
			if err != nil {
				log.Info("Ignoring invalid seed network", "cidr", c)
				continue
			}
			out = append(out, prefix.Masked())
		}
	}
	return out
}
