// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cmd_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
)

var _ = Describe("Options", func() {
	Describe("GardenOptions", func() {
		It("keeps the token file of gardenlet's injected kubeconfig instead of caching the token", func() {
			dir := GinkgoT().TempDir()
			tokenFile := filepath.Join(dir, "token")
			Expect(os.WriteFile(tokenFile, []byte("first"), 0o600)).To(Succeed())
			kubeconfig := filepath.Join(dir, "kubeconfig")
			Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: garden
  cluster:
    server: https://garden.example.com
contexts:
- name: garden
  context: {cluster: garden, user: extension}
current-context: garden
users:
- name: extension
  user:
    tokenFile: `+tokenFile+`
`), 0o600)).To(Succeed())

			opts := &GardenOptions{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			opts.AddFlags(fs)
			Expect(fs.Parse([]string{"--garden-kubeconfig=" + kubeconfig})).To(Succeed())
			Expect(opts.Complete()).To(Succeed())

			cfg := opts.Completed()
			Expect(cfg.Host).To(Equal("https://garden.example.com"))
			// client-go re-reads BearerTokenFile (cached for a minute) on requests, so the renewed
			// token is picked up; a config with only BearerToken would keep the first token forever.
			Expect(cfg.BearerTokenFile).To(Equal(tokenFile))
		})

		It("defaults to $GARDEN_KUBECONFIG", func() {
			GinkgoT().Setenv(EnvGardenKubeconfig, "/var/run/secrets/gardener.cloud/garden/generic-kubeconfig/kubeconfig")
			opts := &GardenOptions{}
			opts.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
			Expect(opts.Kubeconfig).To(Equal("/var/run/secrets/gardener.cloud/garden/generic-kubeconfig/kubeconfig"))
		})

		It("requires a garden kubeconfig", func() {
			GinkgoT().Setenv(EnvGardenKubeconfig, "")
			opts := &GardenOptions{}
			opts.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError))
			Expect(opts.Complete()).To(MatchError(ContainSubstring("--garden-kubeconfig or $GARDEN_KUBECONFIG is required")))
		})
	})

	Describe("ClientOptions", func() {
		parse := func(args ...string) (*ClientOptions, error) {
			opts := NewClientOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			opts.AddFlags(fs)
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			return opts, opts.Complete()
		}

		It("raises client-go's default limits and replaces a rate limiter", func() {
			opts, err := parse()
			Expect(err).NotTo(HaveOccurred())
			// client-go's default of 5 requests per second would throttle a seed with many shoots.
			cfg := opts.Apply(&rest.Config{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()})
			Expect(cfg.QPS).To(Equal(DefaultClientQPS))
			Expect(cfg.Burst).To(Equal(DefaultClientBurst))
			Expect(cfg.RateLimiter).To(BeNil())
		})

		It("takes the limits from flags", func() {
			opts, err := parse("--client-qps=250", "--client-burst=400")
			Expect(err).NotTo(HaveOccurred())
			cfg := opts.Apply(&rest.Config{QPS: 5, Burst: 10})
			Expect(cfg.QPS).To(BeEquivalentTo(250))
			Expect(cfg.Burst).To(Equal(400))
		})

		It("rejects limits that would stop all requests", func() {
			_, err := parse("--client-qps=0")
			Expect(err).To(MatchError(ContainSubstring("--client-qps must be positive")))
			_, err = parse("--client-burst=0")
			Expect(err).To(MatchError(ContainSubstring("--client-burst must be at least 1")))
		})
	})

	Describe("ConfigOptions", func() {
		It("uses the defaults without a file and rejects an invalid file", func() {
			opts := &ConfigOptions{}
			Expect(opts.Complete()).To(Succeed())
			Expect(opts.Completed().DefaultFluxVersion).To(Equal("v2.9"))

			file := filepath.Join(GinkgoT().TempDir(), "config.yaml")
			Expect(os.WriteFile(file, []byte("apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1\nkind: ControllerConfiguration\nsshKey:\n  algorithm: dsa\n"), 0o600)).To(Succeed())
			opts = &ConfigOptions{ConfigLocation: file}
			Expect(opts.Complete()).To(MatchError(ContainSubstring("sshKey.algorithm")))
		})

		It("stops the start when the image pull secret is missing or no .dockerconfigjson", func() {
			dir := GinkgoT().TempDir()
			pull := filepath.Join(dir, ".dockerconfigjson")
			file := filepath.Join(dir, "config.yaml")
			Expect(os.WriteFile(file, []byte("imagePullSecretFile: "+pull+"\n"), 0o600)).To(Succeed())
			opts := &ConfigOptions{ConfigLocation: file}
			Expect(opts.Complete()).To(MatchError(os.ErrNotExist))

			Expect(os.WriteFile(pull, []byte(`{"registry.example.com":{"auth":"eDp5"}}`), 0o600)).To(Succeed())
			Expect(opts.Complete()).To(MatchError(ContainSubstring(`has no registry in "auths"`)))

			Expect(os.WriteFile(pull, []byte(`{"auths":{"registry.example.com":{"auth":"eDp5"}}}`), 0o600)).To(Succeed())
			Expect(opts.Complete()).To(Succeed())
			Expect(opts.Completed().ImagePullSecretFile).To(Equal(pull))
		})
	})
})

var _ = Describe("ProfilingOptions", func() {
	It("serves nothing by default and passes an address to the manager", func() {
		opts := &ProfilingOptions{}
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		opts.AddFlags(fs)
		Expect(fs.Parse(nil)).To(Succeed())
		Expect(opts.Complete()).To(Succeed())
		mgrOpts := manager.Options{PprofBindAddress: "stale"}
		opts.Apply(&mgrOpts)
		Expect(mgrOpts.PprofBindAddress).To(BeEmpty())

		Expect(fs.Parse([]string{"--pprof-bind-address=127.0.0.1:6060"})).To(Succeed())
		Expect(opts.Complete()).To(Succeed())
		opts.Apply(&mgrOpts)
		Expect(mgrOpts.PprofBindAddress).To(Equal("127.0.0.1:6060"))
	})

	It("rejects an address without a port", func() {
		opts := &ProfilingOptions{PprofBindAddress: "localhost"}
		Expect(opts.Complete()).To(MatchError(ContainSubstring("--pprof-bind-address")))
	})

	DescribeTable("serves only on loopback addresses unless allowed, with a warning",
		func(address string, loopback bool) {
			opts := &ProfilingOptions{PprofBindAddress: address}
			if loopback {
				Expect(opts.Complete()).To(Succeed())
				Expect(opts.Warning()).To(BeEmpty())
				return
			}
			Expect(opts.Complete()).To(MatchError(ContainSubstring("is not a loopback address")))
			opts.AllowNonLoopback = true
			Expect(opts.Complete()).To(Succeed())
			Expect(opts.Warning()).To(ContainSubstring("deploy keys included"))
		},
		Entry("IPv4 loopback", "127.0.0.1:6060", true),
		Entry("IPv6 loopback", "[::1]:6060", true),
		Entry("localhost", "localhost:6060", true),
		Entry("all interfaces", ":6060", false),
		Entry("all IPv4 interfaces", "0.0.0.0:6060", false),
		Entry("a pod address", "10.1.2.3:6060", false),
	)
})
