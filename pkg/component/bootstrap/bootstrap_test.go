// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"time"

	testutils "github.com/gardener/gardener/pkg/utils/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

func config(mode fluxapi.BootstrapMode) *fluxapi.FluxConfig {
	return &fluxapi.FluxConfig{
		Flux:   fluxapi.Flux{Version: "v2.9.5", Components: []string{"source-controller", "kustomize-controller"}, Namespace: "flux-system"},
		Kluctl: fluxapi.Kluctl{Enabled: true, Version: "v2.28.2", Namespace: "kluctl-system"},
		Source: &fluxapi.Source{URL: "git@git.example.com:org/repo", Ref: fluxapi.GitRef{Tag: "v1.0.0"}, Path: "deploy", Type: fluxapi.RepositoryTypePrivate},
		Bootstrap: fluxapi.Bootstrap{
			Mode: mode,
			Kluctl: fluxapi.KluctlBootstrap{
				Target: "prod", Context: "default", Args: &runtime.RawExtension{Raw: []byte(`{"env":"prod","replicas":3}`)},
				Prune: true, Interval: metav1.Duration{Duration: 5 * time.Minute}, Timeout: &metav1.Duration{Duration: 10 * time.Minute},
			},
			Flux: fluxapi.FluxBootstrap{Path: "deploy", Prune: true, Interval: metav1.Duration{Duration: 10 * time.Minute}},
		},
	}
}

func objects(v Values) map[string]map[string]any {
	data, err := Data(v)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	docs, err := testutils.ExtractManifestsFromManagedResourceData(data)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]map[string]any{}
	for _, doc := range docs {
		obj := map[string]any{}
		ExpectWithOffset(1, yaml.Unmarshal([]byte(doc), &obj)).To(Succeed())
		meta := obj["metadata"].(map[string]any)
		out[obj["kind"].(string)+"/"+meta["namespace"].(string)+"/"+meta["name"].(string)] = obj
	}
	return out
}

var _ = Describe("Data", func() {
	credentials := &Credentials{Host: "git.example.com", Data: map[string][]byte{"identity": []byte("KEY"), "known_hosts": []byte("git.example.com ssh-ed25519 AAAA\n")}}

	It("renders the KluctlDeployment with credentials, ref, args and timeouts", func() {
		objs := objects(Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "ssh://git@git.example.com/org/repo", Credentials: credentials})
		Expect(objs).To(HaveKey("Secret/kluctl-system/shoot-flux-git-credentials"))
		kd := objs["KluctlDeployment/kluctl-system/shoot-flux-bootstrap"]
		Expect(kd).NotTo(BeNil())
		Expect(kd["apiVersion"]).To(Equal("gitops.kluctl.io/v1beta1"))
		spec := kd["spec"].(map[string]any)
		Expect(spec["source"]).To(Equal(map[string]any{"git": map[string]any{"url": "ssh://git@git.example.com/org/repo", "path": "deploy", "ref": map[string]any{"tag": "v1.0.0"}}}))
		Expect(spec["credentials"]).To(Equal(map[string]any{"git": []any{map[string]any{"host": "git.example.com", "secretRef": map[string]any{"name": "shoot-flux-git-credentials"}}}}))
		Expect(spec["args"]).To(Equal(map[string]any{"env": "prod", "replicas": float64(3)}))
		Expect(spec).To(HaveKeyWithValue("interval", "5m0s"))
		Expect(spec).To(HaveKeyWithValue("timeout", "10m0s"))
		Expect(spec).To(HaveKeyWithValue("target", "prod"))
		Expect(spec).To(HaveKeyWithValue("context", "default"))
		Expect(spec).To(HaveKeyWithValue("prune", true))
		Expect(spec).To(HaveKeyWithValue("delete", false))
		Expect(spec).NotTo(HaveKey("retryInterval"))
		Expect(spec).NotTo(HaveKey("decryption"))
	})

	It("adds SOPS decryption and additional secrets", func() {
		objs := objects(Values{
			Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo",
			Decryption:        map[string][]byte{"sops.asc": []byte("PGP")},
			AdditionalSecrets: []Secret{{Name: "db", Namespace: "apps", Data: map[string][]byte{"password": []byte("x")}}},
		})
		Expect(objs).To(HaveKey("Secret/kluctl-system/" + constants.DecryptionSecretName))
		Expect(objs).To(HaveKey("Secret/apps/db"))
		Expect(objs["Secret/apps/db"]["metadata"]).To(HaveKeyWithValue("annotations", HaveKeyWithValue("resources.gardener.cloud/keep-object", "true")),
			"workloads may use the Secret after the extension is disabled")
		Expect(objs["Secret/kluctl-system/"+constants.DecryptionSecretName]["metadata"]).NotTo(HaveKey("annotations"))
		spec := objs["KluctlDeployment/kluctl-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
		Expect(spec["decryption"]).To(Equal(map[string]any{"provider": "sops", "secretRef": map[string]any{"name": constants.DecryptionSecretName}}))
		Expect(spec).NotTo(HaveKey("credentials"))
	})

	It("renders a GitRepository and an orphaning Kustomization in flux mode", func() {
		objs := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "ssh://git@git.example.com/org/repo", Credentials: credentials})
		Expect(objs).To(HaveKey("Secret/flux-system/shoot-flux-git-credentials"))
		repo := objs["GitRepository/flux-system/shoot-flux-bootstrap"]
		Expect(repo).NotTo(BeNil())
		Expect(repo).NotTo(HaveKey("status"))
		spec := repo["spec"].(map[string]any)
		Expect(spec).To(HaveKeyWithValue("url", "ssh://git@git.example.com/org/repo"))
		Expect(spec["ref"]).To(Equal(map[string]any{"tag": "v1.0.0"}))
		Expect(spec["secretRef"]).To(Equal(map[string]any{"name": "shoot-flux-git-credentials"}))
		ks := objs["Kustomization/flux-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
		Expect(ks).To(HaveKeyWithValue("deletionPolicy", "Orphan"))
		Expect(ks).To(HaveKeyWithValue("path", "deploy"))
		Expect(ks).To(HaveKeyWithValue("prune", true))
		Expect(ks).NotTo(HaveKey("wait"))
		Expect(ks).NotTo(HaveKey("timeout"))
		Expect(ks).NotTo(HaveKey("serviceAccountName"))
		Expect(objs).NotTo(HaveKey(HavePrefix("KluctlDeployment/")))
	})

	It("renders the Kustomization's wait, timeout, retry interval, service account and SOPS decryption when set", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		cfg.Bootstrap.Flux.Wait = true
		cfg.Bootstrap.Flux.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
		cfg.Bootstrap.Flux.RetryInterval = &metav1.Duration{Duration: 30 * time.Second}
		cfg.Bootstrap.Flux.ServiceAccountName = "flux-applier"
		objs := objects(Values{Config: cfg, URL: "ssh://git@git.example.com/org/repo", Decryption: map[string][]byte{"identity.agekey": []byte("AGE-SECRET-KEY-1")}})
		Expect(objs).To(HaveKey("Secret/flux-system/" + constants.DecryptionSecretName))
		ks := objs["Kustomization/flux-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
		Expect(ks["decryption"]).To(Equal(map[string]any{"provider": "sops", "secretRef": map[string]any{"name": constants.DecryptionSecretName}}))
		Expect(ks).To(HaveKeyWithValue("wait", true))
		Expect(ks).To(HaveKeyWithValue("timeout", "3m0s"))
		Expect(ks).To(HaveKeyWithValue("retryInterval", "30s"))
		Expect(ks).To(HaveKeyWithValue("serviceAccountName", "flux-applier"))
	})

	It("names the objects bootstrap.name in both modes, the Kustomization's source too", func() {
		cfg := config(fluxapi.BootstrapModeFlux)
		cfg.Bootstrap.Name = "flux-system"
		objs := objects(Values{Config: cfg, URL: "ssh://git@git.example.com/org/repo"})
		Expect(objs).To(HaveKey("GitRepository/flux-system/flux-system"))
		Expect(objs["Kustomization/flux-system/flux-system"]["spec"]).To(HaveKeyWithValue("sourceRef", map[string]any{"kind": "GitRepository", "name": "flux-system"}))
		Expect(objs).NotTo(HaveKey(HaveSuffix("/shoot-flux-bootstrap")))

		cfg = config(fluxapi.BootstrapModeKluctl)
		cfg.Bootstrap.Name = "fleet"
		Expect(objects(Values{Config: cfg, URL: "ssh://git@git.example.com/org/repo"})).To(HaveKey("KluctlDeployment/kluctl-system/fleet"))
	})

	Describe("RegistryCredentials", func() {
		It("takes the registry's entry of an image pull Secret, by host with or without scheme", func() {
			doc := []byte(`{"auths":{"other.example.com":{"username":"x","password":"y"},"https://registry.example.com:5000/":{"username":"puller","password":"pw"}}}`)
			Expect(RegistryCredentials(doc, "registry.example.com:5000")).To(Equal(map[string][]byte{"username": []byte("puller"), "password": []byte("pw")}))
		})

		It("reads auth and registry tokens", func() {
			Expect(RegistryCredentials([]byte(`{"auths":{"r.example.com":{"auth":"cHVsbGVyOnA6dw=="}}}`), "r.example.com")).
				To(Equal(map[string][]byte{"username": []byte("puller"), "password": []byte("p:w")}))
			Expect(RegistryCredentials([]byte(`{"auths":{"r.example.com":{"registrytoken":"TOKEN"}}}`), "r.example.com")).
				To(Equal(map[string][]byte{"token": []byte("TOKEN")}))
		})

		It("names what is wrong", func() {
			_, err := RegistryCredentials([]byte(`{"auths":{"other.example.com":{"username":"x"}}}`), "r.example.com")
			Expect(err).To(MatchError("has no entry of registry r.example.com in auths"))
			_, err = RegistryCredentials([]byte(`{"auths":{"r.example.com":{"auth":"!!"}}}`), "r.example.com")
			Expect(err).To(MatchError(ContainSubstring(`auths["r.example.com"].auth is not base64`)))
			_, err = RegistryCredentials([]byte(`{"auths":{"r.example.com":{}}}`), "r.example.com")
			Expect(err).To(MatchError(`auths["r.example.com"] has no username, auth or registrytoken`))
			_, err = RegistryCredentials([]byte(`[]`), "r.example.com")
			Expect(err).To(MatchError(ContainSubstring("is no .dockerconfigjson document")))
		})
	})

	Describe("an OCI source", func() {
		const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

		ociConfig := func(mode fluxapi.BootstrapMode) *fluxapi.FluxConfig {
			cfg := config(mode)
			cfg.Source = &fluxapi.Source{OCI: &fluxapi.OCISource{URL: "oci://registry.example.com:5000/fleet/apps", Ref: fluxapi.OCIRef{Digest: digest}, Path: "deploy"}}
			return cfg
		}
		basic := &Credentials{Host: "registry.example.com:5000", Repository: "fleet/apps", Data: map[string][]byte{"username": []byte("puller"), "password": []byte("pw")}}
		token := &Credentials{Host: "registry.example.com:5000", Repository: "fleet/apps", Data: map[string][]byte{"token": []byte("TOKEN")}}

		It("renders the KluctlDeployment with source.oci and credentials.oci", func() {
			objs := objects(Values{Config: ociConfig(fluxapi.BootstrapModeKluctl), URL: "oci://registry.example.com:5000/fleet/apps", Credentials: token})
			Expect(objs).NotTo(HaveKey("Secret/kluctl-system/shoot-flux-git-credentials"))
			creds := objs["Secret/kluctl-system/"+constants.OCICredentialsSecretName]
			Expect(creds).To(HaveKeyWithValue("type", "Opaque"))
			Expect(creds).To(HaveKeyWithValue("data", Equal(map[string]any{"token": "VE9LRU4="})))
			spec := objs["KluctlDeployment/kluctl-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
			Expect(spec["source"]).To(Equal(map[string]any{"oci": map[string]any{"url": "oci://registry.example.com:5000/fleet/apps", "path": "deploy", "ref": map[string]any{"digest": digest}}}))
			Expect(spec["credentials"]).To(Equal(map[string]any{"oci": []any{map[string]any{
				"registry": "registry.example.com:5000", "repository": "fleet/apps", "secretRef": map[string]any{"name": constants.OCICredentialsSecretName},
			}}}))
		})

		It("renders an OCIRepository with an image pull Secret and a Kustomization of it in flux mode", func() {
			cfg := ociConfig(fluxapi.BootstrapModeFlux)
			cfg.Source.OCI.Ref = fluxapi.OCIRef{Tag: "v1"}
			objs := objects(Values{Config: cfg, URL: "oci://registry.example.com:5000/fleet/apps", Credentials: basic})
			Expect(objs).NotTo(HaveKey(HavePrefix("GitRepository/")))
			repo := objs["OCIRepository/flux-system/shoot-flux-bootstrap"]
			Expect(repo).NotTo(BeNil())
			Expect(repo).NotTo(HaveKey("status"))
			Expect(repo["apiVersion"]).To(Equal("source.toolkit.fluxcd.io/v1"))
			spec := repo["spec"].(map[string]any)
			Expect(spec).To(HaveKeyWithValue("url", "oci://registry.example.com:5000/fleet/apps"))
			Expect(spec["ref"]).To(Equal(map[string]any{"tag": "v1"}))
			Expect(spec["secretRef"]).To(Equal(map[string]any{"name": constants.OCICredentialsSecretName}))
			Expect(spec).NotTo(HaveKey("insecure"))

			creds := objs["Secret/flux-system/"+constants.OCICredentialsSecretName]
			Expect(creds).To(HaveKeyWithValue("type", "kubernetes.io/dockerconfigjson"))
			encoded := creds["data"].(map[string]any)[".dockerconfigjson"].(string)
			dockerConfig, err := base64.StdEncoding.DecodeString(encoded)
			Expect(err).NotTo(HaveOccurred())
			Expect(dockerConfig).To(MatchJSON(`{"auths":{"registry.example.com:5000":{"username":"puller","password":"pw","auth":"cHVsbGVyOnB3"}}}`))

			ks := objs["Kustomization/flux-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
			Expect(ks["sourceRef"]).To(Equal(map[string]any{"kind": "OCIRepository", "name": "shoot-flux-bootstrap"}))
			Expect(ks).To(HaveKeyWithValue("path", "deploy"))
		})

		It("renders a token as a registry token", func() {
			objs := objects(Values{Config: ociConfig(fluxapi.BootstrapModeFlux), URL: "oci://registry.example.com:5000/fleet/apps", Credentials: token})
			encoded := objs["Secret/flux-system/"+constants.OCICredentialsSecretName]["data"].(map[string]any)[".dockerconfigjson"].(string)
			dockerConfig, err := base64.StdEncoding.DecodeString(encoded)
			Expect(err).NotTo(HaveOccurred())
			Expect(dockerConfig).To(MatchJSON(`{"auths":{"registry.example.com:5000":{"registrytoken":"TOKEN"}}}`))
		})

		It("pulls anonymously without credentials", func() {
			objs := objects(Values{Config: ociConfig(fluxapi.BootstrapModeFlux), URL: "oci://registry.example.com:5000/fleet/apps"})
			Expect(objs).NotTo(HaveKey(HavePrefix("Secret/")))
			Expect(objs["OCIRepository/flux-system/shoot-flux-bootstrap"]["spec"]).NotTo(HaveKey("secretRef"))
		})
	})

	It("names the kinds of the bootstrap objects", func() {
		Expect(ObjectKinds(fluxapi.BootstrapModeFlux, true)).To(Equal([]schema.GroupVersionKind{OCIRepositoryGVK, KustomizationGVK}))
		Expect(ObjectKinds(fluxapi.BootstrapModeFlux, false)).To(Equal([]schema.GroupVersionKind{GitRepositoryGVK, KustomizationGVK}))
		Expect(ObjectKinds(fluxapi.BootstrapModeKluctl, true)).To(Equal([]schema.GroupVersionKind{KluctlDeploymentGVK}))
		Expect(ObjectKinds(fluxapi.BootstrapModeNone, true)).To(BeEmpty())
	})

	It("lists every kind of every mode in AllObjectKinds, once", func() {
		var kinds []schema.GroupVersionKind
		for _, mode := range []fluxapi.BootstrapMode{fluxapi.BootstrapModeKluctl, fluxapi.BootstrapModeFlux, fluxapi.BootstrapModeNone} {
			for _, oci := range []bool{false, true} {
				for _, gvk := range ObjectKinds(mode, oci) {
					if !slices.Contains(kinds, gvk) {
						kinds = append(kinds, gvk)
					}
				}
			}
		}
		Expect(AllObjectKinds()).To(ConsistOf(kinds))
	})

	It("refuses two objects of one kind, namespace and name instead of delivering one", func() {
		_, err := Data(Values{
			Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo",
			AdditionalSecrets: []Secret{{Name: "db", Namespace: "apps"}, {Name: "db", Namespace: "apps"}},
		})
		Expect(err).To(MatchError("duplicate bootstrap manifest secret__apps__db.yaml"))
	})

	It("refuses configurations without bootstrap", func() {
		cfg := config(fluxapi.BootstrapModeNone)
		_, err := Data(Values{Config: cfg, URL: "https://x/y"})
		Expect(err).To(MatchError(ContainSubstring(`bootstrap mode "none"`)))
		cfg.Source = nil
		_, err = Data(Values{Config: cfg})
		Expect(err).To(MatchError("bootstrap needs a configured source"))
	})

	It("is deterministic", func() {
		v := Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "ssh://git@git.example.com/org/repo", Credentials: credentials,
			AdditionalSecrets: []Secret{{Name: "a", Namespace: "x", Data: map[string][]byte{"k": []byte("v")}}, {Name: "b", Namespace: "x"}},
			Shoot:             shootInfo(), Status: &fluxv1alpha1.FluxStatus{BootstrapMode: "kluctl", Warnings: []string{"a", "b"}}}
		first, err := Data(v)
		Expect(err).NotTo(HaveOccurred())
		for range 5 {
			again, err := Data(v)
			Expect(err).NotTo(HaveOccurred())
			Expect(again).To(Equal(first))
		}
		docs, err := testutils.ExtractManifestsFromManagedResourceData(first)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Join(docs, "")).NotTo(ContainSubstring("creationTimestamp"))
	})
})
