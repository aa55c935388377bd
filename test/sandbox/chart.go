// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"

	"github.com/shoot-flux/gardener-extension-shoot-flux/charts"
)

const (
	// ReleaseName is what gardenlet names the chart's release: the ControllerRegistration's name.
	ReleaseName = "shoot-flux"
	// GenericKubeconfigSecret stands for the immutable Secret gardenlet creates for
	// injectGardenKubeconfig and announces in gardener.garden.genericKubeconfigSecretName.
	GenericKubeconfigSecret = "generic-garden-kubeconfig-81fb3a88"
	// SeedName is the name of the sandbox's seed in gardenlet's values; the extension's garden
	// ServiceAccount lives in the garden namespace seed-<SeedName>.
	SeedName = "local"
)

// ServerVersion is the Kubernetes version gardenlet reports to helm; the envtest binaries have the
// same minor version.
var ServerVersion = &version.Info{GitVersion: "v1.36.4", Major: "1", Minor: "36"}

// GardenletValues are the values gardenlet adds when it renders the chart of a ControllerDeployment
// with injectGardenKubeconfig: true (see gardenlet's controllerinstallation reconciler), for tests
// that render the chart themselves (test/charts, test/publish, test/admission). The sandbox's
// deployed extension is rendered by gardenlet's own reconciler (landscape.go).
func GardenletValues() map[string]any {
	return map[string]any{
		"gardener": map[string]any{
			"version": "v1.149.3",
			"garden": map[string]any{
				"clusterIdentity":             "garden",
				"genericKubeconfigSecretName": GenericKubeconfigSecret,
			},
			"gardenlet": map[string]any{"featureGates": map[string]any{}},
			"seed": map[string]any{
				"name":            SeedName,
				"clusterIdentity": "seed-" + SeedName,
				"provider":        "local",
				"region":          "local",
			},
		},
	}
}

// MergeValues deep-merges value maps, later ones winning, as gardenlet merges the
// ControllerDeployment's values with its own.
func MergeValues(values ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, v := range values {
		out = utils.MergeMaps(out, v)
	}
	return out
}

// RenderExtensionChart renders the embedded extension chart into namespace with gardener's chart
// renderer, as gardenlet does, and decodes every object, for the tests of the chart
// (test/charts).
func RenderExtensionChart(namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	rendered, err := chartrenderer.NewWithServerVersion(ServerVersion).RenderEmbeddedFS(charts.FS, charts.ExtensionChartName, ReleaseName, namespace, values)
	if err != nil {
		return nil, fmt.Errorf("failed rendering the extension chart: %w", err)
	}
	return DecodeObjects(rendered.Manifest())
}

// DecodeObjects decodes a multi-document YAML stream, skipping empty documents; every object must
// have apiVersion, kind and name.
func DecodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	objs, err := decodeStream(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("object without apiVersion, kind or name: %v", u.Object)
		}
	}
	return objs, nil
}

// decodeStream decodes a multi-document YAML or JSON stream, skipping empty documents.
func decodeStream(r io.Reader) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}
