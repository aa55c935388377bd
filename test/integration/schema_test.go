// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// The bootstrap KluctlDeployment is written from hand-declared types (the kluctl Go API does not
// build with this module's dependencies), so every option must be checked against the real CRD.
var _ = Describe("Rendered KluctlDeployment", Ordered, func() {
	var h *sandbox.ShootHandle

	BeforeAll(func(ctx SpecContext) {
		project := "schema"
		setProjectConfig(ctx, newProject(ctx, project), legacyConfig(publicURL, "main", "public"))
		h = createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one"})
		expectControllers(ctx, h, true)
	})

	It("was applied by the resource manager into the shoot", func(ctx SpecContext) {
		Expect(appliedManagedResource(ctx, h, constants.ManagedResourceBootstrap)).To(Succeed())
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "source", "git", "url")).To(Equal(publicURL))
	})

	// dryRunCreate creates obj in the shoot as a server-side dry run with strict field validation,
	// so that unknown fields fail instead of being pruned. The name differs from the delivered
	// object's, which exists.
	dryRunCreate := func(ctx SpecContext, obj *unstructured.Unstructured) error {
		obj = obj.DeepCopy()
		obj.SetName("dry-run")
		return h.Shoot.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
	}

	DescribeTable("is accepted by the CRD schema",
		func(ctx SpecContext, providerConfig string, withCredentials, withDecryption bool, check func(*unstructured.Unstructured)) {
			kd := renderKluctlDeployment(providerConfig, withCredentials, withDecryption)
			check(kd)
			Expect(dryRunCreate(ctx, kd)).To(Succeed())
		},
		Entry("defaults", `{"source":{"url":"https://git.example.com/fleet.git"}}`, false, false,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "interval")).To(Equal("5m0s"))
				Expect(nestedString(kd, "spec", "source", "git", "ref", "branch")).To(Equal("main"))
			}),
		Entry("args, target and context", `{"source":{"url":"https://git.example.com/fleet.git"},
			"bootstrap":{"kluctl":{"target":"prod","context":"admin","args":{"cluster":{"zones":["a","b"],"size":3},"debug":true}}}}`, false, false,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "target")).To(Equal("prod"))
				Expect(nestedString(kd, "spec", "context")).To(Equal("admin"))
				zones, _, _ := unstructured.NestedStringSlice(kd.Object, "spec", "args", "cluster", "zones")
				Expect(zones).To(Equal([]string{"a", "b"}))
			}),
		Entry("interval, retry interval and timeout", `{"source":{"url":"https://git.example.com/fleet.git"},
			"bootstrap":{"kluctl":{"interval":"1m","retryInterval":"30s","timeout":"10m"}}}`, false, false,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "retryInterval")).To(Equal("30s"))
				Expect(nestedString(kd, "spec", "timeout")).To(Equal("10m0s"))
			}),
		Entry("SOPS decryption", `{"source":{"url":"https://git.example.com/fleet.git"},
			"bootstrap":{"kluctl":{"decryption":{"secretResourceName":"sops"}}}}`, false, true,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "decryption", "provider")).To(Equal("sops"))
				Expect(nestedString(kd, "spec", "decryption", "secretRef", "name")).To(Equal(constants.DecryptionSecretName))
			}),
		Entry("dry run, prune and delete", `{"source":{"url":"https://git.example.com/fleet.git"},
			"bootstrap":{"kluctl":{"dryRun":true,"prune":true,"delete":true}}}`, false, false,
			func(kd *unstructured.Unstructured) {
				dryRun, _, _ := unstructured.NestedBool(kd.Object, "spec", "dryRun")
				Expect(dryRun).To(BeTrue())
			}),
		Entry("ssh credentials and a commit", `{"source":{"url":"ssh://git@git.example.com:2222/fleet.git",
			"ref":{"commit":"0123456789abcdef0123456789abcdef01234567"}}}`, true, false,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "source", "git", "ref", "commit")).To(Equal("0123456789abcdef0123456789abcdef01234567"))
				creds, _, _ := unstructured.NestedSlice(kd.Object, "spec", "credentials", "git")
				Expect(creds).To(HaveLen(1))
			}),
		Entry("a tag and a path", `{"source":{"url":"https://git.example.com/fleet.git","ref":{"tag":"v1.0.0"},"path":"clusters/prod"}}`, false, false,
			func(kd *unstructured.Unstructured) {
				Expect(nestedString(kd, "spec", "source", "git", "ref", "tag")).To(Equal("v1.0.0"))
				Expect(nestedString(kd, "spec", "source", "git", "path")).To(Equal("clusters/prod"))
			}),
	)

	It("rejects what the CRD schema does not allow, so the dry runs above are meaningful", func(ctx SpecContext) {
		kd := renderKluctlDeployment(`{"source":{"url":"https://git.example.com/fleet.git"}}`, false, false)
		Expect(dryRunCreate(ctx, kd)).To(Succeed())

		unknown := kd.DeepCopy()
		Expect(unstructured.SetNestedField(unknown.Object, "x", "spec", "notAField")).To(Succeed())
		Expect(dryRunCreate(ctx, unknown)).To(MatchError(ContainSubstring("notAField")))

		badInterval := kd.DeepCopy()
		Expect(unstructured.SetNestedField(badInterval.Object, "every now and then", "spec", "interval")).To(Succeed())
		Expect(dryRunCreate(ctx, badInterval)).To(MatchError(ContainSubstring("spec.interval")))
	})
})

// renderKluctlDeployment renders the bootstrap KluctlDeployment for a providerConfig the way the
// extension does, without a project ConfigMap.
func renderKluctlDeployment(providerConfig string, withCredentials, withDecryption bool) *unstructured.Unstructured {
	GinkgoHelper()
	cfg := sb.ExtensionConfig()
	resolved, err := fluxconfig.Resolve(fluxconfig.Defaults{FluxVersion: cfg.DefaultFluxVersion, KluctlVersion: cfg.DefaultKluctlVersion},
		manifests.SupportedVersions(), sshkey.DefaultKnownHostsLimits(), nil, &runtime.RawExtension{Raw: compactJSON(providerConfig)})
	Expect(err).NotTo(HaveOccurred())
	url, err := helper.ParseGitURL(resolved.Source.URL)
	Expect(err).NotTo(HaveOccurred())

	values := bootstrap.Values{Config: resolved, URL: url.String()}
	if withCredentials {
		values.Credentials = &bootstrap.Credentials{Host: url.CredentialsHost(), Data: map[string][]byte{
			constants.SecretKeyIdentity:   []byte("not a key, the schema does not look into Secrets"),
			constants.SecretKeyKnownHosts: []byte("[git.example.com]:2222 ssh-ed25519 AAAA"),
		}}
	}
	if withDecryption {
		values.Decryption = map[string][]byte{"identity.agekey": []byte("AGE-SECRET-KEY-1")}
	}
	data, err := bootstrap.Data(values)
	Expect(err).NotTo(HaveOccurred())

	objects, err := managedresource.ObjectsOfData(data)
	Expect(err).NotTo(HaveOccurred())
	var found []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GroupVersionKind() == kluctlDeploymentGVK {
			found = append(found, obj)
		}
	}
	Expect(found).To(HaveLen(1))
	return found[0]
}

func compactJSON(s string) []byte {
	GinkgoHelper()
	var v any
	Expect(json.Unmarshal([]byte(s), &v)).To(Succeed())
	return mustJSON(v)
}
