package cmd_test

import (
	"net/http"
	"net/http/httptest"

	webhookcmd "github.com/gardener/gardener/extensions/pkg/webhook/cmd"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
)

var _ = Describe("AddToManager", func() {
	var mgr manager.Manager

	BeforeEach(func() {
		scheme := runtime.NewScheme()
		Expect(validator.AddToScheme(scheme)).To(Succeed())
		var err error
		// The webhooks never call the API server; the address is unreachable on purpose.
		mgr, err = manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
			Scheme:                 scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
		})
		Expect(err).NotTo(HaveOccurred())
	})

	switches := func(args ...string) *webhookcmd.SwitchConfig {
		GinkgoHelper()
		opts := WebhookSwitchOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		Expect(opts.Complete()).To(Succeed())
		return opts.Completed()
	}

	// served reports whether the webhook server has a handler for path.
	served := func(path string) bool {
		mux := mgr.GetWebhookServer().(*webhook.DefaultServer).WebhookMux()
		_, pattern := mux.Handler(httptest.NewRequest(http.MethodPost, path, nil))
		return pattern == path
	}

	It("serves every webhook at its path", func() {
		Expect(AddToManager(mgr, switches())).To(Succeed())
		Expect(served(validator.ShootWebhookPath)).To(BeTrue())
		Expect(served(validator.ConfigMapWebhookPath)).To(BeTrue())
	})

	It("leaves out disabled webhooks", func() {
		Expect(AddToManager(mgr, switches("--disable-webhooks="+validator.ConfigMapWebhookName))).To(Succeed())
		Expect(served(validator.ShootWebhookPath)).To(BeTrue())
		Expect(served(validator.ConfigMapWebhookPath)).To(BeFalse())
	})

	It("refuses to serve nothing", func() {
		Expect(AddToManager(mgr, switches("--disable-webhooks=*"))).To(MatchError(ContainSubstring("all webhooks are disabled")))
	})

	It("rejects unknown webhook names", func() {
		opts := WebhookSwitchOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse([]string{"--disable-webhooks=secrets"})).To(Succeed())
		Expect(opts.Complete()).To(MatchError(ContainSubstring(`cannot disable unknown webhook "secrets"`)))
	})
})
