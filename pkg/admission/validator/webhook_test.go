package validator_test

import (
	"context"
	"encoding/json"
	"net/http"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
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
			wh, err = NewShootWebhook(mgr, defaultHosts, defaultLimits)
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
			shoot := withTypeMeta(newShoot(`{"flux": {"version": "` + versions.Flux[len(versions.Flux)-1] + `"}, "kluctl": {"version": "` + versions.Kluctl[0] + `"}}`))
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
			wh, err = NewConfigMapWebhook(mgr, defaultHosts, defaultLimits)
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
})
