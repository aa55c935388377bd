// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap_test

import (
	"regexp"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
)

func shootInfo() *ShootInfo {
	return &ShootInfo{
		Project: "myproject", Name: "dev", Namespace: "garden-myproject", Seed: "aws-eu1", Region: "eu-west-1",
		ProviderType: "aws", KubernetesVersion: "1.33.2", Purpose: "production", Domain: "dev.myproject.example.com",
	}
}

// The documented names: substitution variables of the Kustomization and keys of the kluctl
// argument "shoot".
var (
	shootInfoData = map[string]any{
		"SHOOT_PROJECT": "myproject", "SHOOT_NAME": "dev", "SHOOT_NAMESPACE": "garden-myproject", "SHOOT_SEED": "aws-eu1",
		"SHOOT_REGION": "eu-west-1", "SHOOT_PROVIDER_TYPE": "aws", "SHOOT_KUBERNETES_VERSION": "1.33.2",
		"SHOOT_PURPOSE": "production", "SHOOT_DOMAIN": "dev.myproject.example.com",
		// stackit's extension's key of the name, beside this extension's.
		"SHOOT_INFO_NAME": "dev",
	}
	shootInfoArg = map[string]any{
		"project": "myproject", "name": "dev", "namespace": "garden-myproject", "seed": "aws-eu1", "region": "eu-west-1",
		"providerType": "aws", "kubernetesVersion": "1.33.2", "purpose": "production", "domain": "dev.myproject.example.com",
	}
	// substitutionVariable is what kustomize-controller accepts as a variable name.
	substitutionVariable = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
)

var _ = Describe("Shoot identity", func() {
	kluctlSpec := func(objs map[string]map[string]any) map[string]any {
		GinkgoHelper()
		kd := objs["KluctlDeployment/kluctl-system/shoot-flux-bootstrap"]
		Expect(kd).NotTo(BeNil())
		return kd["spec"].(map[string]any)
	}

	It("is a ConfigMap and the kluctl argument shoot next to the user's arguments in mode kluctl", func() {
		objs := objects(Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo", Shoot: shootInfo()})
		cm := objs["ConfigMap/kluctl-system/shoot-info"]
		Expect(cm).NotTo(BeNil())
		Expect(cm["data"]).To(Equal(shootInfoData))
		Expect(cm["metadata"]).To(HaveKeyWithValue("labels", HaveKeyWithValue("app.kubernetes.io/managed-by", "gardener-extension-shoot-flux")))
		for key := range cm["data"].(map[string]any) {
			Expect(key).To(MatchRegexp(substitutionVariable.String()))
		}
		Expect(kluctlSpec(objs)["args"]).To(Equal(map[string]any{"env": "prod", "replicas": float64(3), "shoot": shootInfoArg}))
	})

	It("lets the user's arguments win", func() {
		cfg := config(fluxapi.BootstrapModeKluctl)
		cfg.Bootstrap.Kluctl.Args = &runtime.RawExtension{Raw: []byte(`{"shoot":{"name":"renamed","team":"a"}}`)}
		args := kluctlSpec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo", Shoot: shootInfo()}))["args"]
		want := map[string]any{"team": "a"}
		for k, v := range shootInfoArg {
			want[k] = v
		}
		want["name"] = "renamed"
		Expect(args).To(Equal(map[string]any{"shoot": want}))

		cfg.Bootstrap.Kluctl.Args = &runtime.RawExtension{Raw: []byte(`{"shoot":"mine","env":"dev"}`)}
		args = kluctlSpec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo", Shoot: shootInfo()}))["args"]
		Expect(args).To(Equal(map[string]any{"shoot": "mine", "env": "dev"}))
	})

	It("is the Kustomization's substitution variables in mode flux", func() {
		objs := objects(Values{Config: config(fluxapi.BootstrapModeFlux), URL: "https://git.example.com/org/repo", Shoot: shootInfo()})
		Expect(objs["ConfigMap/flux-system/shoot-info"]).To(HaveKeyWithValue("data", shootInfoData))
		ks := objs["Kustomization/flux-system/shoot-flux-bootstrap"]["spec"].(map[string]any)
		Expect(ks["postBuild"]).To(Equal(map[string]any{"substituteFrom": []any{map[string]any{"kind": "ConfigMap", "name": "shoot-info"}}}))
	})

	It("leaves out values the shoot does not have", func() {
		info := shootInfo()
		info.Domain, info.Purpose = "", ""
		objs := objects(Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo", Shoot: info})
		Expect(objs["ConfigMap/kluctl-system/shoot-info"]["data"]).NotTo(Or(HaveKey("SHOOT_DOMAIN"), HaveKey("SHOOT_PURPOSE")))
		Expect(kluctlSpec(objs)["args"]).To(HaveKeyWithValue("shoot", And(HaveKeyWithValue("name", "dev"), Not(HaveKey("domain")), Not(HaveKey("purpose")))))
	})

	It("is not delivered without identity", func() {
		for _, mode := range []fluxapi.BootstrapMode{fluxapi.BootstrapModeKluctl, fluxapi.BootstrapModeFlux} {
			objs := objects(Values{Config: config(mode), URL: "https://git.example.com/org/repo"})
			Expect(objs).NotTo(HaveKey(HaveSuffix("/shoot-info")))
			if mode == fluxapi.BootstrapModeKluctl {
				Expect(kluctlSpec(objs)["args"]).To(Equal(map[string]any{"env": "prod", "replicas": float64(3)}))
			} else {
				Expect(objs["Kustomization/flux-system/shoot-flux-bootstrap"]["spec"]).NotTo(HaveKey("postBuild"))
			}
		}
	})

	It("gives kluctl the identity as its only argument when the user has none", func() {
		cfg := config(fluxapi.BootstrapModeKluctl)
		cfg.Bootstrap.Kluctl.Args = nil
		Expect(kluctlSpec(objects(Values{Config: cfg, URL: "https://git.example.com/org/repo", Shoot: shootInfo()}))["args"]).To(Equal(map[string]any{"shoot": shootInfoArg}))
	})

	It("keeps the keys of stackit's extension beside its own in the ConfigMap, not in kluctl's argument", func() {
		info := shootInfo()
		info.ClusterIdentity, info.TechnicalID, info.GardenClusterIdentity = "shoot--myproject--dev-0a1b2c3d", "shoot--myproject--dev", "landscape-garden"
		objs := objects(Values{Config: config(fluxapi.BootstrapModeKluctl), URL: "https://git.example.com/org/repo", Shoot: info})
		Expect(objs["ConfigMap/kluctl-system/shoot-info"]["data"]).To(And(
			HaveKeyWithValue("SHOOT_INFO_NAME", "dev"),
			HaveKeyWithValue("SHOOT_INFO_CLUSTER_IDENTITY", "shoot--myproject--dev-0a1b2c3d"),
			HaveKeyWithValue("SHOOT_INFO_TECHNICAL_ID", "shoot--myproject--dev"),
			HaveKeyWithValue("SHOOT_INFO_GARDEN_CLUSTER_IDENTITY", "landscape-garden"),
			HaveKeyWithValue("SHOOT_NAME", "dev"),
		))
		Expect(kluctlSpec(objs)["args"]).To(HaveKeyWithValue("shoot", Equal(shootInfoArg)))
	})

	Describe("ShootInfoFromCluster", func() {
		cluster := func() *extensionscontroller.Cluster {
			return &extensionscontroller.Cluster{
				Shoot: &gardencorev1beta1.Shoot{
					ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "garden-myproject"},
					Spec: gardencorev1beta1.ShootSpec{
						Region:     "eu-west-1",
						Provider:   gardencorev1beta1.Provider{Type: "aws"},
						Kubernetes: gardencorev1beta1.Kubernetes{Version: "1.33.2"},
						Purpose:    ptr.To(gardencorev1beta1.ShootPurposeProduction),
						DNS:        &gardencorev1beta1.DNS{Domain: ptr.To("dev.myproject.example.com")},
						SeedName:   ptr.To("aws-eu2"),
					},
					Status: gardencorev1beta1.ShootStatus{TechnicalID: "shoot--myproject--dev", SeedName: ptr.To("aws-eu3"), ClusterIdentity: ptr.To("shoot--myproject--dev-0a1b2c3d")},
				},
				Seed: &gardencorev1beta1.Seed{ObjectMeta: metav1.ObjectMeta{Name: "aws-eu1"}},
			}
		}

		It("reads the shoot and the seed it runs on", func() {
			expected := shootInfo()
			expected.TechnicalID, expected.ClusterIdentity = "shoot--myproject--dev", "shoot--myproject--dev-0a1b2c3d"
			Expect(ShootInfoFromCluster(cluster())).To(Equal(expected))
		})

		It("falls back to the shoot's seed and leaves out what the shoot does not set", func() {
			c := cluster()
			c.Seed = nil
			c.Shoot.Spec.DNS, c.Shoot.Spec.Purpose = nil, nil
			info := ShootInfoFromCluster(c)
			Expect(info.Seed).To(Equal("aws-eu3"))
			Expect(info.Domain).To(BeEmpty())
			Expect(info.Purpose).To(BeEmpty())
			c.Shoot.Status.SeedName = nil
			Expect(ShootInfoFromCluster(c).Seed).To(Equal("aws-eu2"))
		})

		DescribeTable("names the project",
			func(namespace, technicalID, project string) {
				c := cluster()
				c.Shoot.Namespace, c.Shoot.Status.TechnicalID = namespace, technicalID
				Expect(ShootInfoFromCluster(c).Project).To(Equal(project))
			},
			// A project's namespace need not be garden-<project>.
			Entry("from the technical ID", "team-ns", "shoot--myproject--dev", "myproject"),
			Entry("of the garden namespace", "garden", "", "garden"),
			Entry("from the namespace without technical ID", "garden-other", "", "other"),
			Entry("from the namespace with a technical ID of another form", "garden-other", "shoot-other-dev", "other"),
		)
	})
})
