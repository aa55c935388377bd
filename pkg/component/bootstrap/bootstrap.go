// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package bootstrap deploys the ManagedResource with the source credentials and the objects that
// make the shoot's GitOps controller deploy the configured repository or OCI artifact: a
// KluctlDeployment, or a Flux GitRepository or OCIRepository with a Kustomization.
package bootstrap

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// Credentials are the git or OCI registry credentials delivered to the shoot.
type Credentials struct {
	// Host is the host the credentials apply to, normalised the way kluctl matches it; for an OCI
	// source the registry with its port.
	Host string
	// Repository is the repository inside the registry the credentials apply to; OCI sources only.
	Repository string
	// Data holds identity/known_hosts or username/password for git, username/password or token for
	// OCI.
	Data map[string][]byte
}

// Secret is a Secret copied into the shoot.
type Secret struct {
	Name      string
	Namespace string
	Data      map[string][]byte
}

// Values configure the bootstrap ManagedResource.
type Values struct {
	// Config is the resolved configuration; its Source must be set and its bootstrap mode must not
	// be none.
	Config *fluxapi.FluxConfig
	// URL is the repository or OCI artifact URL in the form the GitOps controllers understand.
	URL string
	// Credentials are nil for public repositories.
	Credentials *Credentials
	// Decryption holds the SOPS key data; nil disables decryption.
	Decryption map[string][]byte
	// AdditionalSecrets are copied into the shoot as they are.
	AdditionalSecrets []Secret
	// Shoot is the shoot's identity, delivered as the ConfigMap shoot-info, the kluctl argument
	// "shoot" and the Kustomization's substitution variables; nil delivers none
	// (bootstrap.shootInfo: false).
	Shoot *ShootInfo
	// Status is rendered into the ConfigMap shoot-flux-status; nil delivers none.
	Status *fluxv1alpha1.FluxStatus
}

// New returns a component for the bootstrap ManagedResource in the given seed namespace. reader
// is used while waiting and should be a cached client.
func New(c client.Client, reader client.Reader, namespace string, values Values, timeouts managedresource.Timeouts) *managedresource.ManagedResource {
	return &managedresource.ManagedResource{
		Client:    c,
		Reader:    reader,
		Namespace: namespace,
		Name:      constants.ManagedResourceBootstrap,
		Data:      func() (map[string][]byte, error) { return Data(values) },
		Timeouts:  timeouts,
	}
}

// Namespace returns the namespace of the bootstrap objects in the shoot, that of the controller
// that applies them; false for a mode without bootstrap objects.
func Namespace(cfg *fluxapi.FluxConfig) (string, bool) {
	switch cfg.Bootstrap.Mode {
	case fluxapi.BootstrapModeKluctl:
		return cfg.Kluctl.Namespace, true
	case fluxapi.BootstrapModeFlux:
		return cfg.Flux.Namespace, true
	default:
		return "", false
	}
}

// ObjectName returns the name of the bootstrap objects in the shoot.
func ObjectName(cfg *fluxapi.FluxConfig) string {
	return cmp.Or(cfg.Bootstrap.Name, constants.BootstrapName)
}

// Data returns the brotli-compressed ManagedResource secret data for the given values.
func Data(v Values) (map[string][]byte, error) {
	cfg := v.Config
	if cfg == nil || cfg.Source == nil {
		return nil, fmt.Errorf("bootstrap needs a configured source")
	}

	namespace, ok := Namespace(cfg)
	if !ok {
		return nil, fmt.Errorf("bootstrap mode %q deploys no bootstrap objects", cfg.Bootstrap.Mode)
	}

	var objects []client.Object

	if v.Credentials != nil {
		creds, err := credentialsSecret(v, namespace)
		if err != nil {
			return nil, err
		}
		objects = append(objects, creds)
	}
	if v.Decryption != nil {
		objects = append(objects, secret(constants.DecryptionSecretName, namespace, v.Decryption))
	}
	for _, s := range v.AdditionalSecrets {
		additional := secret(s.Name, s.Namespace, s.Data)
		// Workloads may use an additional Secret (an image pull Secret, say); disabling the extension
		// or dropping the Secret from the configuration must not take it away from them.
		metav1.SetMetaDataAnnotation(&additional.ObjectMeta, resourcesv1alpha1.KeepObject, "true")
		objects = append(objects, additional)
	}
	if v.Shoot != nil {
		objects = append(objects, v.Shoot.configMap(namespace))
	}
	if v.Status != nil {
		objects = append(objects, statusConfigMap(namespace, v.Status))
	}
	files := make(map[string][]byte, len(objects)+2)
	for _, obj := range objects {
		filename, out, err := manifest(obj)
		if err != nil {
			return nil, fmt.Errorf("failed serializing bootstrap secrets and config maps: %w", err)
		}
		// Validation keeps additional Secrets apart from the extension's own; one written over
		// another here would deliver only one of them.
		if _, ok := files[filename]; ok {
			return nil, fmt.Errorf("duplicate bootstrap manifest %s", filename)
		}
		files[filename] = out
	}

	var docs map[string]any
	var err error
	if cfg.Bootstrap.Mode == fluxapi.BootstrapModeKluctl {
		docs, err = kluctlObjects(v, namespace)
	} else {
		docs, err = fluxObjects(v, namespace)
	}
	if err != nil {
		return nil, err
	}
	for filename, obj := range docs {
		out, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("failed serializing %s: %w", filename, err)
		}
		if _, ok := files[filename]; ok {
			return nil, fmt.Errorf("duplicate bootstrap manifest %s", filename)
		}
		files[filename] = out
	}

	data, err := managedresource.Data(files)
	if err != nil {
		return nil, fmt.Errorf("failed serializing bootstrap manifests: %w", err)
	}
	return data, nil
}

// manifest serializes a core object of the shoot as YAML with its kind, named by kind, namespace
// and name, so that no two objects share a file.
func manifest(obj client.Object) (string, []byte, error) {
	gvk, err := apiutil.GVKForObject(obj, kubernetes.ShootScheme)
	if err != nil {
		return "", nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return "", nil, fmt.Errorf("failed serializing %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return strings.ToLower(gvk.Kind + "__" + obj.GetNamespace() + "__" + obj.GetName() + ".yaml"), out, nil
}

func secret(name, namespace string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// credentialsSecret is the Secret the bootstrap source pulls with: kluctl reads the keys as they
// are, Flux's OCIRepository reads registry credentials as an image pull Secret.
func credentialsSecret(v Values, namespace string) (*corev1.Secret, error) {
	if v.Config.Source.OCI == nil {
		return secret(constants.GitCredentialsSecretName, namespace, v.Credentials.Data), nil
	}
	if v.Config.Bootstrap.Mode == fluxapi.BootstrapModeKluctl {
		return secret(constants.OCICredentialsSecretName, namespace, v.Credentials.Data), nil
	}
	dockerConfig, err := dockerConfigJSON(v.Credentials)
	if err != nil {
		return nil, err
	}
	s := secret(constants.OCICredentialsSecretName, namespace, map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig})
	s.Type = corev1.SecretTypeDockerConfigJson
	return s, nil
}

// dockerConfigJSON renders registry credentials in the format of a kubernetes.io/dockerconfigjson
// Secret; a token is a registry (bearer) token, which is what kluctl makes of it.
func dockerConfigJSON(c *Credentials) ([]byte, error) {
	entry := map[string]string{}
	if token := c.Data[constants.SecretKeyToken]; len(token) > 0 {
		entry["registrytoken"] = string(token)
	} else {
		username, password := string(c.Data[constants.SecretKeyUsername]), string(c.Data[constants.SecretKeyPassword])
		entry["username"], entry["password"] = username, password
		entry["auth"] = base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	}
	out, err := json.Marshal(map[string]any{"auths": map[string]any{c.Host: entry}})
	if err != nil {
		return nil, fmt.Errorf("failed serializing registry credentials: %w", err)
	}
	return out, nil
}

// RegistryCredentials returns the credentials for registry of a kubernetes.io/dockerconfigjson
// document, as the keys an OCI credentials Secret has: username and password, or token for a
// registry token. Entries are matched by host, with or without a scheme.
func RegistryCredentials(dockerConfig []byte, registry string) (map[string][]byte, error) {
	var doc struct {
		Auths map[string]struct {
			Username      string `json:"username"`
			Password      string `json:"password"`
			Auth          string `json:"auth"`
			RegistryToken string `json:"registrytoken"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(dockerConfig, &doc); err != nil {
		return nil, fmt.Errorf("is no .dockerconfigjson document: %w", err)
	}
	for host, entry := range doc.Auths {
		host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://"), "/")
		if host != registry {
			continue
		}
		if entry.RegistryToken != "" {
			return map[string][]byte{constants.SecretKeyToken: []byte(entry.RegistryToken)}, nil
		}
		username, password := entry.Username, entry.Password
		if username == "" && entry.Auth != "" {
			decoded, err := base64.StdEncoding.DecodeString(entry.Auth)
			if err != nil {
				return nil, fmt.Errorf("auths[%q].auth is not base64: %w", host, err)
			}
			var ok bool
			if username, password, ok = strings.Cut(string(decoded), ":"); !ok {
				return nil, fmt.Errorf("auths[%q].auth is not username:password", host)
			}
		}
		if username == "" {
			return nil, fmt.Errorf("auths[%q] has no username, auth or registrytoken", host)
		}
		return map[string][]byte{constants.SecretKeyUsername: []byte(username), constants.SecretKeyPassword: []byte(password)}, nil
	}
	return nil, fmt.Errorf("has no entry of registry %s in auths", registry)
}

func labels() map[string]string {
	return map[string]string{constants.LabelManagedBy: constants.ExtensionName}
}

func ref(r fluxapi.GitRef) *gitRef {
	return &gitRef{Branch: r.Branch, Tag: r.Tag, Commit: r.Commit}
}

func kluctlObjects(v Values, namespace string) (map[string]any, error) {
	cfg := v.Config
	k := cfg.Bootstrap.Kluctl
	name := ObjectName(cfg)
	args := k.Args
	if v.Shoot != nil {
		var err error
		if args, err = v.Shoot.kluctlArgs(k.Args); err != nil {
			return nil, err
		}
	}
	spec := kluctlDeploymentSpec{
		Interval: k.Interval.Duration.String(),
		Target:   k.Target,
		Context:  k.Context,
		Args:     args,
		Prune:    k.Prune,
		Delete:   k.Delete,
		DryRun:   k.DryRun,
	}
	if k.RetryInterval != nil {
		spec.RetryInterval = k.RetryInterval.Duration.String()
	}
	if k.Timeout != nil {
		spec.Timeout = k.Timeout.Duration.String()
	}
	if oci := cfg.Source.OCI; oci != nil {
		spec.Source.OCI = &kluctlOCISource{URL: v.URL, Path: oci.Path, Ref: &ociRef{Tag: oci.Ref.Tag, Digest: oci.Ref.Digest}}
		if v.Credentials != nil {
			spec.Credentials = &kluctlCredentials{OCI: []kluctlOCICredentials{{
				Registry:   v.Credentials.Host,
				Repository: v.Credentials.Repository,
				SecretRef:  secretRef{Name: constants.OCICredentialsSecretName},
			}}}
		}
	} else {
		spec.Source.Git = &kluctlGitSource{URL: v.URL, Path: cfg.Source.Path, Ref: ref(cfg.Source.Ref)}
		if v.Credentials != nil {
			spec.Credentials = &kluctlCredentials{Git: []kluctlGitCredentials{{
				Host:      v.Credentials.Host,
				SecretRef: secretRef{Name: constants.GitCredentialsSecretName},
			}}}
		}
	}
	if v.Decryption != nil {
		spec.Decryption = &decryption{Provider: "sops", SecretRef: secretRef{Name: constants.DecryptionSecretName}}
	}

	return map[string]any{
		"kluctldeployment__" + namespace + "__" + name + ".yaml": &kluctlDeployment{
			APIVersion: KluctlDeploymentGVK.GroupVersion().String(),
			Kind:       KluctlDeploymentGVK.Kind,
			Metadata:   objectMeta{Name: name, Namespace: namespace, Labels: labels()},
			Spec:       spec,
		},
	}, nil
}

func fluxObjects(v Values, namespace string) (map[string]any, error) {
	name := ObjectName(v.Config)
	source := fluxSource(v, namespace)
	docs := map[string]any{}
	for _, obj := range []client.Object{source, fluxKustomization(v, namespace, source.GetObjectKind().GroupVersionKind().Kind)} {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		doc, err := fluxDocument(obj)
		if err != nil {
			return nil, fmt.Errorf("failed serializing %s: %w", kind, err)
		}
		docs[strings.ToLower(kind)+"__"+namespace+"__"+name+".yaml"] = doc
	}
	return docs, nil
}

// fluxDocument is a Flux object as the document the ManagedResource stores. Flux's types carry a
// status stanza and a creationTimestamp; both are dropped so that it only holds what we set.
func fluxDocument(obj client.Object) (map[string]any, error) {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		return nil, err
	}
	delete(doc, "status")
	if meta, ok := doc["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return doc, nil
}

// DeliveredIdentity returns the SSH private key of the git credentials the bootstrap
// ManagedResource in the seed namespace delivers to the shoot; nil if it delivers none.
func DeliveredIdentity(ctx context.Context, reader client.Reader, namespace string) ([]byte, error) {
	objects, err := managedresource.Objects(ctx, reader, namespace, constants.ManagedResourceBootstrap)
	if err != nil {
		return nil, err
	}
	for _, obj := range objects {
		if obj.GetKind() != "Secret" || obj.GetName() != constants.GitCredentialsSecretName {
			continue
		}
		encoded, _, err := unstructured.NestedString(obj.Object, "data", constants.SecretKeyIdentity)
		if err != nil || encoded == "" {
			return nil, err
		}
		identity, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return nil, fmt.Errorf("git credentials of managed resource %s/%s: %w", namespace, constants.ManagedResourceBootstrap, err)
		}
		return identity, nil
	}
	return nil, nil
}
