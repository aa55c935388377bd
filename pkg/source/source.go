// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package source resolves the bootstrap source of a shoot, git or OCI, into the values of the
// bootstrap ManagedResource: its URL, credentials (a user's Secret or a generated deploy key) and
// the Secrets the shoot's resources reference, with the warnings for the shoot owner.
package source

import (
	"context"
	"fmt"
	"slices"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/go-logr/logr"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Resolver resolves the sources of the shoots of a seed.
type Resolver struct {
	// Seed reads the Secrets gardenlet copies into the shoots' seed namespaces.
	Seed client.Client
	// Garden reads the project Secrets of earlier releases' deploy keys.
	Garden client.Client
	Config config.ControllerConfiguration
	// KnownHostsLimits and PrivateKeyLimits bound what tenants write into their Secrets.
	KnownHostsLimits sshkey.KnownHostsLimits
	PrivateKeyLimits sshkey.PrivateKeyLimits
	// Keys generates and stores the deploy keys.
	Keys *deploykey.Manager
}

// Request is the source of one shoot.
type Request struct {
	SeedNamespace string
	Cluster       *extensionscontroller.Cluster
	Config        *fluxapi.FluxConfig
	// Previous is the providerStatus of the last reconcile, nil if there is none.
	Previous *fluxv1alpha1.FluxStatus
}

// Result is the resolved source.
type Result struct {
	// Values is nil when nothing is to be bootstrapped (no source, or mode none).
	Values *bootstrap.Values
	// InsecureHostKeys is set when kluctl must skip the SSH host key check.
	InsecureHostKeys bool
	// Repository and Ref tell the shoot owner what the bootstrap deploys; Message why nothing is.
	Repository, Ref, Message string
	// DeployKey is the generated deploy key, nil for other credentials; DeployKeySecret is
	// <namespace>/<name> of its Secret in the garden.
	DeployKey       *deploykey.DeployKey
	DeployKeySecret string
	Warnings        []string
}

// Resolve reads what the bootstrap ManagedResource needs beyond the configuration: the
// repository's URL, the credentials (a user's Secret or a generated deploy key) and the Secrets the
// shoot resources reference. Errors about the user's input are configuration errors.
func (r *Resolver) Resolve(ctx context.Context, log logr.Logger, req Request) (*Result, error) {
	cfg := req.Config
	if cfg.Source == nil {
		return &Result{Message: "No source configured: only the controllers are deployed."}, nil
	}
	if cfg.Source.OCI != nil {
		return r.resolveOCI(ctx, req)
	}

	url, err := helper.ParseGitURL(cfg.Source.URL)
	if err != nil {
		return nil, configerror.Wrap(fmt.Errorf("source.url: %w", err))
	}
	in := &Result{Repository: cfg.Source.URL, Ref: refString(cfg.Source.Ref)}
	if cfg.Bootstrap.Mode == fluxapi.BootstrapModeNone {
		in.Message = bootstrapModeNoneMessage
		return in, nil
	}

	refs := &resourceReader{seed: r.Seed, seedNamespace: req.SeedNamespace, shoot: req.Cluster.Shoot}
	in.Values = r.newValues(req.Cluster, cfg, url.String())
	values := in.Values

	switch {
	case cfg.Source.SecretResourceName != "":
		data, err := refs.secret(ctx, cfg.Source.SecretResourceName, "source.secretResourceName")
		if err != nil {
			return nil, err
		}
		creds, insecure, err := r.userCredentials(cfg, url, data, refs.secretName(cfg.Source.SecretResourceName))
		if err != nil {
			return nil, err
		}
		values.Credentials, in.InsecureHostKeys = creds, insecure

	case cfg.Source.Type == fluxapi.RepositoryTypePrivate:
		key, err := r.deployKey(ctx, log, req, url, in)
		if err != nil {
			return nil, err
		}
		data := map[string][]byte{constants.SecretKeyIdentity: key.PrivateKey}
		if len(key.KnownHosts) > 0 {
			data[constants.SecretKeyKnownHosts] = key.KnownHosts
		}
		values.Credentials = &bootstrap.Credentials{Host: url.CredentialsHost(), Data: data}
		in.InsecureHostKeys = key.InsecureHostKey
	}

	if in.InsecureHostKeys {
		if cfg.Bootstrap.Mode == fluxapi.BootstrapModeFlux {
			return nil, configerror.Wrap(fmt.Errorf("source: the SSH host key of %s is unknown and Flux cannot skip host key verification; set source.knownHosts", url.Host))
		}
		in.Warnings = append(in.Warnings, fmt.Sprintf("SSH host key of %s is not verified (operator allows insecure host keys); set source.knownHosts", url.Host))
	}

	if err := secretResources(ctx, refs, r.Config.Limits, cfg, values); err != nil {
		return nil, err
	}
	return in, nil
}

const bootstrapModeNoneMessage = "Bootstrap mode none: only the controllers are deployed."

func (r *Resolver) newValues(cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, url string) *bootstrap.Values {
	values := &bootstrap.Values{Config: cfg, URL: url}
	if cfg.Bootstrap.ShootInfo {
		values.Shoot = bootstrap.ShootInfoFromCluster(cluster)
		values.Shoot.GardenClusterIdentity = r.Config.GardenClusterIdentity
	}
	return values
}

// resolveOCI resolves an OCI artifact source. The extension never connects to the registry: only
// the shoot's controllers pull, so there is no host key scan and no host policy.
func (r *Resolver) resolveOCI(ctx context.Context, req Request) (*Result, error) {
	cfg := req.Config
	oci := cfg.Source.OCI
	url, err := helper.ParseOCIURL(oci.URL)
	if err != nil {
		return nil, configerror.Wrap(fmt.Errorf("source.oci.url: %w", err))
	}
	in := &Result{Repository: oci.URL, Ref: ociRefString(oci.Ref)}
	if cfg.Bootstrap.Mode == fluxapi.BootstrapModeNone {
		in.Message = bootstrapModeNoneMessage
		return in, nil
	}

	refs := &resourceReader{seed: r.Seed, seedNamespace: req.SeedNamespace, shoot: req.Cluster.Shoot}
	values := r.newValues(req.Cluster, cfg, url.String())
	if oci.SecretResourceName != "" {
		const field = "source.oci.secretResourceName"
		data, err := refs.secret(ctx, oci.SecretResourceName, field)
		if err != nil {
			return nil, err
		}
		if values.Credentials, err = ociCredentials(url, data, field); err != nil {
			return nil, err
		}
	}
	if err := secretResources(ctx, refs, r.Config.Limits, cfg, values); err != nil {
		return nil, err
	}
	in.Values = values
	return in, nil
}

// ociCredentials takes the registry credentials of a user's Secret: username and password, or a
// bearer token, the keys kluctl reads; other keys are not delivered.
func ociCredentials(url *helper.OCIURL, data map[string][]byte, field string) (*bootstrap.Credentials, error) {
	creds := &bootstrap.Credentials{Host: url.Registry, Repository: url.Repository, Data: map[string][]byte{}}
	// An image pull Secret, as stackit's extension delivered it: only the registry's entry is kept.
	if dockerConfig, ok := data[corev1.DockerConfigJsonKey]; ok && len(data) == 1 {
		parsed, err := bootstrap.RegistryCredentials(dockerConfig, url.Registry)
		if err != nil {
			return nil, configerror.Wrap(fmt.Errorf("%s: Secret key %q %w", field, corev1.DockerConfigJsonKey, err))
		}
		data = parsed
	}
	username, hasUser := data[constants.SecretKeyUsername]
	password, hasPassword := data[constants.SecretKeyPassword]
	token, hasToken := data[constants.SecretKeyToken]
	switch {
	case hasToken && (hasUser || hasPassword):
		return nil, configerror.Wrap(fmt.Errorf("%s: Secret must contain either %q and %q or %q, not both", field, constants.SecretKeyUsername, constants.SecretKeyPassword, constants.SecretKeyToken))
	case hasToken && len(token) > 0:
		creds.Data[constants.SecretKeyToken] = token
	case hasUser && hasPassword && len(username) > 0:
		creds.Data[constants.SecretKeyUsername] = username
		creds.Data[constants.SecretKeyPassword] = password
	default:
		return nil, configerror.Wrap(fmt.Errorf("%s: Secret must contain non-empty %q and %q, or %q", field, constants.SecretKeyUsername, constants.SecretKeyPassword, constants.SecretKeyToken))
	}
	return creds, nil
}

// secretResources reads the Shoot resources every source kind may deliver besides its credentials.
// All Secrets the bootstrap ManagedResource carries count against one limit, the credentials
// first: every change writes them anew into the seed.
func secretResources(ctx context.Context, refs *resourceReader, limits config.Limits, cfg *fluxapi.FluxConfig, values *bootstrap.Values) error {
	total := 0
	if values.Credentials != nil {
		total = fluxconfig.SecretDataSize(values.Credentials.Data)
		path := field.NewPath("source", "secretResourceName")
		if cfg.Source.OCI != nil {
			path = field.NewPath("source", "oci", "secretResourceName")
		}
		if err := fluxconfig.SecretsSizeError(limits, path, total); err != nil {
			return err
		}
	}
	if d, path := decryption(cfg); d != nil {
		data, err := refs.secret(ctx, d.SecretResourceName, path.String())
		if err != nil {
			return err
		}
		total += fluxconfig.SecretDataSize(data)
		if err := fluxconfig.SecretsSizeError(limits, path, total); err != nil {
			return err
		}
		values.Decryption = data
	}

	for i, s := range cfg.AdditionalSecretResources {
		path := field.NewPath("additionalSecretResources").Index(i).Child("name")
		data, err := refs.secret(ctx, s.Name, path.String())
		if err != nil {
			return err
		}
		// Only here are the sizes known: the admission cannot read the Secrets.
		total += fluxconfig.SecretDataSize(data)
		if err := fluxconfig.SecretsSizeError(limits, path, total); err != nil {
			return err
		}
		values.AdditionalSecrets = append(values.AdditionalSecrets, bootstrap.Secret{Name: s.TargetName, Namespace: s.Namespace, Data: data})
	}
	return nil
}

// userCredentials turns a user's credentials Secret (secretName, as the user knows it) into the
// shoot's git credentials. SSH credentials need known_hosts from the Secret, the configuration or
// the operator.
func (r *Resolver) userCredentials(cfg *fluxapi.FluxConfig, url *helper.GitURL, data map[string][]byte, secretName string) (*bootstrap.Credentials, bool, error) {
	creds := &bootstrap.Credentials{Host: url.CredentialsHost(), Data: map[string][]byte{}}
	fieldName := "source.secretResourceName"

	if identity, ok := data[constants.SecretKeyIdentity]; ok {
		if url.Scheme != helper.SchemeSSH {
			return nil, false, configerror.Wrap(fmt.Errorf("%s: Secret key %q needs an ssh URL, got %s", fieldName, constants.SecretKeyIdentity, url.Scheme))
		}
		creds.Data[constants.SecretKeyIdentity] = identity
		knownHosts := sshkey.JoinKnownHosts(data[constants.SecretKeyKnownHosts], []byte(cfg.Source.KnownHosts), []byte(r.Config.KnownHosts))
		if len(knownHosts) > 0 {
			creds.Data[constants.SecretKeyKnownHosts] = knownHosts
		}
		// Sizes come before parsing, which costs up to the square of a key's size: the key's own
		// limits first (their error names the Secret and its key), then what the bootstrap
		// delivers (secretResources counts it again with the other Secrets).
		if err := sshkey.CheckPrivateKey(identity, r.PrivateKeyLimits); err != nil {
			return nil, false, configerror.Wrap(fmt.Errorf("%s: Secret %s key %q: %w", fieldName, secretName, constants.SecretKeyIdentity, err))
		}
		if err := fluxconfig.SecretsSizeError(r.Config.Limits, field.NewPath("source", "secretResourceName"), fluxconfig.SecretDataSize(creds.Data)); err != nil {
			return nil, false, err
		}
		if _, err := sshkey.ParsePrivateKey(identity, r.PrivateKeyLimits); err != nil {
			return nil, false, configerror.Wrap(fmt.Errorf("%s: Secret key %q is not a valid unencrypted SSH private key", fieldName, constants.SecretKeyIdentity))
		}
		// The shoot's Flux or kluctl reads these; like the deploy key Secret, the tenant's data is
		// bounded and must parse, so that a mistake shows here and not in the shoot.
		userKnownHosts := string(data[constants.SecretKeyKnownHosts])
		if errs := sshkey.ValidateKnownHosts(userKnownHosts, r.KnownHostsLimits, field.NewPath("data").Key(constants.SecretKeyKnownHosts)); len(errs) > 0 {
			return nil, false, configerror.Wrap(fmt.Errorf("%s: Secret %w", fieldName, errs.ToAggregate()))
		}
		if len(knownHosts) == 0 {
			if !r.Config.AllowInsecureHostKeys {
				return nil, false, configerror.Wrap(fmt.Errorf("%s: no known_hosts for %s: add key %q to the Secret or set source.knownHosts", fieldName, url.Host, constants.SecretKeyKnownHosts))
			}
			return creds, true, nil
		}
		return creds, false, nil
	}

	username, hasUser := data[constants.SecretKeyUsername]
	password, hasPassword := data[constants.SecretKeyPassword]
	if !hasUser || !hasPassword {
		return nil, false, configerror.Wrap(fmt.Errorf("%s: Secret must contain %q (and %q) or %q and %q", fieldName, constants.SecretKeyIdentity, constants.SecretKeyKnownHosts, constants.SecretKeyUsername, constants.SecretKeyPassword))
	}
	if url.Scheme != helper.SchemeHTTPS {
		return nil, false, configerror.Wrap(fmt.Errorf("%s: username/password credentials need an https URL, got %s", fieldName, url.Scheme))
	}
	creds.Data[constants.SecretKeyUsername] = username
	creds.Data[constants.SecretKeyPassword] = password
	return creds, false, nil
}

func ociRefString(r fluxapi.OCIRef) string {
	switch {
	case r.Digest != "":
		return "digest:" + r.Digest
	case r.SemVer != "":
		return "semver:" + r.SemVer
	}
	return "tag:" + r.Tag
}

func refString(r fluxapi.GitRef) string {
	switch {
	case r.Commit != "":
		return "commit:" + r.Commit
	case r.Tag != "":
		return "tag:" + r.Tag
	case r.SemVer != "":
		return "semver:" + r.SemVer
	case r.Name != "":
		return "name:" + r.Name
	default:
		return "branch:" + r.Branch
	}
}

// resourceReader reads Shoot spec.resources, which gardenlet copies into the seed namespace.
type resourceReader struct {
	seed          client.Client
	seedNamespace string
	shoot         *gardencorev1beta1.Shoot
}

// secretName is the namespace and name of the Secret a Shoot resource references, as the shoot
// owner created it in the project namespace; name itself if there is no such resource.
func (rr *resourceReader) secretName(name string) string {
	idx := slices.IndexFunc(rr.shoot.Spec.Resources, func(res gardencorev1beta1.NamedResourceReference) bool { return res.Name == name })
	if idx < 0 {
		return name
	}
	return rr.shoot.Namespace + "/" + rr.shoot.Spec.Resources[idx].ResourceRef.Name
}

func (rr *resourceReader) secret(ctx context.Context, name, field string) (map[string][]byte, error) {
	idx := slices.IndexFunc(rr.shoot.Spec.Resources, func(res gardencorev1beta1.NamedResourceReference) bool { return res.Name == name })
	if idx < 0 {
		return nil, configerror.Wrap(fmt.Errorf("%s: Shoot %s/%s has no resource %q in spec.resources", field, rr.shoot.Namespace, rr.shoot.Name, name))
	}
	ref := rr.shoot.Spec.Resources[idx].ResourceRef
	if ref.Kind != "Secret" || ref.APIVersion != "v1" {
		return nil, configerror.Wrap(fmt.Errorf("%s: resource %q must reference a v1 Secret, got %s %s", field, name, ref.APIVersion, ref.Kind))
	}
	secret := &corev1.Secret{}
	if err := extensionscontroller.GetObjectByReference(ctx, rr.seed, &autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion}, rr.seedNamespace, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, configerror.Wrap(fmt.Errorf("%s: Secret %q referenced by resource %q was not found (gardenlet copies it as %s%s)", field, ref.Name, name, v1beta1constants.ReferencedResourcesPrefix, ref.Name))
		}
		return nil, fmt.Errorf("failed reading referenced Secret %q: %w", ref.Name, err)
	}
	return secret.Data, nil
}

// decryption returns the SOPS decryption of the active bootstrap mode and where it is configured.
func decryption(cfg *fluxapi.FluxConfig) (*fluxapi.Decryption, *field.Path) {
	switch cfg.Bootstrap.Mode {
	case fluxapi.BootstrapModeKluctl:
		return cfg.Bootstrap.Kluctl.Decryption, field.NewPath("bootstrap", "kluctl", "decryption", "secretResourceName")
	case fluxapi.BootstrapModeFlux:
		return cfg.Bootstrap.Flux.Decryption, field.NewPath("bootstrap", "flux", "decryption", "secretResourceName")
	}
	return nil, nil
}
