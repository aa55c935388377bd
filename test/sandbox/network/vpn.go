// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package network stands in for the network between the sandbox's components: Gardener's VPN
// between a shoot's control plane and its pods (VPN), and network outages between a component
// and an API server (Proxy).
package network

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gardener/gardener/pkg/utils/secrets"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1beta1 "k8s.io/apiserver/pkg/apis/apiserver/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// PodNetwork is the range the kubelet stand-in takes pod IPs from. kube-apiserver's pod proxy
// refuses addresses that are not global unicast (k8s.io/kubernetes pkg/registry/core/pod
// ResourceLocation), so the processes' loopback listeners cannot be pod IPs; these addresses are
// reached only through the VPN stand-in, never routed on the machine.
var PodNetwork = netip.MustParsePrefix("10.200.0.0/16")

// VPN stands in for vpn-seed-server's HTTP CONNECT proxy, through which a shoot's kube-apiserver
// reaches pod IPs: it maps the published pods' <podIP>:<port> to their processes' listeners, refuses
// every other address and, over mutual TLS, any client but that kube-apiserver.
type VPN struct {
	log      logr.Logger
	dir      string
	listener net.Listener

	mu      sync.Mutex
	targets map[string]string
	pods    map[netip.Addr]string
	next    netip.Addr
	conns   map[net.Conn]struct{}
	closed  bool

	wg sync.WaitGroup
}

// vpnHandshakeTimeout bounds a client's TLS handshake and CONNECT request.
var vpnHandshakeTimeout = 10 * time.Second

// StartVPN generates the CA, the proxy's serving and kube-apiserver's client certificate with
// gardener's secrets utilities, writes the egress selector configuration into a directory of its
// own and listens on a free loopback port.
func StartVPN(log logr.Logger, name string) (*VPN, error) {
	dir, err := os.MkdirTemp("", "shoot-flux-vpn-"+cluster.FileName(name)+"-")
	if err != nil {
		return nil, fmt.Errorf("failed creating VPN directory of %s: %w", name, err)
	}
	v := &VPN{log: log, dir: dir, targets: map[string]string{}, pods: map[netip.Addr]string{}, next: PodNetwork.Addr().Next(), conns: map[net.Conn]struct{}{}}
	tlsConfig, err := v.writeCertificates()
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if v.listener, err = tls.Listen("tcp", "127.0.0.1:0", tlsConfig); err != nil {
		return nil, errors.Join(fmt.Errorf("failed listening for the VPN of %s: %w", name, err), os.RemoveAll(dir))
	}
	if err := v.writeEgressSelectorConfig(); err != nil {
		return nil, errors.Join(err, v.Close())
	}
	v.wg.Go(v.serve)
	return v, nil
}

// Files in the VPN's directory, named as in gardener's kube-apiserver volumes.
const (
	vpnCAFile              = "ca.crt"
	vpnClientCertFile      = "tls.crt"
	vpnClientKeyFile       = "tls.key"
	egressSelectorFile     = "egress-selector-configuration.yaml"
	egressSelectionCluster = "cluster"
	egressSelectionControl = "controlplane"
	egressSelectionEtcd    = "etcd"
	vpnClientCommonName    = "kube-apiserver-http-proxy"
	vpnCACommonName        = "ca-vpn"
	vpnServerCommonName    = "vpn-seed-server"
)

func (v *VPN) writeCertificates() (*tls.Config, error) {
	ca, err := (&secrets.CertificateSecretConfig{Name: vpnCACommonName, CommonName: vpnCACommonName, CertType: secrets.CACert}).GenerateCertificate()
	if err != nil {
		return nil, fmt.Errorf("failed generating the VPN CA: %w", err)
	}
	server, err := (&secrets.CertificateSecretConfig{
		Name: vpnServerCommonName, CommonName: vpnServerCommonName, CertType: secrets.ServerCert, SigningCA: ca,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}).GenerateCertificate()
	if err != nil {
		return nil, fmt.Errorf("failed generating the VPN serving certificate: %w", err)
	}
	clientCert, err := (&secrets.CertificateSecretConfig{Name: vpnClientCommonName, CommonName: vpnClientCommonName, CertType: secrets.ClientCert, SigningCA: ca}).GenerateCertificate()
	if err != nil {
		return nil, fmt.Errorf("failed generating kube-apiserver's VPN client certificate: %w", err)
	}
	for file, data := range map[string][]byte{
		vpnCAFile:         ca.CertificatePEM,
		vpnClientCertFile: clientCert.CertificatePEM,
		vpnClientKeyFile:  clientCert.PrivateKeyPEM,
	} {
		if err := os.WriteFile(filepath.Join(v.dir, file), data, 0o600); err != nil {
			return nil, fmt.Errorf("failed writing %s: %w", file, err)
		}
	}
	serving, err := tls.X509KeyPair(server.CertificatePEM, server.PrivateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("failed loading the VPN serving certificate: %w", err)
	}
	// From the PEM: the Certificate of gardener's CA is the template it was made from, without the
	// raw subject a CertificateRequest names the acceptable CAs with.
	clients := x509.NewCertPool()
	if !clients.AppendCertsFromPEM(ca.CertificatePEM) {
		return nil, errors.New("failed loading the VPN CA")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// writeEgressSelectorConfig writes what gardener configures for a shoot's kube-apiserver: "cluster"
// (the proxy subresources) over HTTP CONNECT to the VPN with mutual TLS, the rest direct. mTLS is
// also the only tcp setup k8s.io/apiserver v0.36.4 accepts: it panics on a tcp transport without TLS.
func (v *VPN) writeEgressSelectorConfig() error {
	cfg := apiserverv1beta1.EgressSelectorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiserverv1beta1.SchemeGroupVersion.String(), Kind: "EgressSelectorConfiguration"},
		EgressSelections: []apiserverv1beta1.EgressSelection{
			{
				Name: egressSelectionCluster,
				Connection: apiserverv1beta1.Connection{
					ProxyProtocol: apiserverv1beta1.ProtocolHTTPConnect,
					Transport: &apiserverv1beta1.Transport{TCP: &apiserverv1beta1.TCPTransport{
						URL: "https://" + v.listener.Addr().String(),
						TLSConfig: &apiserverv1beta1.TLSConfig{
							CABundle:   filepath.Join(v.dir, vpnCAFile),
							ClientCert: filepath.Join(v.dir, vpnClientCertFile),
							ClientKey:  filepath.Join(v.dir, vpnClientKeyFile),
						},
					}},
				},
			},
			{Name: egressSelectionControl, Connection: apiserverv1beta1.Connection{ProxyProtocol: apiserverv1beta1.ProtocolDirect}},
			{Name: egressSelectionEtcd, Connection: apiserverv1beta1.Connection{ProxyProtocol: apiserverv1beta1.ProtocolDirect}},
		},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("failed encoding the egress selector configuration: %w", err)
	}
	if err := os.WriteFile(v.EgressSelectorConfigFile(), data, 0o600); err != nil {
		return fmt.Errorf("failed writing the egress selector configuration: %w", err)
	}
	return nil
}

// EgressSelectorConfigFile is the value of kube-apiserver's --egress-selector-config-file.
func (v *VPN) EgressSelectorConfigFile() string {
	return filepath.Join(v.dir, egressSelectorFile)
}

// AddPod allocates a pod IP and routes <podIP>:<port> to the local address of each port.
func (v *VPN) AddPod(pod string, ports map[int32]string) (netip.Addr, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ip, err := v.allocate()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("pod %s: %w", pod, err)
	}
	v.pods[ip] = pod
	for port, local := range ports {
		v.targets[netip.AddrPortFrom(ip, uint16(port)).String()] = local
	}
	return ip, nil
}

// allocate returns the next free address of PodNetwork after the last one given out, so that a
// recently removed pod's address is not reused at once (a scrape of the old pod must not reach the
// new one).
func (v *VPN) allocate() (netip.Addr, error) {
	for range 1 << (32 - PodNetwork.Bits()) {
		ip := v.next
		v.next = ip.Next()
		if !PodNetwork.Contains(v.next) || v.next == lastAddr(PodNetwork) {
			v.next = PodNetwork.Addr().Next()
		}
		if _, used := v.pods[ip]; !used && PodNetwork.Contains(ip) {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address in %s", PodNetwork)
}

// lastAddr is the broadcast address of an IPv4 prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		a[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom4(a)
}

// RemovePod releases the pod's IP and routes.
func (v *VPN) RemovePod(ip netip.Addr) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.pods, ip)
	for target := range v.targets {
		if ap, err := netip.ParseAddrPort(target); err == nil && ap.Addr() == ip {
			delete(v.targets, target)
		}
	}
}

func (v *VPN) target(address string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	local, ok := v.targets[address]
	return local, ok
}

func (v *VPN) serve() {
	for {
		conn, err := v.listener.Accept()
		if err != nil {
			return
		}
		if !v.track(conn) {
			_ = conn.Close()
			return
		}
		v.wg.Go(func() {
			defer v.untrack(conn)
			v.handle(conn)
		})
	}
}

// handle answers one CONNECT request and then copies bytes both ways until either side closes.
func (v *VPN) handle(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(vpnHandshakeTimeout))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	local, ok := v.target(req.URL.Host)
	if !ok {
		v.log.V(1).Info("Refusing a connection to an address that is no pod port", "address", req.URL.Host)
		_, _ = io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	backend, err := net.DialTimeout("tcp", local, vpnHandshakeTimeout)
	if err != nil {
		_, _ = io.WriteString(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer func() { _ = backend.Close() }()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after the request and the reader buffered goes first.
		_, _ = io.Copy(backend, br)
		if tcp, ok := backend.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, backend)
		done <- struct{}{}
	}()
	<-done
}

func (v *VPN) track(conn net.Conn) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return false
	}
	v.conns[conn] = struct{}{}
	return true
}

func (v *VPN) untrack(conn net.Conn) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.conns, conn)
}

// Close stops listening, ends every tunnel and removes the certificates and the configuration.
func (v *VPN) Close() error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	v.closed = true
	for c := range v.conns {
		_ = c.Close()
	}
	v.mu.Unlock()
	err := v.listener.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	v.wg.Wait()
	return errors.Join(err, os.RemoveAll(v.dir))
}
