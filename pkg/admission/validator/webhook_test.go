// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// The webhooks run through gardener's admission handler, which decodes the request with the
// manager's scheme and turns a validation error into a denial.
var _ = Describe("Webhooks", func() {
	var (
		ctx = context.Background()
		mgr manager.Manager
	)

	BeforeEach(func() {
		scheme := runtime.NewScheme()
		Expect(AddToScheme(scheme)).To(Succeed())
		var err error
		// The webhooks never call the API server; the address is unreachable on purpose.
		mgr, err = manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
	})

	request := func(obj, old client.Object, gvk metav1.GroupVersionKind, operation admissionv1.Operation) admission.Request {
		GinkgoHelper()
		raw, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID:       "uid",
			Kind:      gvk,
			Operation: operation,
			Namespace: obj.GetNamespace(),
			Name:      obj.GetName(),
			Object:    runtime.RawExtension{Raw: raw},
		}}
		if old != nil {
			req.OldObject.Raw, err = json.Marshal(old)
			Expect(err).NotTo(HaveOccurred())
		}
		return req
	}

	shootGVK := metav1.GroupVersionKind{Group: "core.gardener.cloud", Version: "v1beta1", Kind: "Shoot"}
	configMapGVK := metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

	withTypeMeta := func(shoot *gardencorev1beta1.Shoot) *gardencorev1beta1.Shoot {
		shoot.TypeMeta = metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"}
		return shoot
	}

	Describe("Shoot webhook", func() {
		var wh *extensionswebhook.Webhook

		BeforeEach(func() {
			var err error
			wh, err = NewShootWebhook(mgr, defaultHosts, defaultLimits, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(wh.Path).To(Equal(ShootWebhookPath))
			Expect(wh.Action).To(Equal(extensionswebhook.ActionValidating))
		})

		It("denies an invalid providerConfig with a 403 and the field path", func() {
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "v0.1.0"}}`))
			resp := wh.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusForbidden))
			Expect(resp.Result.Message).To(ContainSubstring(`spec.extensions[1].providerConfig.flux.version: Unsupported value: "v0.1.0"`))
		})

		It("checks against the releases this build ships", func() {
			versions := manifests.SupportedVersions()
			Expect(versions.Flux).NotTo(BeEmpty())
			Expect(versions.Kluctl).NotTo(BeEmpty())
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + manifests.NewestFluxVersion() + `"}, "kluctl": {"version": "` + versions.Kluctl[0] + `"}}`))
			resp := wh.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		})

		It("passes the old object on updates", func() {
			old := withTypeMeta(newShoot(`{"flux": {"version": "v0.1.0"}}`))
			shoot := old.DeepCopy()
			shoot.Labels = map[string]string{"team": "platform"}
			resp := wh.Webhook.Handle(ctx, request(shoot, old, shootGVK, admissionv1.Update))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		})

		It("rejects requests of other kinds", func() {
			resp := wh.Webhook.Handle(ctx, request(projectConfigMap(nil), nil, configMapGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusBadRequest))
		})
	})

	Describe("ConfigMap webhook", func() {
		var wh *extensionswebhook.Webhook

		BeforeEach(func() {
			var err error
			wh, err = NewConfigMapWebhook(mgr, defaultHosts, defaultLimits, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(wh.Path).To(Equal(ConfigMapWebhookPath))
		})

		It("denies an invalid project ConfigMap with a 403 and the key", func() {
			cm := projectConfigMap(map[string]string{"repositoryUrl": "ftp://example.com/repo"})
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			resp := wh.Webhook.Handle(ctx, request(cm, nil, configMapGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusForbidden))
			Expect(resp.Result.Message).To(ContainSubstring(`repositoryUrl: Invalid value: "ftp://example.com/repo"`))
		})

		It("admits a valid project ConfigMap", func() {
			cm := projectConfigMap(legacyData())
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			cm.Data["fluxVersion"] = manifests.SupportedVersions().Flux[0]
			resp := wh.Webhook.Handle(ctx, request(cm, nil, configMapGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
		})
	})

	// The embedded Flux releases are v2.7.5 and v2.9.5 (pkg/manifests/flux); the lifecycle lets the
	// older one expire, or only deprecates it.
	Describe("release lifecycle", func() {
		var (
			shootWH, configMapWH *extensionswebhook.Webhook
			older, newer         string
		)

		lifecycleWith := func(l config.ReleaseLifecycle) *releases.Lifecycle {
			return releases.New(config.Releases{Flux: []config.ReleaseLifecycle{l}}, manifests.SupportedVersions())
		}

		build := func(l *releases.Lifecycle) {
			var err error
			shootWH, err = NewShootWebhook(mgr, defaultHosts, defaultLimits, l)
			Expect(err).NotTo(HaveOccurred())
			configMapWH, err = NewConfigMapWebhook(mgr, defaultHosts, defaultLimits, l)
			Expect(err).NotTo(HaveOccurred())
		}

		BeforeEach(func() {
			flux := manifests.SupportedVersions().Flux
			Expect(len(flux)).To(BeNumerically(">=", 2))
			older, newer = flux[0], flux[len(flux)-1]
			expired := metav1.NewTime(time.Now().Add(-24 * time.Hour))
			build(lifecycleWith(config.ReleaseLifecycle{Version: older, Classification: config.ReleaseDeprecated, ExpirationDate: &expired}))
		})

		minor := func(release string) string { return semver.MajorMinor(release) }

		It("denies a new selection of an expired release, naming the field and the supported releases", func() {
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + minor(older) + `"}}`))
			resp := shootWH.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Code).To(BeEquivalentTo(http.StatusForbidden))
			Expect(resp.Result.Message).To(ContainSubstring(`spec.extensions[1].providerConfig.flux.version: Invalid value: "` + minor(older) +
				`": selects Flux ` + older + `, which expired on`))
			Expect(resp.Result.Message).To(ContainSubstring("select a supported release: " + minor(newer) + ", " + newer))
			Expect(resp.Warnings).To(BeEmpty())
		})

		It("keeps admitting a shoot that selected it before it expired, with a warning", func() {
			old := withTypeMeta(newShoot(`{"flux": {"version": "` + older + `"}}`))
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + minor(older) + `"}, "bootstrap": {"mode": "none"}}`))
			resp := shootWH.Webhook.Handle(ctx, request(shoot, old, shootGVK, admissionv1.Update))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ConsistOf(MatchRegexp(`^spec\.extensions\[1\]\.providerConfig\.flux\.version selects Flux ` +
				regexp.QuoteMeta(older) + `, which expired on [0-9-]+; shoots on it are moved to ` + regexp.QuoteMeta(newer) + ` in their maintenance time window$`)))
		})

		It("warns about a deprecated release without denying it", func() {
			build(lifecycleWith(config.ReleaseLifecycle{Version: older, Classification: config.ReleaseDeprecated}))
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + older + `"}}`))
			resp := shootWH.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ConsistOf("spec.extensions[1].providerConfig.flux.version selects Flux " + older + ", which is deprecated"))
		})

		It("says nothing about a supported release", func() {
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + newer + `"}}`))
			resp := shootWH.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(BeEmpty())
		})

		It("applies the same rules to a project ConfigMap, naming the key", func() {
			cm := projectConfigMap(legacyData())
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			cm.Data["fluxVersion"] = strings.TrimPrefix(minor(older), "v") + ".x"
			resp := configMapWH.Webhook.Handle(ctx, request(cm, nil, configMapGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring(`data[fluxVersion]: Invalid value: "` + cm.Data["fluxVersion"] + `": selects Flux ` + older))

			By("a change of another key of a ConfigMap that selected it before")
			old := cm.DeepCopy()
			cm.Data["repositoryBranch"] = "release"
			resp = configMapWH.Webhook.Handle(ctx, request(cm, old, configMapGVK, admissionv1.Update))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ConsistOf(HavePrefix("data[fluxVersion] selects Flux " + older + ", which expired on")))

			By("config.yaml")
			cm = projectConfigMap(map[string]string{"config.yaml": "flux:\n  version: " + older + "\n"})
			cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
			resp = configMapWH.Webhook.Handle(ctx, request(cm, nil, configMapGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring(`data[config.yaml].flux.version: Invalid value: "` + older + `"`))
		})
	})

	// The embedded Flux releases are v2.7.5 (Kubernetes 1.32 to 1.34) and v2.9.5 (1.34.1 to 1.36).
	Describe("stackit's providerConfig and the Kubernetes ranges", func() {
		var wh *extensionswebhook.Webhook

		BeforeEach(func() {
			var err error
			wh, err = NewShootWebhook(mgr, defaultHosts, defaultLimits, nil)
			Expect(err).NotTo(HaveOccurred())
		})

		onKubernetes := func(providerConfig, version string) *gardencorev1beta1.Shoot {
			shoot := withTypeMeta(newShoot(providerConfig))
			shoot.Spec.Kubernetes.Version = version
			return shoot
		}

		It("admits stackit's providerConfig with a warning that names the native equivalent", func() {
			shoot := onKubernetes(`{"apiVersion": "flux.extensions.gardener.cloud/v1alpha1", "kind": "FluxConfig",
  "flux": {"version": "v2.9.5", "registry": "ghcr.io/fluxcd"},
  "source": {"template": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
    "spec": {"url": "https://github.com/fluxcd/flux2-kustomize-helm-example", "ref": {"branch": "main"}}}},
  "kustomization": {"template": {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "spec": {"path": "clusters/production"}}}}`, "1.35.2")
			resp := wh.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ContainElement("spec.extensions[1].providerConfig is stackit's FluxConfig (it sets apiVersion flux.extensions.gardener.cloud/v1alpha1); " +
				"it is converted into this extension's FluxConfig, which the Extension's status.providerStatus.nativeProviderConfig shows: write that instead"))
		})

		It("admits stackit's example/shoot.yaml, which pins v2.6.1 and asks for the image automation controllers, warning about both fields", func() {
			shoot := onKubernetes(`{"apiVersion": "flux.extensions.gardener.cloud/v1alpha1", "kind": "FluxConfig",
  "flux": {"version": "v2.6.1", "registry": "ghcr.io/fluxcd", "componentsExtra": ["image-reflector-controller", "image-automation-controller"]},
  "source": {"template": {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
    "spec": {"url": "https://github.com/fluxcd/flux2-kustomize-helm-example", "ref": {"branch": "main"}}}},
  "kustomization": {"template": {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "spec": {"path": "clusters/production"}}}}`, "1.33.4")
			resp := wh.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ContainElement(HavePrefix("spec.extensions[1].providerConfig flux.version: v2.6.1 is not a Flux release this extension embeds")))
			Expect(resp.Warnings).To(ContainElement(HavePrefix("spec.extensions[1].providerConfig flux.componentsExtra: this extension does not deliver image-reflector-controller")))
		})

		It("denies stackit's providerConfig with a field it cannot honour, naming it", func() {
			shoot := onKubernetes(`{"apiVersion": "flux.extensions.gardener.cloud/v1alpha1", "kind": "FluxConfig",
  "source": {"template": {"spec": {"url": "https://github.com/o/r", "ref": {"branch": "main"}, "recurseSubmodules": true}}},
  "kustomization": {"template": {"spec": {"path": "./"}}}}`, "1.35.2")
			resp := wh.Webhook.Handle(ctx, request(shoot, nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring("spec.extensions[1].providerConfig.source.template.spec.recurseSubmodules: Forbidden: is not supported by this extension's bootstrap objects"))
		})

		It("admits stackit's ignore rules, substitution and patches, and denies a patch over its bound, naming stackit's field", func() {
			doc := func(patch string) string {
				return `{"apiVersion": "flux.extensions.gardener.cloud/v1alpha1", "kind": "FluxConfig",
  "source": {"template": {"spec": {"url": "https://github.com/o/r", "ref": {"branch": "main"}, "ignore": "/*\n!/deploy"}}},
  "kustomization": {"template": {"spec": {"path": "./", "postBuild": {"substitute": {"CLUSTER": "prod"}, "substituteFrom": [{"kind": "Secret", "name": "vars"}]},
    "patches": [{"patch": "a"}, {"patch": "b"}, {"patch": "c"}, {"patch": "` + patch + `"}]}}}}`
			}
			resp := wh.Webhook.Handle(ctx, request(onKubernetes(doc("kind: ConfigMap"), "1.35.2"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			resp = wh.Webhook.Handle(ctx, request(onKubernetes(doc(strings.Repeat("p", 16385)), "1.35.2"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring("spec.extensions[1].providerConfig.kustomization.template.spec.patches[3].patch: Too long: has 16385 bytes, more than 16384"))
		})

		It("admits stackit's source provider, certificate Secret and verification, warning about the Secret, and denies an identity over its bound, naming stackit's field", func() {
			doc := func(subject string) string {
				return `{"apiVersion": "flux.extensions.gardener.cloud/v1alpha1", "kind": "FluxConfig",
  "source": {"ociRepository": {"template": {"spec": {"url": "oci://ghcr.io/acme/fleet", "ref": {"tag": "v1"}, "provider": "aws", "certSecretRef": {"name": "registry-ca"},
    "verify": {"provider": "cosign", "matchOIDCIdentity": [{"issuer": "^https://token.actions.githubusercontent.com$", "subject": "` + subject + `"}]}}}}},
  "kustomization": {"template": {"spec": {"path": "./"}}}}`
			}
			resp := wh.Webhook.Handle(ctx, request(onKubernetes(doc("^https://github.com/acme/.*$"), "1.35.2"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ContainElement(HavePrefix("spec.extensions[1].providerConfig source.ociRepository.template.spec.certSecretRef: " +
				"no entry of additionalSecretResources delivers the Secret registry-ca")))
			resp = wh.Webhook.Handle(ctx, request(onKubernetes(doc(strings.Repeat("s", 1025)), "1.35.2"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring("spec.extensions[1].providerConfig.source.ociRepository.template.spec.verify.matchOIDCIdentity[0].subject: Too long: has 1025 bytes, more than 1024"))
		})

		It("denies a new selection outside the shoot's Kubernetes range, naming the range and the fix", func() {
			resp := wh.Webhook.Handle(ctx, request(onKubernetes(`{"flux": {"version": "v2.9"}}`, "1.33.4"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeFalse())
			Expect(resp.Result.Message).To(ContainSubstring(`spec.extensions[1].providerConfig.flux.version: Invalid value: "v2.9": selects Flux v2.9.5, ` +
				`which supports Kubernetes 1.34.1 to 1.36, not the shoot's 1.33.4; select flux.version v2.7, which supports it`))

			By("a selection in range")
			resp = wh.Webhook.Handle(ctx, request(onKubernetes(`{"flux": {"version": "v2.7"}}`, "1.33.4"), nil, shootGVK, admissionv1.Create))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(BeEmpty())
		})

		It("warns on a Kubernetes upgrade that leaves the range of the selected release", func() {
			old := onKubernetes(`{"flux": {"version": "v2.7"}}`, "1.34.3")
			shoot := onKubernetes(`{"flux": {"version": "v2.7"}}`, "1.35.0")
			resp := wh.Webhook.Handle(ctx, request(shoot, old, shootGVK, admissionv1.Update))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ConsistOf("spec.extensions[1].providerConfig.flux.version selects Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, " +
				"not the shoot's 1.35.0; select flux.version v2.9, which supports it; the extension keeps the installed Flux release until the selection fits"))

			By("an upgrade beyond every embedded release without a selection")
			old, shoot = onKubernetes("", "1.36.1"), onKubernetes("", "1.37.0")
			resp = wh.Webhook.Handle(ctx, request(shoot, old, shootGVK, admissionv1.Update))
			Expect(resp.Allowed).To(BeTrue(), "%v", resp.Result)
			Expect(resp.Warnings).To(ConsistOf("no embedded Flux release supports Kubernetes 1.37.0 (v2.7.5: Kubernetes 1.32 to 1.34, " +
				"v2.9.5: Kubernetes 1.34.1 to 1.36); the extension keeps the installed Flux release"))
		})
	})
})
