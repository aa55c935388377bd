package extension

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/go-logr/logr"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// inputs is everything the bootstrap ManagedResource needs beyond the resolved configuration.
type inputs struct {
	// values is nil when nothing is to be bootstrapped (no source, or mode none).
	values           *bootstrap.Values
	insecureHostKeys bool
}

func (a *actuator) bootstrapInputs(ctx context.Context, log logr.Logger, seedNamespace string, cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, previous, status *fluxv1alpha1.FluxStatus) (*inputs, error) {
	if cfg.Source == nil {
		status.Message = "No source configured: only the controllers are deployed."
		return &inputs{}, nil
	}

	if cfg.Source.OCI != nil {
		return a.ociBootstrapInputs(ctx, seedNamespace, cluster, cfg, status)
	}

	url, err := helper.ParseGitURL(cfg.Source.URL)
	if err != nil {
		return nil, configurationError(fmt.Errorf("source.url: %w", err))
	}
	status.Repository = cfg.Source.URL
	status.Ref = refString(cfg.Source.Ref)

	if cfg.Bootstrap.Mode == fluxapi.BootstrapModeNone {
		status.Message = bootstrapModeNoneMessage
		return &inputs{}, nil
	}

	refs := &resourceReader{actuator: a, seedNamespace: seedNamespace, shoot: cluster.Shoot}
	in := &inputs{values: newValues(cluster, cfg, url.String())}
	values := in.values

	switch {
	case cfg.Source.SecretResourceName != "":
		data, err := refs.secret(ctx, cfg.Source.SecretResourceName, "source.secretResourceName")
		if err != nil {
			return nil, err
		}
		creds, insecure, err := a.userCredentials(cfg, url, data)
		if err != nil {
			return nil, err
		}
		values.Credentials, in.insecureHostKeys = creds, insecure

	case cfg.Source.Type == fluxapi.RepositoryTypePrivate:
		key, err := a.deployKey(ctx, log, seedNamespace, cluster, cfg, url, previous, status)
		if err != nil {
			return nil, err
		}
		data := map[string][]byte{constants.SecretKeyIdentity: key.PrivateKey}
		if len(key.KnownHosts) > 0 {
			data[constants.SecretKeyKnownHosts] = key.KnownHosts
		}
		values.Credentials = &bootstrap.Credentials{Host: url.CredentialsHost(), Data: data}
		in.insecureHostKeys = key.InsecureHostKey
	}

	if in.insecureHostKeys {
		if cfg.Bootstrap.Mode == fluxapi.BootstrapModeFlux {
			return nil, configurationError(fmt.Errorf("source: the SSH host key of %s is unknown and Flux cannot skip host key verification; set source.knownHosts", url.Host))
		}
		status.Warnings = append(status.Warnings, fmt.Sprintf("SSH host key of %s is not verified (operator allows insecure host keys); set source.knownHosts", url.Host))
	}

	if err := secretResources(ctx, refs, cfg, values); err != nil {
		return nil, err
	}
	return in, nil
}

const bootstrapModeNoneMessage = "Bootstrap mode none: only the controllers are deployed."

func newValues(cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, url string) *bootstrap.Values {
	values := &bootstrap.Values{Config: cfg, URL: url}
	if cfg.Bootstrap.ShootInfo {
		values.Shoot = bootstrap.ShootInfoFromCluster(cluster)
	}
	return values
}

// ociBootstrapInputs are the inputs of an OCI artifact source. The extension never connects to the
// registry: only the shoot's controllers pull, so there is no host key scan and no host policy.
func (a *actuator) ociBootstrapInputs(ctx context.Context, seedNamespace string, cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, status *fluxv1alpha1.FluxStatus) (*inputs, error) {
	oci := cfg.Source.OCI
	url, err := helper.ParseOCIURL(oci.URL)
	if err != nil {
		return nil, configurationError(fmt.Errorf("source.oci.url: %w", err))
	}
	status.Repository = oci.URL
	status.Ref = ociRefString(oci.Ref)

	if cfg.Bootstrap.Mode == fluxapi.BootstrapModeNone {
		status.Message = bootstrapModeNoneMessage
		return &inputs{}, nil
	}

	refs := &resourceReader{actuator: a, seedNamespace: seedNamespace, shoot: cluster.Shoot}
	values := newValues(cluster, cfg, url.String())
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
	if err := secretResources(ctx, refs, cfg, values); err != nil {
		return nil, err
	}
	return &inputs{values: values}, nil
}

// ociCredentials takes the registry credentials of a user's Secret: username and password, or a
// bearer token, the keys kluctl reads; other keys are not delivered.
func ociCredentials(url *helper.OCIURL, data map[string][]byte, field string) (*bootstrap.Credentials, error) {
	creds := &bootstrap.Credentials{Host: url.Registry, Repository: url.Repository, Data: map[string][]byte{}}
	username, hasUser := data[constants.SecretKeyUsername]
	password, hasPassword := data[constants.SecretKeyPassword]
	token, hasToken := data[constants.SecretKeyToken]
	switch {
	case hasToken && (hasUser || hasPassword):
		return nil, configurationError(fmt.Errorf("%s: Secret must contain either %q and %q or %q, not both", field, constants.SecretKeyUsername, constants.SecretKeyPassword, constants.SecretKeyToken))
	case hasToken && len(token) > 0:
		creds.Data[constants.SecretKeyToken] = token
	case hasUser && hasPassword && len(username) > 0:
		creds.Data[constants.SecretKeyUsername] = username
		creds.Data[constants.SecretKeyPassword] = password
	default:
		return nil, configurationError(fmt.Errorf("%s: Secret must contain non-empty %q and %q, or %q", field, constants.SecretKeyUsername, constants.SecretKeyPassword, constants.SecretKeyToken))
	}
	return creds, nil
}

// secretResources reads the Shoot resources every source kind may deliver besides its credentials.
// All Secrets the bootstrap ManagedResource carries count against one limit, the credentials
// first: every change writes them anew into the seed.
func secretResources(ctx context.Context, refs *resourceReader, cfg *fluxapi.FluxConfig, values *bootstrap.Values) error {
	limits := refs.actuator.config.Limits
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
	if d := cfg.Bootstrap.Kluctl.Decryption; d != nil && cfg.Bootstrap.Mode == fluxapi.BootstrapModeKluctl {
		path := field.NewPath("bootstrap", "kluctl", "decryption", "secretResourceName")
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

// userCredentials turns a user's credentials Secret into the shoot's git credentials. SSH
// credentials need known_hosts from the Secret, the configuration or the operator.
func (a *actuator) userCredentials(cfg *fluxapi.FluxConfig, url *helper.GitURL, data map[string][]byte) (*bootstrap.Credentials, bool, error) {
	creds := &bootstrap.Credentials{Host: url.CredentialsHost(), Data: map[string][]byte{}}
	fieldName := "source.secretResourceName"

	if identity, ok := data[constants.SecretKeyIdentity]; ok {
		if url.Scheme != helper.SchemeSSH {
			return nil, false, configurationError(fmt.Errorf("%s: Secret key %q needs an ssh URL, got %s", fieldName, constants.SecretKeyIdentity, url.Scheme))
		}
		if _, err := sshkey.ParsePrivateKey(identity); err != nil {
			return nil, false, configurationError(fmt.Errorf("%s: Secret key %q is not a valid unencrypted SSH private key", fieldName, constants.SecretKeyIdentity))
		}
		creds.Data[constants.SecretKeyIdentity] = identity
		// The shoot's Flux or kluctl reads these; like the deploy key Secret, the tenant's data is
		// bounded and must parse, so that a mistake shows here and not in the shoot.
		userKnownHosts := string(data[constants.SecretKeyKnownHosts])
		if errs := sshkey.ValidateKnownHosts(userKnownHosts, a.knownHostsLimits, field.NewPath("data").Key(constants.SecretKeyKnownHosts)); len(errs) > 0 {
			return nil, false, configurationError(fmt.Errorf("%s: Secret %w", fieldName, errs.ToAggregate()))
		}
		knownHosts := deploykey.JoinKnownHosts(data[constants.SecretKeyKnownHosts], []byte(cfg.Source.KnownHosts), []byte(a.config.KnownHosts))
		if len(knownHosts) == 0 {
			if !a.config.AllowInsecureHostKeys {
				return nil, false, configurationError(fmt.Errorf("%s: no known_hosts for %s: add key %q to the Secret or set source.knownHosts", fieldName, url.Host, constants.SecretKeyKnownHosts))
			}
			return creds, true, nil
		}
		creds.Data[constants.SecretKeyKnownHosts] = knownHosts
		return creds, false, nil
	}

	username, hasUser := data[constants.SecretKeyUsername]
	password, hasPassword := data[constants.SecretKeyPassword]
	if !hasUser || !hasPassword {
		return nil, false, configurationError(fmt.Errorf("%s: Secret must contain %q (and %q) or %q and %q", fieldName, constants.SecretKeyIdentity, constants.SecretKeyKnownHosts, constants.SecretKeyUsername, constants.SecretKeyPassword))
	}
	if url.Scheme != helper.SchemeHTTPS {
		return nil, false, configurationError(fmt.Errorf("%s: username/password credentials need an https URL, got %s", fieldName, url.Scheme))
	}
	creds.Data[constants.SecretKeyUsername] = username
	creds.Data[constants.SecretKeyPassword] = password
	return creds, false, nil
}

func ociRefString(r fluxapi.OCIRef) string {
	if r.Digest != "" {
		return "digest:" + r.Digest
	}
	return "tag:" + r.Tag
}

func refString(r fluxapi.GitRef) string {
	switch {
	case r.Commit != "":
		return "commit:" + r.Commit
	case r.Tag != "":
		return "tag:" + r.Tag
	default:
		return "branch:" + r.Branch
	}
}

// resourceReader reads Shoot spec.resources, which gardenlet copies into the seed namespace.
type resourceReader struct {
	actuator      *actuator
	seedNamespace string
	shoot         *gardencorev1beta1.Shoot
}

func (r *resourceReader) secret(ctx context.Context, name, field string) (map[string][]byte, error) {
	idx := slices.IndexFunc(r.shoot.Spec.Resources, func(res gardencorev1beta1.NamedResourceReference) bool { return res.Name == name })
	if idx < 0 {
		return nil, configurationError(fmt.Errorf("%s: Shoot %s/%s has no resource %q in spec.resources", field, r.shoot.Namespace, r.shoot.Name, name))
	}
	ref := r.shoot.Spec.Resources[idx].ResourceRef
	if ref.Kind != "Secret" || ref.APIVersion != "v1" {
		return nil, configurationError(fmt.Errorf("%s: resource %q must reference a v1 Secret, got %s %s", field, name, ref.APIVersion, ref.Kind))
	}
	secret := &corev1.Secret{}
	if err := extensionscontroller.GetObjectByReference(ctx, r.actuator.client, &autoscalingv1.CrossVersionObjectReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion}, r.seedNamespace, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, configurationError(fmt.Errorf("%s: Secret %q referenced by resource %q was not found (gardenlet copies it as %s%s)", field, ref.Name, name, v1beta1constants.ReferencedResourcesPrefix, ref.Name))
		}
		return nil, fmt.Errorf("failed reading referenced Secret %q: %w", ref.Name, err)
	}
	return secret.Data, nil
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
