// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

// EstablishTimeout bounds the wait for an applied CRD to be served.
var EstablishTimeout = 30 * time.Second

func decode(stream []byte) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	reader := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := reader.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// apply applies objects server-side the way gardener-resource-manager would create them, CRDs
// first, and waits for every CRD to be established.
func apply(ctx context.Context, objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		rank := func(o *unstructured.Unstructured) int {
			switch o.GetKind() {
			case "CustomResourceDefinition":
				return 0
			case "Namespace":
				return 1
			}
			return 2
		}
		return rank(a) - rank(b)
	})
	for _, obj := range objs {
		ExpectWithOffset(1, k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("shoot-flux-test"), client.ForceOwnership)).
			To(Succeed(), "applying %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		if obj.GetKind() == "CustomResourceDefinition" {
			EventuallyWithOffset(1, func(g Gomega) {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: obj.GetName()}, crd)).To(Succeed())
				established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
					return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
				})
				g.Expect(established).To(BeTrue(), "CRD %s is not established", obj.GetName())
			}).WithTimeout(EstablishTimeout).Should(Succeed())
		}
	}
}

// componentSets are all subsets of the optional Flux controllers, each with source-controller.
func componentSets() [][]string {
	optional := slices.DeleteFunc(manifests.FluxComponents(), func(c string) bool { return c == manifests.SourceController })
	var sets [][]string
	for mask := range 1 << len(optional) {
		set := []string{manifests.SourceController}
		for i, c := range optional {
			if mask&(1<<i) != 0 {
				set = append(set, c)
			}
		}
		sets = append(sets, set)
	}
	return sets
}

var _ = Describe("Embedded manifests on a real API server", func() {
	It("rejects what the API server would not accept", func(ctx SpecContext) {
		stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: manifests.FluxVersions()[0], Components: []string{manifests.SourceController}, Namespace: "strict-check"})
		Expect(err).NotTo(HaveOccurred())
		objs := decode(stream)
		idx := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" })
		Expect(idx).To(BeNumerically(">=", 0))
		deployment := objs[idx].DeepCopy()
		Expect(unstructured.SetNestedField(deployment.Object, "x", "spec", "bogus")).To(Succeed())
		apply(ctx, slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Deployment" }))
		Expect(k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(deployment), client.FieldOwner("shoot-flux-test"))).
			To(MatchError(ContainSubstring(".spec.bogus: field not declared in schema")))
	})

	It("covers all eight component sets", func() {
		Expect(componentSets()).To(HaveLen(8))
	})

	for _, version := range manifests.FluxVersions() {
		for _, set := range componentSets() {
			It(fmt.Sprintf("accepts Flux %s with %v", version, set), func(ctx SpecContext) {
				stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: version, Components: set, Namespace: "flux-system"})
				Expect(err).NotTo(HaveOccurred())
				objs := decode(stream)
				Expect(objs).NotTo(BeEmpty())
				apply(ctx, objs)

				for _, component := range set {
					Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: component}, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}})).
						To(Succeed(), "deployment %s", component)
				}
			})
		}
	}

	for _, version := range manifests.KluctlVersions() {
		It("accepts the kluctl controller "+version+" in a custom namespace", func(ctx SpecContext) {
			stream, err := manifests.RenderKluctl(manifests.KluctlOptions{Version: version, Namespace: "gitops"})
			Expect(err).NotTo(HaveOccurred())
			objs := decode(stream)
			apply(ctx, objs)

			Expect(k8s.Get(ctx, client.ObjectKey{Name: "kluctldeployments.gitops.kluctl.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
			kd := &unstructured.Unstructured{}
			kd.SetAPIVersion("gitops.kluctl.io/v1beta1")
			kd.SetKind("KluctlDeployment")
			kd.SetNamespace("gitops")
			kd.SetName("probe")
			Expect(unstructured.SetNestedMap(kd.Object, map[string]any{
				"interval": "5m",
				"source":   map[string]any{"git": map[string]any{"url": "ssh://git@example.com/repo"}},
			}, "spec")).To(Succeed())
			Expect(k8s.Create(ctx, kd, client.DryRunAll)).To(Succeed(), "the installed CRD serves KluctlDeployments")
		})
	}
})
