// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"path"
	"reflect"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/charts"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
)

// undocumentedValues returns the paths of the leaf values that neither carry a comment nor sit in
// a section whose key carries one.
func undocumentedValues(node *kyaml.Node, prefix string, documented bool) []string {
	var missing []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		p := strings.TrimPrefix(prefix+"."+key.Value, ".")
		doc := documented || key.HeadComment != "" || key.LineComment != "" || value.LineComment != ""
		if value.Kind == kyaml.MappingNode && len(value.Content) > 0 {
			missing = append(missing, undocumentedValues(value, p, doc)...)
			continue
		}
		if !doc {
			missing = append(missing, p)
		}
	}
	return missing
}

// jsonFields returns the JSON paths of a configuration type: nested structs of the configuration
// API itself are descended into, other types (e.g. gardener's HealthCheckConfig) are one value.
func jsonFields(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var fields []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() == reflect.TypeFor[configv1alpha1.ControllerConfiguration]().PkgPath() {
			fields = append(fields, jsonFields(ft, prefix+name+".")...)
			continue
		}
		fields = append(fields, prefix+name)
	}
	return fields
}

var _ = Describe("values.yaml", func() {
	var root *kyaml.RNode

	BeforeEach(func() {
		data, err := charts.FS.ReadFile(path.Join(charts.ExtensionChartName, "values.yaml"))
		Expect(err).NotTo(HaveOccurred())
		root, err = kyaml.Parse(string(data))
		Expect(err).NotTo(HaveOccurred())
	})

	It("documents every value", func() {
		Expect(undocumentedValues(root.YNode(), "", false)).To(BeEmpty())
	})

	It("offers every field of the ControllerConfiguration", func() {
		fields := jsonFields(reflect.TypeFor[configv1alpha1.ControllerConfiguration](), "")
		Expect(fields).To(ContainElements("defaultFluxVersion", "sshKey.algorithm", "timeouts.hostKeyScan", "healthCheckConfig"))
		// Fields the chart sets from other values: a file path only makes sense for a file the
		// chart mounts.
		setByChart := map[string]string{"imagePullSecretFile": "imagePullSecret.dockerConfigJSON"}
		for _, f := range fields {
			value := "config." + f
			if other, ok := setByChart[f]; ok {
				value = other
			}
			node, err := root.Pipe(kyaml.Lookup(strings.Split(value, ".")...))
			Expect(err).NotTo(HaveOccurred())
			Expect(node).NotTo(BeNil(), "values.yaml has no %s", value)
		}
	})
})
