// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Specs about a single release render the newest embedded one.
var (
	newestFlux   = NewestFluxVersion()
	newestKluctl = NewestKluctlVersion()
)

// parseObjects splits rendered multi-document YAML into objects and fails on anything that is not
// a Kubernetes object.
func parseObjects(data []byte) []*unstructured.Unstructured {
	GinkgoHelper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objects []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(doc, &obj.Object)).To(Succeed())
		Expect(obj.GetKind()).NotTo(BeEmpty(), "document without kind:\n%s", doc)
		objects = append(objects, obj)
	}
}

func objectsOfKind(objects []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	byName := map[string]*unstructured.Unstructured{}
	for _, obj := range objects {
		if obj.GetKind() == kind {
			byName[obj.GetName()] = obj
		}
	}
	return byName
}

func deployments(objects []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	GinkgoHelper()
	result := map[string]*appsv1.Deployment{}
	for name, obj := range objectsOfKind(objects, "Deployment") {
		deployment := &appsv1.Deployment{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, deployment)).To(Succeed())
		result[name] = deployment
	}
	return result
}

// containerImages returns the image of every container and init container of a deployment.
func containerImages(deployment *appsv1.Deployment) []string {
	var images []string
	for _, c := range deployment.Spec.Template.Spec.InitContainers {
		images = append(images, c.Image)
	}
	for _, c := range deployment.Spec.Template.Spec.Containers {
		images = append(images, c.Image)
	}
	return images
}

// setImageVectorOverwrite points IMAGEVECTOR_OVERWRITE at a file with the given content for the
// rest of the spec.
func setImageVectorOverwrite(content string) {
	GinkgoHelper()
	file := filepath.Join(GinkgoT().TempDir(), "images-overwrite.yaml")
	Expect(os.WriteFile(file, []byte(content), 0o600)).To(Succeed())
	GinkgoT().Setenv("IMAGEVECTOR_OVERWRITE", file)
}

// expectKeptOnDisable checks that exactly the CRDs and namespaces survive the deletion of the
// controllers' ManagedResource, so disabling the extension deletes no user object with them.
func expectKeptOnDisable(objects []*unstructured.Unstructured) {
	GinkgoHelper()
	kept := 0
	for _, obj := range objects {
		annotation := obj.GetAnnotations()["resources.gardener.cloud/keep-object"]
		switch obj.GetKind() {
		case "CustomResourceDefinition", "Namespace":
			Expect(annotation).To(Equal("true"), "%s %s", obj.GetKind(), obj.GetName())
			kept++
		default:
			Expect(annotation).To(BeEmpty(), "%s %s", obj.GetKind(), obj.GetName())
		}
	}
	Expect(kept).To(BeNumerically(">=", 2))
}
