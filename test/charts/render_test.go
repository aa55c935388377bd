package charts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gardener/gardener/pkg/chartrenderer"
	"github.com/gardener/gardener/pkg/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/charts"
)

const (
	// releaseName is what gardenlet names the release: the ControllerRegistration's name.
	releaseName = "shoot-flux"
	// genericKubeconfigSecret stands for the immutable Secret gardenlet creates for
	// injectGardenKubeconfig and announces in gardener.garden.genericKubeconfigSecretName.
	genericKubeconfigSecret = "generic-garden-kubeconfig-81fb3a88"
	// fieldOwner is the field manager of the server-side dry-run applies.
	fieldOwner = "chart-test"
)

// serverVersion is the Kubernetes version gardenlet reports to helm; the envtest binaries have the
// same minor version.
var serverVersion = &version.Info{GitVersion: "v1.36.4", Major: "1", Minor: "36"}

// gardenletValues are the values gardenlet adds when it renders the chart of a ControllerDeployment
// with injectGardenKubeconfig: true (see gardenlet's controllerinstallation reconciler).
func gardenletValues() map[string]any {
	return map[string]any{
		"gardener": map[string]any{
			"version": "v1.149.3",
			"garden": map[string]any{
				"clusterIdentity":             "garden",
				"genericKubeconfigSecretName": genericKubeconfigSecret,
			},
			"gardenlet": map[string]any{"featureGates": map[string]any{}},
			"seed": map[string]any{
				"name":            "local",
				"clusterIdentity": "seed-local",
				"provider":        "local",
				"region":          "local",
			},
		},
	}
}

// withoutGardenKubeconfig are gardenlet's values for a ControllerDeployment without
// injectGardenKubeconfig: no generic kubeconfig is announced.
func withoutGardenKubeconfig() map[string]any {
	v := gardenletValues()
	delete(v["gardener"].(map[string]any)["garden"].(map[string]any), "genericKubeconfigSecretName")
	return v
}

// merge deep-merges value maps, later ones winning, as gardenlet merges the ControllerDeployment's
// values with its own.
func merge(values ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, v := range values {
		out = utils.MergeMaps(out, v)
	}
	return out
}

// render renders the embedded chart into namespace with the given values (merged over the chart's
// values.yaml by helm) and decodes every object.
func render(namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	rendered, err := chartrenderer.NewWithServerVersion(serverVersion).RenderEmbeddedFS(charts.FS, charts.ExtensionChartName, releaseName, namespace, values)
	if err != nil {
		return nil, err
	}
	return decodeObjects(rendered.Manifest())
}

// mustRender renders and fails the spec on an error.
func mustRender(namespace string, values map[string]any) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := render(namespace, values)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// decodeObjects decodes a multi-document YAML stream, skipping empty documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("object without apiVersion, kind or name: %v", u.Object)
		}
		objs = append(objs, u)
	}
}

// find returns the object of the given kind and name, failing the spec if there is none.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	Fail(fmt.Sprintf("no %s %q among the rendered objects %v", kind, name, kindsAndNames(objs)))
	return nil
}

// kindsAndNames lists the objects as Kind/name.
func kindsAndNames(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	return names
}

// typed converts an unstructured object into a typed one.
func typed[T any](u *unstructured.Unstructured) *T {
	GinkgoHelper()
	out := new(T)
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true)).To(Succeed(), "%s/%s has fields its type does not know", u.GetKind(), u.GetName())
	return out
}

// createNamespace creates a namespace that enforces the restricted Pod Security Standard, like the
// one gardenlet creates for a ControllerInstallation whose registration asks for it.
func createNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: prefix + "-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// dryRunApply applies an object with server-side apply and dry-run, so that the API server runs
// its decoding, defaulting, validation and admission without persisting anything.
func dryRunApply(ctx context.Context, u *unstructured.Unstructured) error {
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership, client.DryRunAll)
}

// noFieldErrors is a matcher-friendly rendering of a field.ErrorList.
func noFieldErrors(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return errs.ToAggregate()
}
