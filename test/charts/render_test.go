// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	// genericKubeconfigSecret is the generic garden kubeconfig Secret gardenlet announces.
	genericKubeconfigSecret = sandbox.GenericKubeconfigSecret
	// fieldOwner is the field manager of the server-side dry-run applies.
	fieldOwner = "chart-test"
)

// serverVersion is the Kubernetes version gardenlet reports to helm.
var serverVersion = sandbox.ServerVersion

// gardenletValues are the values gardenlet adds when it renders the chart.
func gardenletValues() map[string]any {
	return sandbox.GardenletValues()
}

// withoutGardenKubeconfig are gardenlet's values for a ControllerDeployment without
// injectGardenKubeconfig: no generic kubeconfig is announced.
func withoutGardenKubeconfig() map[string]any {
	v := gardenletValues()
	delete(v["gardener"].(map[string]any)["garden"].(map[string]any), "genericKubeconfigSecretName")
	return v
}

// merge deep-merges value maps, later ones winning.
func merge(values ...map[string]any) map[string]any {
	return sandbox.MergeValues(values...)
}

// render renders the embedded chart into namespace with the given values (merged over the chart's
// values.yaml by helm) and decodes every object.
func render(namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return sandbox.RenderExtensionChart(namespace, values)
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
	return sandbox.DecodeObjects(data)
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
