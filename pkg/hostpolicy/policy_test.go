// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package hostpolicy_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/netcount"
)

// fakeResolver answers from a table, like a DNS server an attacker controls.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if addrs, ok := r[host]; ok {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var _ = Describe("Policy", func() {
	var (
		listener *netcount.Listener
		port     string
		resolver fakeResolver
	)

	BeforeEach(func() {
		var err error
		listener, err = netcount.Listen()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(listener.Close)
		port = strconv.Itoa(listener.Port())
		resolver = fakeResolver{
			"evil.example.com":     {netip.MustParseAddr("127.0.0.1")},
			"rebind.example.com":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
			"metadata.example.com": {netip.MustParseAddr("169.254.169.254")},
			"seed.example.com":     {netip.MustParseAddr("34.0.1.2")},
			"git.example.com":      {netip.MustParseAddr("93.184.216.34")},
		}
	})

	// The seed of these specs runs its nodes in a public network, which is denied all the same.
	newPolicy := func(allowedNetworks, allowedPorts []string) *hostpolicy.Policy {
		p, err := hostpolicy.New(allowedNetworks, allowedPorts, []netip.Prefix{netip.MustParsePrefix("34.0.0.0/16")})
		Expect(err).NotTo(HaveOccurred())
		p.Resolver = resolver
		return p
	}

	It("refuses hostile targets before connecting", func(ctx SpecContext) {
		// Every port is allowed, so only the address decides.
		p := newPolicy(nil, []string{"1-65535"})
		targets := []string{
			"127.0.0.1:" + port,
			"localhost:" + port,
			"LOCALHOST.:" + port,
			"[::1]:" + port,
			"[::ffff:127.0.0.1]:" + port,
			"[64:ff9b::7f00:1]:" + port,
			"0.0.0.0:" + port,
			"evil.example.com:" + port,
			"rebind.example.com:" + port,
			"metadata.example.com:80",
			"169.254.169.254:80",
			"[fe80::1%eth0]:22",
			"10.0.0.1:22",
			"172.16.0.1:22",
			"192.168.1.1:22",
			"100.64.0.1:22",
			"224.0.0.1:22",
			"[fd00::1]:22",
			"kubernetes:443",
			"kubernetes.default.svc:443",
			"kube-apiserver.shoot--other--prod.svc.cluster.local:443",
			"api.foo.localhost:443",
			"seed.example.com:22",
			"34.0.7.7:22",
		}
		Expect(len(targets)).To(BeNumerically(">=", 15))
		for _, target := range targets {
			conn, err := p.DialContext(ctx, "tcp", target)
			if conn != nil {
				_ = conn.Close()
			}
			Expect(err).To(MatchError(hostpolicy.ErrDenied), "target %s", target)
		}
		// Give a connection that slipped through time to be counted.
		Consistently(listener.Accepted, 200*time.Millisecond, 20*time.Millisecond).Should(BeZero())
	})

	It("refuses ports the operator did not allow", func(ctx SpecContext) {
		p := newPolicy(nil, nil)
		_, err := p.DialContext(ctx, "tcp", "git.example.com:80")
		Expect(err).To(MatchError(hostpolicy.ErrDenied))
		Expect(err).To(MatchError(ContainSubstring("port 80")))
		Expect(p.CheckAddr(netip.MustParseAddrPort("93.184.216.34:22"))).To(Succeed())
		Expect(p.CheckAddr(netip.MustParseAddrPort("93.184.216.34:7999"))).To(Succeed())
	})

	It("connects to a network the operator allowed", func(ctx SpecContext) {
		p := newPolicy([]string{"127.0.0.0/8"}, []string{"1024-65535"})
		conn, err := p.DialContext(ctx, "tcp", "evil.example.com:"+port)
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.Close()).To(Succeed())
		Eventually(listener.Accepted).Should(BeEquivalentTo(1))

		By("still refusing the seed's own networks")
		p = newPolicy([]string{"34.0.0.0/8"}, nil)
		Expect(p.CheckAddr(netip.MustParseAddrPort("34.0.1.2:22"))).To(MatchError(hostpolicy.ErrDenied))
		Expect(p.CheckAddr(netip.MustParseAddrPort("34.1.1.2:22"))).To(Succeed())
	})

	It("checks the IPv4 address behind the NAT64 prefix", func() {
		p := newPolicy(nil, nil)
		Expect(p.CheckAddr(netip.MustParseAddrPort("[64:ff9b::5db8:d822]:22"))).To(Succeed(), "93.184.216.34")
		Expect(p.CheckAddr(netip.MustParseAddrPort("[64:ff9b::a00:1]:22"))).To(MatchError(hostpolicy.ErrDenied), "10.0.0.1")
	})

	It("passes resolver errors on", func(ctx SpecContext) {
		_, err := newPolicy(nil, nil).DialContext(ctx, "tcp", "nowhere.example.com:22")
		var dnsErr *net.DNSError
		Expect(errors.As(err, &dnsErr)).To(BeTrue())
	})

	// The resolver knows none of these names: CheckHost decides without DNS.
	DescribeTable("CheckHost",
		func(allowedNetworks []string, host string, port int, denied bool) {
			p := newPolicy(allowedNetworks, nil)
			p.Resolver = fakeResolver{}
			err := p.CheckHost(host, uint16(port))
			if denied {
				Expect(err).To(MatchError(hostpolicy.ErrDenied))
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
		},
		Entry("public name", nil, "github.com", 22, false),
		Entry("public name on an allowed port", nil, "ssh.github.com", 443, false),
		Entry("public name on another port", nil, "git.example.com", 2200, true),
		Entry("public address", nil, "93.184.216.34", 22, false),
		Entry("loopback", nil, "127.0.0.1", 22, true),
		Entry("IPv6 loopback in brackets", nil, "[::1]", 22, true),
		Entry("metadata endpoint", nil, "169.254.169.254", 22, true),
		Entry("unspecified", nil, "0.0.0.0", 22, true),
		Entry("multicast", nil, "224.0.0.1", 22, true),
		Entry("IPv6 link-local", nil, "fe80::1", 22, true),
		Entry("private", nil, "10.0.0.1", 22, true),
		Entry("private network the operator allowed", []string{"10.0.0.0/8"}, "10.0.0.1", 22, false),
		Entry("allowed network on another port", []string{"10.0.0.0/8"}, "10.0.0.1", 2200, true),
		Entry("seed network the operator allowed", []string{"34.0.0.0/8"}, "34.0.1.2", 22, true),
		Entry("localhost", nil, "localhost", 22, true),
		Entry("service", nil, "kubernetes.default.svc", 22, true),
		Entry("cluster-local", nil, "x.svc.cluster.local", 22, true),
		Entry("single label", nil, "gitea", 22, true),
	)

	DescribeTable("CheckName",
		func(host string, denied bool) {
			err := hostpolicy.CheckName(host)
			if denied {
				Expect(err).To(MatchError(hostpolicy.ErrDenied))
			} else {
				Expect(err).NotTo(HaveOccurred())
			}
		},
		Entry("public name", "github.com", false),
		Entry("IP literal (checked as address)", "10.0.0.1", false),
		Entry("localhost", "localhost", true),
		Entry("single label", "gitea", true),
		Entry("service", "gitea.git.svc", true),
		Entry("cluster-local", "gitea.git.svc.cluster.local.", true),
		Entry("empty", "", true),
	)

	DescribeTable("New refuses invalid settings",
		func(networks, ports []string, message string) {
			_, err := hostpolicy.New(networks, ports, nil)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("bad CIDR", []string{"10.0.0.0/33"}, nil, `invalid allowed network "10.0.0.0/33"`),
		Entry("port zero", nil, []string{"0"}, `invalid port or port range "0"`),
		Entry("reversed range", nil, []string{"30-20"}, `invalid port or port range "30-20"`),
		Entry("too large", nil, []string{"70000"}, `invalid port or port range "70000"`),
	)
})
