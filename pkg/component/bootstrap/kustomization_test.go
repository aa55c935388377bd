// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"maps"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

var _ = Describe("The source's ignore rules and the Kustomization's substitution and patches", func() {
	const (
		gitRepository = "GitRepository/flux-system/shoot-flux-bootstrap"
		ociRepository = "OCIRepository/flux-system/shoot-flux-bootstrap"
		kustomization = "Kustomization/flux-system/shoot-flux-bootstrap"
	)
	spec := func(objs map[string]map[string]any, key string) map[string]any {
		GinkgoHelper()
		Expect(objs).To(HaveKey(key))
		return objs[key]["spec"].(map[string]any)
	}

	It("renders the ignore rules into the GitRepository, and none unless set", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), gitRepository)).NotTo(HaveKey("ignore"))
		cfg.Source.Ignore = ptr.To("/*\n!/deploy\n")
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), gitRepository)).To(HaveKeyWithValue("ignore", "/*\n!/deploy\n"))
		cfg.Source.Ignore = ptr.To("")
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), gitRepository)).To(HaveKeyWithValue("ignore", ""),
			"empty rules replace source-controller's default ones")
	})

	It("renders the ignore rules into the OCIRepository", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		cfg.Source = &fluxapi.Source{OCI: &fluxapi.OCISource{URL: "oci://registry.example.com/fleet/apps", Ref: fluxapi.OCIRef{Tag: "v1"}, Path: "deploy", Ignore: ptr.To("*.md")}}
		Expect(spec(objects(Values{Config: cfg, URL: "oci://registry.example.com/fleet/apps"}), ociRepository)).To(HaveKeyWithValue("ignore", "*.md"))
	})

	It("renders the variables and the user's entries, with the ConfigMap shoot-info last so that its keys win over theirs", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		cfg.Bootstrap.Flux.PostBuild = &fluxapi.PostBuild{
			Substitute:     map[string]string{"CLUSTER": "prod"},
			SubstituteFrom: []fluxapi.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}, {Kind: "Secret", Name: "secrets", Optional: true}},
		}
		ks := spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo", Shoot: shootInfo()}), kustomization)
		Expect(ks["postBuild"]).To(Equal(map[string]any{
			"substitute": map[string]any{"CLUSTER": "prod"},
			"substituteFrom": []any{
				map[string]any{"kind": "ConfigMap", "name": "vars"},
				map[string]any{"kind": "Secret", "name": "secrets", "optional": true},
				map[string]any{"kind": "ConfigMap", "name": "shoot-info"},
			},
		}))

		By("rendering only the user's without bootstrap.shootInfo")
		ks = spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), kustomization)
		Expect(ks["postBuild"]).To(Equal(map[string]any{
			"substitute":     map[string]any{"CLUSTER": "prod"},
			"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "vars"}, map[string]any{"kind": "Secret", "name": "secrets", "optional": true}},
		}))

		By("rendering no postBuild with nothing to substitute")
		cfg.Bootstrap.Flux.PostBuild = &fluxapi.PostBuild{Substitute: map[string]string{}}
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), kustomization)).NotTo(HaveKey("postBuild"))
	})

	It("renders the patches as written, and none unless set", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), kustomization)).NotTo(HaveKey("patches"))
		cfg.Bootstrap.Flux.Patches = []fluxapi.Patch{
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec: {replicas: 2}\n"},
			{Patch: `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`, Target: &fluxapi.PatchSelector{
				Group: "apps", Version: "v1", Kind: "Deployment", Name: "app-.*", Namespace: "apps", AnnotationSelector: "a=b", LabelSelector: "tier=web",
			}},
		}
		Expect(spec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo"}), kustomization)["patches"]).To(Equal([]any{
			map[string]any{"patch": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app}\nspec: {replicas: 2}\n"},
			map[string]any{"patch": `[{"op":"add","path":"/metadata/labels/team","value":"a"}]`, "target": map[string]any{
				"group": "apps", "version": "v1", "kind": "Deployment", "name": "app-.*", "namespace": "apps", "annotationSelector": "a=b", "labelSelector": "tier=web",
			}},
		}))
	})

	It("reserves exactly the keys of the ConfigMap shoot-info", func() {
		info := shootInfo()
		info.ClusterIdentity, info.TechnicalID, info.GardenClusterIdentity = "id", "shoot--myproject--dev", "garden"
		data := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "https://git.example.com/org/repo", Shoot: info})["ConfigMap/flux-system/shoot-info"]["data"].(map[string]any)
		Expect(slices.Sorted(maps.Keys(data))).To(ConsistOf(constants.ShootInfoVariables))
	})
})
