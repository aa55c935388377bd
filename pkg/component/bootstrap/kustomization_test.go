// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"maps"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	testutils "github.com/gardener/gardener/pkg/utils/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

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

	It("renders every field of the Kustomization as kustomize-controller's type, which decodes it strictly and renders it back unchanged", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		f := &cfg.Bootstrap.Flux
		f.Prune, f.Wait, f.TargetNamespace, f.ServiceAccountName = false, true, "apps", "flux-applier"
		f.Interval = metav1.Duration{Duration: time.Hour + 30*time.Second}
		f.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
		f.RetryInterval = &metav1.Duration{Duration: 90 * time.Second}
		f.PostBuild = &fluxapi.PostBuild{Substitute: map[string]string{"CLUSTER": "prod"}, SubstituteFrom: []fluxapi.SubstituteReference{{Kind: "Secret", Name: "secrets", Optional: true}}}
		f.Patches = []fluxapi.Patch{{Patch: "[]", Target: &fluxapi.PatchSelector{Kind: "Deployment", LabelSelector: "tier=web"}}}
		v := Values{Config: cfg, URL: "https://git.example.com/org/repo", Decryption: map[string][]byte{"identity.agekey": []byte("KEY")}, Shoot: shootInfo()}
		data, err := Data(v)
		Expect(err).NotTo(HaveOccurred())
		docs, err := testutils.ExtractManifestsFromManagedResourceData(data)
		Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(docs, func(doc string) bool { return strings.Contains(doc, "\nkind: Kustomization\n") })
		Expect(i).NotTo(Equal(-1))
		doc := docs[i]
		Expect(doc).NotTo(ContainSubstring("status"), "only what the extension sets, like the source")
		Expect(doc).NotTo(ContainSubstring("creationTimestamp"))

		ks := &kustomizev1.Kustomization{}
		Expect(yaml.UnmarshalStrict([]byte(doc), ks)).To(Succeed())
		Expect(ks.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"}))
		Expect(ks.GroupVersionKind()).To(Equal(KustomizationGVK))
		Expect(ks.ObjectMeta).To(Equal(metav1.ObjectMeta{Name: "shoot-flux-bootstrap", Namespace: "flux-system", Labels: map[string]string{constants.LabelManagedBy: constants.ExtensionName}}))
		Expect(ks.Spec).To(Equal(kustomizev1.KustomizationSpec{
			SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "shoot-flux-bootstrap"},
			Path:               "deploy",
			Interval:           metav1.Duration{Duration: time.Hour + 30*time.Second},
			Timeout:            &metav1.Duration{Duration: 3 * time.Minute},
			RetryInterval:      &metav1.Duration{Duration: 90 * time.Second},
			Wait:               true,
			TargetNamespace:    "apps",
			ServiceAccountName: "flux-applier",
			DeletionPolicy:     kustomizev1.DeletionPolicyOrphan,
			Decryption:         &kustomizev1.Decryption{Provider: "sops", SecretRef: &fluxmeta.LocalObjectReference{Name: constants.DecryptionSecretName}},
			PostBuild: &kustomizev1.PostBuild{
				Substitute:     map[string]string{"CLUSTER": "prod"},
				SubstituteFrom: []kustomizev1.SubstituteReference{{Kind: "Secret", Name: "secrets", Optional: true}, {Kind: "ConfigMap", Name: constants.ShootInfoConfigMapName}},
			},
			Patches: []kustomize.Patch{{Patch: "[]", Target: &kustomize.Selector{Kind: "Deployment", LabelSelector: "tier=web"}}},
		}))
		Expect(doc).To(ContainSubstring("\n  prune: false\n"), "prune is required by the CRD")

		By("rendering the decoded object back to the same document")
		out, err := yaml.Marshal(ks)
		Expect(err).NotTo(HaveOccurred())
		roundTrip := map[string]any{}
		Expect(yaml.Unmarshal(out, &roundTrip)).To(Succeed())
		delete(roundTrip, "status")
		delete(roundTrip["metadata"].(map[string]any), "creationTimestamp")
		Expect(yaml.Marshal(roundTrip)).To(BeEquivalentTo(doc))

		By("rendering the same bytes again")
		for range 3 {
			Expect(Data(v)).To(Equal(data))
		}
	})
})
