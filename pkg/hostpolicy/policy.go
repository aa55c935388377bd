// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package hostpolicy decides which git hosts the extension may connect to from the seed. The SSH
// host key scan connects to whatever host:port a project member writes into a repository URL; the
// policy keeps that from reaching the seed's own networks, cluster-internal services or the cloud
// metadata endpoint.
package hostpolicy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// DefaultAllowedPorts are the SSH ports of common git hosts: SSH, GitHub's ssh.github.com:443,
// a common alternative, Bitbucket Data Center and Gerrit.
var DefaultAllowedPorts = []string{"22", "443", "2222", "7999", "29418"}

// deniedPrefixes are never dialled unless the operator allows them: the host itself, addresses that
// are not unicast, and the networks private to a site, where the seed's own and its neighbours'
// services live.
var deniedPrefixes = mustPrefixes(
	"0.0.0.0/8",       // "this" network, includes the unspecified address
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, includes the cloud metadata endpoint 169.254.169.254
	"10.0.0.0/8",      // private (RFC 1918)
	"172.16.0.0/12",   // private (RFC 1918)
	"192.168.0.0/16",  // private (RFC 1918)
	"100.64.0.0/10",   // carrier-grade NAT, used for cluster networks too
	"192.0.0.0/24",    // IETF protocol assignments
	"198.18.0.0/15",   // benchmarking
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes broadcast
	"::/128",          // unspecified
	"::1/128",         // loopback
	"fe80::/10",       // link-local
	"fc00::/7",        // unique local
	"ff00::/8",        // multicast
	"64:ff9b:1::/48",  // local-use IPv4/IPv6 translation
	"100::/64",        // discard
	"2001:db8::/32",   // documentation
	"fec0::/10",       // deprecated site-local
	"2002::/16",       // 6to4, embeds arbitrary IPv4 addresses
	"2001::/32",       // Teredo, embeds arbitrary IPv4 addresses
	"::/96",           // IPv4-compatible (deprecated), embeds IPv4 addresses
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"192.0.2.0/24",    // documentation
)

// deniedNameSuffixes are cluster-internal names: the seed's DNS resolves them to its own services.
var deniedNameSuffixes = []string{".svc", ".cluster.local", ".localhost"}

// ErrDenied marks a host the policy refuses.
var ErrDenied error = deniedError{}

// deniedError is ErrDenied's type: its DeniedByPolicy method lets package metrics count refused
// scans without importing the policy.
type deniedError struct{}

func (deniedError) Error() string { return "denied by the host policy" }

// DeniedByPolicy marks the error as a refusal of the host policy.
func (deniedError) DeniedByPolicy() bool { return true }

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Policy is the host policy of one connection attempt.
type Policy struct {
	// Allowed are networks the operator allows although they are denied by default, e.g. the
	// network of a private git server.
	Allowed []netip.Prefix
	// Denied are networks that are refused even when Allowed contains them: the seed's pod,
	// service and node networks.
	Denied []netip.Prefix
	// Ports are the allowed destination ports.
	Ports []PortRange
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
}

// PortRange is an inclusive range of ports.
type PortRange struct {
	From, To uint16
}

// ParsePortRange parses "22" or "1024-65535".
func ParsePortRange(s string) (PortRange, error) {
	from, to, isRange := strings.Cut(s, "-")
	if !isRange {
		to = from
	}
	f, err := strconv.ParseUint(strings.TrimSpace(from), 10, 16)
	if err != nil || f == 0 {
		return PortRange{}, fmt.Errorf("invalid port or port range %q: want a port 1-65535 or a range like 1024-65535", s)
	}
	t, err := strconv.ParseUint(strings.TrimSpace(to), 10, 16)
	if err != nil || t < f {
		return PortRange{}, fmt.Errorf("invalid port or port range %q: want a port 1-65535 or a range like 1024-65535", s)
	}
	return PortRange{From: uint16(f), To: uint16(t)}, nil
}

// ParseNetwork parses an allowed network (a CIDR).
func ParseNetwork(cidr string) (netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid allowed network %q: %w", cidr, err)
	}
	return prefix.Masked(), nil
}

// New builds a policy from the operator's allowed networks and ports (CIDRs and ports or port
// ranges, as in the ControllerConfiguration) and the networks that are always denied.
func New(allowedNetworks, allowedPorts []string, denied []netip.Prefix) (*Policy, error) {
	p := &Policy{Denied: denied}
	for _, cidr := range allowedNetworks {
		prefix, err := ParseNetwork(cidr)
		if err != nil {
			return nil, err
		}
		p.Allowed = append(p.Allowed, prefix)
	}
	if len(allowedPorts) == 0 {
		allowedPorts = DefaultAllowedPorts
	}
	for _, port := range allowedPorts {
		r, err := ParsePortRange(port)
		if err != nil {
			return nil, err
		}
		p.Ports = append(p.Ports, r)
	}
	return p, nil
}

// CheckName refuses host names that name cluster-internal services or the host itself. It needs
// no DNS. IP literals are checked with CheckAddr.
func CheckName(host string) error {
	name := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	if name == "" || name == "localhost" {
		return fmt.Errorf("host %q: %w", host, ErrDenied)
	}
	// A single label is completed with the search domains of the seed's resolver, e.g.
	// "kubernetes" becomes the seed's API server service.
	if !strings.Contains(name, ".") {
		return fmt.Errorf("host %q is not a fully qualified name: %w", host, ErrDenied)
	}
	for _, suffix := range deniedNameSuffixes {
		if strings.HasSuffix(name, suffix) {
			return fmt.Errorf("host %q is cluster-internal: %w", host, ErrDenied)
		}
	}
	return nil
}

// nat64 is the well-known NAT64 prefix: IPv6-only seeds reach IPv4 git hosts through it, so the
// IPv4 address it embeds is what is checked.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// DeniedByDefault tells whether an address is in the networks that are denied unless allowed.
func DeniedByDefault(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		b := addr.As16()
		addr = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, prefix := range deniedPrefixes {
		if prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// CheckHost refuses what the policy can tell from a host and port without DNS: names of
// cluster-internal services, IP literals it does not allow and ports it does not allow. The
// addresses a name resolves to are only known when dialling; the admission webhook checks what it
// can with this, and DialContext starts with it.
func (p *Policy) CheckHost(host string, port uint16) error {
	if err := CheckName(host); err != nil {
		return err
	}
	if addr, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return p.CheckAddr(netip.AddrPortFrom(addr, port))
	}
	if !p.portAllowed(port) {
		return fmt.Errorf("port %d: %w", port, ErrDenied)
	}
	return nil
}

// CheckAddr refuses an address and port the policy does not allow.
func (p *Policy) CheckAddr(addr netip.AddrPort) error {
	ip := addr.Addr().Unmap().WithZone("")
	for _, prefix := range p.Denied {
		if prefix.Contains(ip) {
			return fmt.Errorf("address %s is in a network of the seed: %w", ip, ErrDenied)
		}
	}
	if !p.portAllowed(addr.Port()) {
		return fmt.Errorf("port %d: %w", addr.Port(), ErrDenied)
	}
	if !DeniedByDefault(ip) {
		return nil
	}
	for _, prefix := range p.Allowed {
		if prefix.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("address %s is not public: %w", ip, ErrDenied)
}

func (p *Policy) portAllowed(port uint16) bool {
	for _, r := range p.Ports {
		if port >= r.From && port <= r.To {
			return true
		}
	}
	return false
}

// DialContext connects to address ("host:port") only if the policy allows the name and every
// address it resolves to, and dials the checked address itself, so that a second lookup cannot
// hand out another one. The dialer's Control function checks the socket's address once more.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("invalid port in %q: %w", address, err)
	}
	if err := p.CheckHost(host, uint16(port)); err != nil {
		return nil, err
	}
	addrs, err := p.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := p.CheckAddr(netip.AddrPortFrom(a, uint16(port))); err != nil {
			return nil, fmt.Errorf("host %s: %w", host, err)
		}
	}
	dialer := &net.Dialer{Control: p.control}
	var firstErr error
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

func (p *Policy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	var resolver Resolver = net.DefaultResolver
	if p.Resolver != nil {
		resolver = p.Resolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("host %s has no addresses", host)
	}
	return addrs, nil
}

func (p *Policy) control(_, address string, _ syscall.RawConn) error {
	addr, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected socket address %q: %w", address, ErrDenied)
	}
	return p.CheckAddr(addr)
}

func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}
