// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cmd_test

import (
	"net/http"
	"net/http/httptest"
	"time"

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
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
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
		hosts := &HostPolicyOptions{}
		limits := NewLimitsOptions()
		opts := WebhookSwitchOptions(hosts, limits, NewReleasesOptions())
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		hosts.AddFlags(fs)
		limits.AddFlags(fs)
		opts.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		Expect(hosts.Complete()).To(Succeed())
		Expect(limits.Complete()).To(Succeed())
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
		opts := WebhookSwitchOptions(&HostPolicyOptions{}, NewLimitsOptions(), NewReleasesOptions())
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse([]string{"--disable-webhooks=secrets"})).To(Succeed())
		Expect(opts.Complete()).To(MatchError(ContainSubstring(`cannot disable unknown webhook "secrets"`)))
	})
})

var _ = Describe("HostPolicyOptions", func() {
	complete := func(args ...string) (*HostPolicyOptions, error) {
		GinkgoHelper()
		opts := &HostPolicyOptions{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		return opts, opts.Complete()
	}

	It("has the controller's defaults", func() {
		opts, err := complete()
		Expect(err).NotTo(HaveOccurred())
		defaults, err := hostpolicy.New(nil, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(opts.Completed()).To(Equal(defaults))
	})

	It("parses allowed networks and ports like the controller", func() {
		opts, err := complete("--host-policy-allowed-networks=10.20.0.0/16,fd00::/8", "--host-policy-allowed-ports=22,1024-65535")
		Expect(err).NotTo(HaveOccurred())
		policy := opts.Completed()
		Expect(policy.CheckHost("10.20.1.1", 2200)).To(Succeed())
		Expect(policy.CheckHost("fd00::1", 22)).To(Succeed())
		Expect(policy.CheckHost("10.21.1.1", 22)).To(MatchError(hostpolicy.ErrDenied))
		Expect(policy.CheckHost("git.example.com", 443)).To(MatchError(hostpolicy.ErrDenied))
	})

	DescribeTable("rejects invalid values",
		func(arg, message string) {
			_, err := complete(arg)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("network", "--host-policy-allowed-networks=10.0.0.0/33", `invalid allowed network "10.0.0.0/33"`),
		Entry("port", "--host-policy-allowed-ports=0", `invalid port or port range "0"`),
	)
})

var _ = Describe("LimitsOptions", func() {
	complete := func(args ...string) (*LimitsOptions, error) {
		GinkgoHelper()
		opts := NewLimitsOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		return opts, opts.Complete()
	}

	It("has the controller's defaults", func() {
		opts, err := complete()
		Expect(err).NotTo(HaveOccurred())
		Expect(opts.Completed()).To(Equal(configv1alpha1.DefaultLimits()))
	})

	It("takes every limit the admission checks from a flag", func() {
		opts, err := complete("--limits-project-config-map-max-bytes=1000", "--limits-project-config-max-bytes=900",
			"--limits-kluctl-args-max-bytes=800", "--limits-controllers-max-bytes=700", "--limits-additional-secret-resources-max-count=3")
		Expect(err).NotTo(HaveOccurred())
		l := opts.Completed()
		Expect([]int32{l.ProjectConfigMapMaxBytes, l.ProjectConfigMaxBytes, l.KluctlArgsMaxBytes, l.ControllersMaxBytes, l.AdditionalSecretResourcesMaxCount}).
			To(Equal([]int32{1000, 900, 800, 700, 3}))
	})

	It("rejects a limit that is not positive", func() {
		_, err := complete("--limits-kluctl-args-max-bytes=0")
		Expect(err).To(MatchError("--limits-kluctl-args-max-bytes must be positive, got 0"))
	})
})

var _ = Describe("ReleasesOptions", func() {
	complete := func(args ...string) (*ReleasesOptions, error) {
		GinkgoHelper()
		opts := NewReleasesOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(args)).To(Succeed())
		return opts, opts.Complete()
	}
	embedded := manifests.SupportedVersions()

	It("has every embedded release supported without the flag", func() {
		opts, err := complete()
		Expect(err).NotTo(HaveOccurred())
		for _, release := range embedded.Flux {
			Expect(opts.Completed().Flux().Classification(release)).To(Equal(config.ReleaseSupported))
			Expect(opts.Completed().Flux().Expired(release, time.Now())).To(BeFalse())
		}
	})

	It("takes the controller's rollout.releases as JSON, defaulted as the controller defaults it", func() {
		opts, err := complete(`--rollout-releases={"flux":[{"version":"` + embedded.Flux[0] + `","expirationDate":"2020-01-01T00:00:00Z"}]}`)
		Expect(err).NotTo(HaveOccurred())
		flux := opts.Completed().Flux()
		Expect(flux.Classification(embedded.Flux[0])).To(Equal(config.ReleaseSupported))
		Expect(flux.Expired(embedded.Flux[0], time.Now())).To(BeTrue())
	})

	DescribeTable("rejects a bad lifecycle, naming the field",
		func(value, message string) {
			_, err := complete("--rollout-releases=" + value)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("unknown field", `{"flux":[{"version":"v2.9.5","state":"old"}]}`, `--rollout-releases: failed decoding releases: json: unknown field "state"`),
		Entry("not JSON", `flux: []`, "--rollout-releases: failed decoding releases"),
		Entry("a release that is not embedded", `{"flux":[{"version":"v2.0.0"}]}`, `--rollout-releases: rollout.releases.flux[0].version: Unsupported value: "v2.0.0"`),
		Entry("a classification", `{"kluctl":[{"version":"v2.28.2","classification":"old"}]}`, `rollout.releases.kluctl[0].classification: Unsupported value: "old"`),
		Entry("an expiration nothing replaces", `{"kluctl":[{"version":"`+manifests.NewestKluctlVersion()+`","expirationDate":"2020-01-01T00:00:00Z"}]}`,
			"rollout.releases.kluctl[0].expirationDate: Invalid value"),
	)
})
