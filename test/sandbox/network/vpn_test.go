// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package network

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apiserver/pkg/server/egressselector"
)

var _ = Describe("The VPN stand-in", func() {
	It("takes kube-apiserver's cluster egress to the pods' listeners and refuses other addresses", func(ctx SpecContext) {
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") }))
		defer backend.Close()
		v, err := StartVPN(logr.Discard(), "test")
		Expect(err).NotTo(HaveOccurred())
		defer func() { Expect(v.Close()).To(Succeed()) }()
		ip, err := v.AddPod("ns/pod", map[int32]string{8080: backend.Listener.Addr().String()})
		Expect(err).NotTo(HaveOccurred())
		Expect(PodNetwork.Contains(ip)).To(BeTrue())

		// kube-apiserver's own code reads the file and dials.
		data, err := os.ReadFile(v.EgressSelectorConfigFile())
		Expect(err).NotTo(HaveOccurred())
		cfg, err := egressselector.ReadEgressSelectorConfiguration(v.EgressSelectorConfigFile())
		Expect(err).NotTo(HaveOccurred(), string(data))
		Expect(egressselector.ValidateEgressSelectorConfiguration(cfg)).To(BeEmpty())
		selector, err := egressselector.NewEgressSelector(cfg)
		Expect(err).NotTo(HaveOccurred())
		dial, err := selector.Lookup(egressselector.Cluster.AsNetworkContext())
		Expect(err).NotTo(HaveOccurred())
		httpClient := &http.Client{Transport: &http.Transport{DialContext: dial}}
		resp, err := httpClient.Get("http://" + net.JoinHostPort(ip.String(), "8080") + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Expect(string(body)).To(Equal("metrics"))

		_, err = dial(context.Background(), "tcp", net.JoinHostPort(ip.String(), "9090"))
		Expect(err).To(MatchError(ContainSubstring("403")))
		_, port, _ := net.SplitHostPort(backend.Listener.Addr().String())
		_, err = dial(context.Background(), "tcp", "127.0.0.1:"+port)
		Expect(err).To(MatchError(ContainSubstring("403")), "loopback is no pod")

		v.RemovePod(ip)
		_, err = dial(context.Background(), "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(8080)))
		Expect(err).To(MatchError(ContainSubstring("403")))
	})
})

var _ = Describe("Pod IPs of the VPN stand-in", func() {
	It("are global unicast, not reused at once, and wrap around the network", func() {
		v := &VPN{targets: map[string]string{}, pods: map[netip.Addr]string{}, next: PodNetwork.Addr().Next()}
		first, err := v.AddPod("ns/a", map[int32]string{8080: "127.0.0.1:1"})
		Expect(err).NotTo(HaveOccurred())
		Expect(first.String()).To(Equal("10.200.0.1"))
		Expect(first.IsGlobalUnicast()).To(BeTrue(), "kube-apiserver's pod proxy refuses other addresses")
		v.RemovePod(first)
		second, err := v.AddPod("ns/b", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(second).NotTo(Equal(first), "a scrape of the removed pod must not reach the new one")

		v.next = netip.MustParseAddr("10.200.255.254")
		last, err := v.AddPod("ns/c", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(last.String()).To(Equal("10.200.255.254"))
		wrapped, err := v.AddPod("ns/d", nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(wrapped.String()).To(Equal("10.200.0.1"), "the broadcast address is skipped, the freed first address taken")
	})
})
