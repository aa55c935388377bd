// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// Tuning are the settings of the operator and the shoot owner that the rendered manifests of one
// namespace get on top of what the extension renders.
type Tuning struct {
	// Controllers are the effective settings of the controllers' Deployments, keyed by component
	// (the Deployment's name).
	Controllers map[string]flux.ControllerSettings
	// ImagePullSecret is the .dockerconfigjson data of the registry credentials; when set, it is
	// delivered as the Secret constants.ImagePullSecretName and every pod names it.
	ImagePullSecret []byte
}

func (t Tuning) empty() bool {
	return len(t.Controllers) == 0 && len(t.ImagePullSecret) == 0
}

// Key identifies the tuning in the render cache: a hash of the settings and the credentials, so
// that neither a tenant's settings nor the operator's credentials are kept as a key.
func (t Tuning) Key() (string, error) {
	settings, err := json.Marshal(t.Controllers)
	if err != nil {
		return "", fmt.Errorf("encoding controller settings: %w", err)
	}
	key := rendercache.KeyOf("tuning", string(settings), string(t.ImagePullSecret))
	return hex.EncodeToString(key[:]), nil
}

// concurrencyFlags are the flags that set how many objects a controller reconciles at a time.
var concurrencyFlags = map[string]string{
	SourceController:       "--concurrent",
	KustomizeController:    "--concurrent",
	HelmController:         "--concurrent",
	NotificationController: "--concurrent",
	KluctlComponent:        "--concurrency",
}

// tuned renders with render (cached under key) and applies the tuning on top. The tuned result is
// not cached: its only user, the controllers ManagedResource, caches its compressed data (a tenth
// of the size) under the same settings, and a tuned render of every Flux component is ~470 KiB,
// so 200 tenants' distinct settings kept the whole render cache (32 MiB) full of copies of the
// same CRDs. Shoots with different settings share the base render.
func (r *renderer) tuned(key rendercache.Key, namespace string, tuning Tuning, render func() ([]byte, error)) ([]byte, error) {
	base, err := r.cached(key, render)
	if err != nil || tuning.empty() {
		return base, err
	}
	return applyTuning(base, namespace, tuning)
}

// applyTuning patches the Deployments of rendered manifests with strategic merge patches (see
// tuneDeployment) and adds the image pull Secret.
func applyTuning(rendered []byte, namespace string, tuning Tuning) ([]byte, error) {
	nodes, err := kio.FromBytes(rendered)
	if err != nil {
		return nil, fmt.Errorf("parsing rendered manifests: %w", err)
	}
	for i, node := range nodes {
		if node.GetKind() != "Deployment" {
			continue
		}
		if nodes[i], err = tuneDeployment(node, tuning); err != nil {
			return nil, fmt.Errorf("tuning deployment %s: %w", node.GetName(), err)
		}
	}
	if len(tuning.ImagePullSecret) > 0 {
		secret, err := yamlNode(&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: constants.ImagePullSecretName, Namespace: namespace},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: tuning.ImagePullSecret},
		})
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, secret)
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("serializing tuned manifests: %w", err)
	}
	return []byte(out), nil
}

// tuneDeployment edits a typed copy of the Deployment and applies the difference to the rendered
// document as a strategic merge patch, so that everything the settings do not touch stays as
// rendered (a typed round trip would add empty fields such as creationTimestamp: null).
func tuneDeployment(node *yaml.RNode, tuning Tuning) (*yaml.RNode, error) {
	original, err := node.MarshalJSON()
	if err != nil {
		return nil, err
	}
	deployment := &appsv1.Deployment{}
	if err := json.Unmarshal(original, deployment); err != nil {
		return nil, err
	}
	before, err := json.Marshal(deployment)
	if err != nil {
		return nil, err
	}

	spec := &deployment.Spec.Template.Spec
	if settings, ok := tuning.Controllers[deployment.Name]; ok {
		if err := applySettings(spec, deployment.Name, settings); err != nil {
			return nil, err
		}
	}
	if len(tuning.ImagePullSecret) > 0 && !slices.ContainsFunc(spec.ImagePullSecrets, func(r corev1.LocalObjectReference) bool { return r.Name == constants.ImagePullSecretName }) {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: constants.ImagePullSecretName})
	}

	after, err := json.Marshal(deployment)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, appsv1.Deployment{})
	if err != nil {
		return nil, fmt.Errorf("creating patch: %w", err)
	}
	patched, err := strategicpatch.StrategicMergePatch(original, patch, appsv1.Deployment{})
	if err != nil {
		return nil, fmt.Errorf("applying patch: %w", err)
	}
	return jsonToNode(patched)
}

// applySettings sets the controller settings on the pod spec of the controller's Deployment.
func applySettings(spec *corev1.PodSpec, component string, s flux.ControllerSettings) error {
	if len(spec.Containers) != 1 {
		return fmt.Errorf("expected exactly one container, found %d", len(spec.Containers))
	}
	container := &spec.Containers[0]
	if s.Resources != nil {
		container.Resources = *s.Resources.DeepCopy()
	}
	if s.Tolerations != nil {
		spec.Tolerations = slices.Clone(s.Tolerations)
	}
	if len(s.NodeSelector) > 0 {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		maps.Copy(spec.NodeSelector, s.NodeSelector)
	}
	if s.PriorityClassName != "" {
		spec.PriorityClassName = s.PriorityClassName
	}
	if s.Concurrent != nil {
		flag, ok := concurrencyFlags[component]
		if !ok {
			return fmt.Errorf("no concurrency flag known for %s", component)
		}
		container.Args = setFlag(container.Args, flag, strconv.Itoa(int(*s.Concurrent)))
	}
	return nil
}

// setFlag replaces every occurrence of a flag (--flag=value or --flag value) by --flag=value.
func setFlag(args []string, flag, value string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], flag+"="):
		case args[i] == flag:
			i++ // the value
		default:
			out = append(out, args[i])
		}
	}
	return append(out, flag+"="+value)
}

func yamlNode(obj any) (*yaml.RNode, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return jsonToNode(data)
}

// jsonToNode converts through YAML text, so that the document is written in block style like
// the rest of the manifests.
func jsonToNode(data []byte) (*yaml.RNode, error) {
	text, err := sigsyaml.JSONToYAML(data)
	if err != nil {
		return nil, err
	}
	return yaml.Parse(string(text))
}
