// Package controllers deploys the ManagedResource with the Flux controllers and the kluctl
// controller into a shoot.
package controllers

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/component"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/mrutil"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var (
	// TimeoutApplied bounds the wait for gardener-resource-manager to apply the ManagedResource.
	TimeoutApplied = 2 * time.Minute
	// TimeoutDeleted bounds the wait for the ManagedResource to be deleted.
	TimeoutDeleted = 5 * time.Minute
)

// EnvDisableStrictHostKeyChecking makes the kluctl controller accept any SSH host key.
const EnvDisableStrictHostKeyChecking = "KLUCTL_SSH_DISABLE_STRICT_HOST_KEY_CHECKING"

// Values configure the controllers ManagedResource.
type Values struct {
	// Flux selects the Flux version, components, namespace and registry.
	Flux manifests.FluxOptions
	// Kluctl selects the kluctl controller; nil leaves it out.
	Kluctl *manifests.KluctlOptions
	// DisableStrictHostKeyChecking is set when the operator allows insecure host keys and no
	// known_hosts could be determined.
	DisableStrictHostKeyChecking bool
}

// New returns a component for the controllers ManagedResource in the given seed namespace. reader
// is used while waiting and should be a cached client; zero timeouts use the package defaults.
func New(c client.Client, reader client.Reader, namespace string, values Values, timeouts mrutil.Timeouts) component.DeployWaiter {
	return &mrutil.ShootManagedResource{
		Client:    c,
		Reader:    reader,
		Namespace: namespace,
		Name:      constants.ManagedResourceControllers,
		Data:      func() (map[string][]byte, error) { return Data(values) },
		Timeouts:  timeouts.Or(TimeoutApplied, TimeoutDeleted),
	}
}

// The compressed data only depends on the values, and hundreds of shoots on a seed share a few
// distinct values; compressing half a megabyte of YAML per reconcile would dominate the CPU time.
var (
	cacheMu sync.Mutex
	cache   = map[string]map[string][]byte{}
)

// Data returns the ManagedResource secret data (brotli-compressed) for the given values. The
// returned map is shared and must not be modified.
func Data(values Values) (map[string][]byte, error) {
	key := cacheKey(values)
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if data, ok := cache[key]; ok {
		return data, nil
	}

	fluxYAML, err := manifests.RenderFlux(values.Flux)
	if err != nil {
		return nil, fmt.Errorf("failed rendering flux manifests: %w", err)
	}
	registry := managedresources.NewRegistry(kubernetes.ShootScheme, kubernetes.ShootCodec, kubernetes.ShootSerializer)
	registry.AddSerialized("flux.yaml", fluxYAML)

	if values.Kluctl != nil {
		kluctlYAML, err := manifests.RenderKluctl(*values.Kluctl)
		if err != nil {
			return nil, fmt.Errorf("failed rendering kluctl manifests: %w", err)
		}
		if values.DisableStrictHostKeyChecking {
			if kluctlYAML, err = withEnv(kluctlYAML, corev1.EnvVar{Name: EnvDisableStrictHostKeyChecking, Value: "true"}); err != nil {
				return nil, err
			}
		}
		registry.AddSerialized("kluctl.yaml", kluctlYAML)
	}

	data, err := registry.SerializedObjects()
	if err != nil {
		return nil, fmt.Errorf("failed serializing controller manifests: %w", err)
	}
	cache[key] = data
	return data, nil
}

// withEnv adds an environment variable to every container of every Deployment in a multi-document
// YAML stream. The input is shared cached data, so a new stream is built.
func withEnv(stream []byte, env corev1.EnvVar) ([]byte, error) {
	var out bytes.Buffer
	for _, doc := range splitDocuments(stream) {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("failed decoding kluctl manifest: %w", err)
		}
		if meta.Kind == "Deployment" {
			deployment := &appsv1.Deployment{}
			if err := yaml.UnmarshalStrict(doc, deployment); err != nil {
				return nil, fmt.Errorf("failed decoding kluctl deployment: %w", err)
			}
			for i := range deployment.Spec.Template.Spec.Containers {
				c := &deployment.Spec.Template.Spec.Containers[i]
				c.Env = append(c.Env, env)
			}
			var err error
			if doc, err = yaml.Marshal(deployment); err != nil {
				return nil, fmt.Errorf("failed encoding kluctl deployment: %w", err)
			}
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out.Bytes(), nil
}

func splitDocuments(stream []byte) [][]byte {
	var docs [][]byte
	for _, doc := range bytes.Split(stream, []byte("\n---")) {
		doc = bytes.TrimPrefix(bytes.TrimSpace(bytes.TrimPrefix(doc, []byte("---"))), []byte("\n"))
		if len(doc) > 0 {
			docs = append(docs, append(doc, '\n'))
		}
	}
	return docs
}

func cacheKey(v Values) string {
	components := slices.Clone(v.Flux.Components)
	slices.Sort(components)
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s", v.Flux.Version, strings.Join(components, ","), v.Flux.Namespace, v.Flux.Registry)
	if v.Kluctl != nil {
		fmt.Fprintf(&b, "|kluctl|%s|%s|%s", v.Kluctl.Version, v.Kluctl.Namespace, v.Kluctl.Registry)
	}
	fmt.Fprintf(&b, "|insecure=%t", v.DisableStrictHostKeyChecking)
	return b.String()
}
