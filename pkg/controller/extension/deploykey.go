package extension

import (
	"context"
	"errors"
	"fmt"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// keyScope maps the operator's setting to the deploy key scope; "project", the name of earlier
// releases, now means one key per repository.
func keyScope(cfg config.ControllerConfiguration) deploykey.Scope {
	if cfg.SSHKey.Scope == config.KeyScopeShoot {
		return deploykey.ScopeShoot
	}
	return deploykey.ScopeRepository
}

func sshkeyAlgorithm(cfg config.ControllerConfiguration) sshkey.Algorithm {
	if cfg.SSHKey.Algorithm == config.KeyAlgorithmRSA4096 {
		return sshkey.AlgorithmRSA4096
	}
	return sshkey.AlgorithmED25519
}

// deployKey returns the generated deploy key of the shoot's repository and records where users
// find it in the status.
func (a *actuator) deployKey(ctx context.Context, log logr.Logger, seedNamespace string, cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, url *helper.GitURL, previous, status *fluxv1alpha1.FluxStatus) (*deploykey.DeployKey, error) {
	if url.Scheme != helper.SchemeSSH {
		return nil, configurationError(fmt.Errorf("source.type: private repositories over %s need credentials in source.secretResourceName; generated deploy keys only work with ssh URLs", url.Scheme))
	}
	shoot := cluster.Shoot
	scope := keyScope(a.config)
	repository := url.Repository()
	comment := "shoot-flux " + shoot.Namespace + " " + repository
	if scope == deploykey.ScopeShoot {
		comment = "shoot-flux " + shoot.Namespace + "/" + shoot.Name + " " + repository
	}
	policy, err := hostpolicy.New(a.config.HostPolicy.AllowedNetworks, a.config.HostPolicy.AllowedPorts, seedNetworks(log, cluster))
	if err != nil {
		return nil, fmt.Errorf("host policy: %w", err)
	}
	inUse, migrateErr := a.keyInUse(ctx, seedNamespace, shoot.Namespace, previous, url)
	key, err := a.keys.Ensure(ctx, log, deploykey.Request{
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
			return nil, configurationError(fmt.Errorf("failed ensuring deploy key: %w", err))
		}
		return nil, fmt.Errorf("failed ensuring deploy key: %w", err)
	}
	if migrateErr != nil && key.Created && !key.Adopted {
		log.Info("Generated a new deploy key: the one this shoot used cannot be read", "reason", migrateErr.Error())
		status.Warnings = append(status.Warnings, fmt.Sprintf("The deploy key of an earlier release (%s) could not be moved into Secret %s, so a new key was generated: register it at the repository.", previous.DeployKeySecret, constants.DeployKeysSecretName))
	}

	if key.RotationSkipped != "" {
		// Only the reconcile that carried the rotation out reports it, in its own shoot's status:
		// the request is gone from the Secret then.
		status.Warnings = append(status.Warnings, fmt.Sprintf("The rotation requested on Secret %s/%s left data keys alone that are no key pairs of the extension: %s.", shoot.Namespace, key.SecretName, key.RotationSkipped))
	}

	if key.RotationRefused != "" {
		status.Warnings = append(status.Warnings, fmt.Sprintf("The rotation requested on Secret %s/%s was refused, no key was changed: %s.", shoot.Namespace, key.SecretName, key.RotationRefused))
	}

	status.PublicKey = key.AuthorizedKey
	status.Fingerprint = key.Fingerprint
	status.NextPublicKey = key.NextAuthorizedKey
	status.NextFingerprint = key.NextFingerprint
	status.DeployKeySecret = shoot.Namespace + "/" + key.SecretName
	status.DeployKey = key.KeyName
	return key, nil
}

// keyInUse returns the private key the shoot was deployed with by a release that kept deploy keys
// in Secrets named shoot-flux-deploy-key[-<shoot>], if that was for the same repository; the key is
// registered at the git host, so it must stay the repository's key. It reads the key the seed
// delivers to the shoot, or else the project's Secret of that release. nil without error means
// there is nothing to migrate.
func (a *actuator) keyInUse(ctx context.Context, seedNamespace, projectNamespace string, previous *fluxv1alpha1.FluxStatus, url *helper.GitURL) ([]byte, error) {
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

	delivered, err := bootstrap.DeliveredIdentity(ctx, a.client, seedNamespace)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the delivered deploy key: %w", err)
	}
	if matchesFingerprint(delivered, previous.Fingerprint) {
		return delivered, nil
	}
	if name != constants.LegacyDeployKeySecretName {
		return nil, fmt.Errorf("the shoot no longer has the key with fingerprint %s", previous.Fingerprint)
	}
	legacy := &corev1.Secret{}
	if err := a.garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: name}, legacy); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", projectNamespace, name, err)
	}
	if identity := legacy.Data[constants.SecretKeyIdentity]; matchesFingerprint(identity, previous.Fingerprint) {
		return identity, nil
	}
	return nil, fmt.Errorf("neither the shoot nor Secret %s/%s has the key with fingerprint %s", projectNamespace, name, previous.Fingerprint)
}

func matchesFingerprint(privateKey []byte, fingerprint string) bool {
	if len(privateKey) == 0 {
		return false
	}
	got, err := deploykey.Fingerprint(privateKey)
	return err == nil && got == fingerprint
}
