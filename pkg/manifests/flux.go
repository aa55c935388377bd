// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fluxcd/flux2/v2/pkg/manifestgen/install"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// FluxOptions selects what RenderFlux renders.
type FluxOptions struct {
	Version    string   // e.g. "v2.9.5"; must be in FluxVersions()
	Components []string // subset of FluxComponents(), must contain source-controller; order and duplicates do not matter
	Namespace  string   // e.g. "flux-system"
	Registry   string   // optional registry override (operator setting); "" = image vector as is
	Tuning     Tuning   // settings of the Deployments and image pull credentials
}

var fluxImageNames = map[string]string{
	SourceController:       fluximagevector.FluxSourceController,
	KustomizeController:    fluximagevector.FluxKustomizeController,
	HelmController:         fluximagevector.FluxHelmController,
	NotificationController: fluximagevector.FluxNotificationController,
}

// RenderFlux returns the multi-document YAML of all Flux objects as Flux renders them, with the
// images of the image vector entries flux-<component> for the version and the registry replaced
// (see FluxOptions.Registry). Results are cached and shared: the slice must not be modified.
func RenderFlux(opts FluxOptions) ([]byte, error) {
	return defaultRenderer.renderFlux(opts)
}

func (r *renderer) renderFlux(opts FluxOptions) ([]byte, error) {
	if err := checkVersion("flux", opts.Version, fluxVersions); err != nil {
		return nil, err
	}
	components, err := normalizeComponents(opts.Components)
	if err != nil {
		return nil, err
	}
	if err := validateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	if err := validateRegistry(opts.Registry); err != nil {
		return nil, err
	}

	key := rendercache.KeyOf("flux", opts.Version, strings.Join(components, ","), opts.Namespace, opts.Registry)
	return r.tuned(key, opts.Namespace, opts.Tuning, func() ([]byte, error) {
		return r.buildFlux(opts.Version, components, opts.Namespace, opts.Registry)
	})
}

func normalizeComponents(components []string) ([]string, error) {
	for _, c := range components {
		if !slices.Contains(fluxComponents, c) {
			return nil, fmt.Errorf("unknown flux component %q, supported: %s", c, strings.Join(fluxComponents, ", "))
		}
	}
	// The other controllers only act on artifacts source-controller provides.
	if !slices.Contains(components, SourceController) {
		return nil, fmt.Errorf("flux components %v lack %s, which the other controllers depend on", components, SourceController)
	}
	var normalized []string
	for _, c := range fluxComponents {
		if slices.Contains(components, c) {
			normalized = append(normalized, c)
		}
	}
	return normalized, nil
}

func validateNamespace(namespace string) error {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return fmt.Errorf("invalid namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	return nil
}

// kustomizeMu serialises kustomize runs: kustomize keeps Kubernetes' OpenAPI schema in a global
// that its readers do not lock, and buildFlux drops it after each run.
var kustomizeMu sync.Mutex

func (r *renderer) buildFlux(version string, components []string, namespace, registry string) ([]byte, error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	// The schema takes several MiB and is parsed again in a fraction of a second; the extension
	// renders a handful of times in its life, the results are cached.
	defer openapi.ResetOpenAPI()

	// Resolved first, so that a broken image vector fails before any kustomize run. The same
	// function serves Images, so the reported images are the deployed ones.
	componentImages, err := r.fluxImages(FluxOptions{Version: version, Components: components, Registry: registry})
	if err != nil {
		return nil, err
	}
	images := map[string]string{}
	for c, image := range componentImages {
		images["fluxcd/"+c] = image
	}

	// install.Generate writes its kustomization next to the manifests, so the embedded base
	// needs a writable copy.
	base, err := os.MkdirTemp("", "shoot-flux-manifests-")
	if err != nil {
		return nil, fmt.Errorf("creating directory for the flux manifests: %w", err)
	}
	defer func() { _ = os.RemoveAll(base) }()
	for _, name := range append(slices.Clone(components), "rbac", "policies") {
		data, err := embedded.ReadFile(path.Join("flux", version, name+".yaml"))
		if err != nil {
			return nil, fmt.Errorf("reading embedded flux manifests: %w", err)
		}
		if err := os.WriteFile(filepath.Join(base, name+".yaml"), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing flux manifests base: %w", err)
		}
	}

	opts := install.MakeDefaultOptions()
	opts.Version = version
	opts.Namespace = namespace
	opts.Components = components
	opts.ComponentsExtra = nil
	// Images are replaced below from the image vector; Flux's own registry rewrite would only
	// hide which upstream image a container ran.
	opts.Registry = ""
	// BaseURL keeps its https default: that makes Generate apply Flux's templates (namespace,
	// labels, RBAC, network policies, controller flags) to base, and it only downloads when base
	// is empty.
	manifest, err := install.Generate(opts, base)
	if err != nil {
		return nil, fmt.Errorf("rendering flux %s: %w", version, err)
	}

	nodes, err := kio.FromBytes([]byte(strings.TrimPrefix(manifest.Content, install.GetGenWarning(opts)+"\n")))
	if err != nil {
		return nil, fmt.Errorf("parsing rendered flux manifests: %w", err)
	}
	if err := setImages(nodes, images); err != nil {
		return nil, err
	}
	if err := keepOnDisable(nodes); err != nil {
		return nil, err
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("serializing flux manifests: %w", err)
	}
	return []byte(out), nil
}

// keepOnDisable marks the CRDs and namespaces with the resource manager's keep-object annotation:
// deleting them with the extension would delete every Flux or kluctl object of the shoot, the
// users' own included, while their controllers go (pruning, uninstalling, or hanging on
// finalizers). Kept, they stay unprocessed until the user removes them or enables it again.
func keepOnDisable(nodes []*yaml.RNode) error {
	for _, node := range nodes {
		switch node.GetKind() {
		case "CustomResourceDefinition", "Namespace":
			if err := node.PipeE(yaml.SetAnnotation(resourcesv1alpha1.KeepObject, "true")); err != nil {
				return fmt.Errorf("annotating %s %s: %w", node.GetKind(), node.GetName(), err)
			}
		}
	}
	return nil
}

// setImages points every container of every Deployment to the image vector, keyed by the
// upstream repository the embedded manifests name (fluxcd/<component>). A container running
// anything else is an error, so no image can bypass the image vector.
func setImages(nodes []*yaml.RNode, images map[string]string) error {
	for _, node := range nodes {
		if node.GetKind() != "Deployment" {
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			list, err := node.Pipe(yaml.Lookup("spec", "template", "spec", field))
			if err != nil {
				return fmt.Errorf("reading %s of deployment %s: %w", field, node.GetName(), err)
			}
			if list == nil {
				continue
			}
			containers, err := list.Elements()
			if err != nil {
				return fmt.Errorf("reading %s of deployment %s: %w", field, node.GetName(), err)
			}
			for _, container := range containers {
				upstream, err := container.GetString("image")
				if err != nil {
					return fmt.Errorf("reading image of deployment %s: %w", node.GetName(), err)
				}
				image, ok := images[repository(upstream)]
				if !ok {
					return fmt.Errorf("deployment %s runs image %q, which has no image vector entry", node.GetName(), upstream)
				}
				if err := container.PipeE(yaml.SetField("image", yaml.NewStringRNode(image))); err != nil {
					return fmt.Errorf("setting image of deployment %s: %w", node.GetName(), err)
				}
			}
		}
	}
	return nil
}

// repository strips tag and digest from an image reference.
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}
