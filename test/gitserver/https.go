// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPSServer serves the repositories below a root directory read-only over git's smart HTTP
// protocol with TLS, in the name of public git hosts (e.g. github.com), without DNS or network:
// a client that uses ProxyURL as its HTTPS proxy and trusts CAPEM reaches
// https://<host>/<repo> for every host it was started with. Other hosts are refused by the proxy,
// as by an egress policy.
type HTTPSServer struct {
	hosts       []string
	caPEM       []byte
	backend     *http.Server
	backendAddr string
	proxy       *http.Server
	proxyAddr   string
	wg          sync.WaitGroup
	// tunnels are the hijacked connections of the proxy, which http.Server.Close leaves open.
	mu           sync.Mutex
	tunnels      map[net.Conn]struct{}
	closed       bool
	uploadPacks  atomic.Int64
	refusedHosts atomic.Int64
}

// StartHTTPS starts the server and its proxy on free ports of 127.0.0.1.
func StartHTTPS(repoRoot string, hosts ...string) (*HTTPSServer, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root: %w", err)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("repository root %q is not a directory", repoRoot)
	}
	if len(hosts) == 0 {
		return nil, errors.New("the HTTPS git server needs at least one host name")
	}
	git, err := exec.LookPath(GitBinary)
	if err != nil {
		return nil, fmt.Errorf("git server needs the git CLI: %w", err)
	}
	caPEM, cert, err := hostCertificate(hosts)
	if err != nil {
		return nil, err
	}
	s := &HTTPSServer{hosts: slices.Clone(hosts), caPEM: caPEM, tunnels: map[net.Conn]struct{}{}}

	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=" + os.DevNull,
		},
	}
	backendListener, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	s.backendAddr = backendListener.Addr().String()
	// A client that does not trust the authority ends the handshake; that is not the server's error.
	s.backend = &http.Server{Handler: s.readOnly(backend), ReadHeaderTimeout: HandshakeTimeout, ErrorLog: log.New(io.Discard, "", 0)}

	proxyListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("listening: %w", err), backendListener.Close())
	}
	s.proxyAddr = proxyListener.Addr().String()
	s.proxy = &http.Server{Handler: http.HandlerFunc(s.connect), ReadHeaderTimeout: HandshakeTimeout}

	s.wg.Add(2)
	go func() { defer s.wg.Done(); _ = s.backend.Serve(backendListener) }()
	go func() { defer s.wg.Done(); _ = s.proxy.Serve(proxyListener) }()
	return s, nil
}

// ProxyURL is the URL to set as HTTPS_PROXY.
func (s *HTTPSServer) ProxyURL() string { return "http://" + s.proxyAddr }

// CAPEM is the certificate of the authority that signed the hosts' certificate, for SSL_CERT_FILE.
func (s *HTTPSServer) CAPEM() []byte { return slices.Clone(s.caPEM) }

// URL returns the HTTPS URL of the repository repo (a path below the root) on host.
func (s *HTTPSServer) URL(host, repo string) string { return "https://" + host + "/" + repo }

// UploadPackRequests returns how many upload-pack requests were served: with git's protocol v2 a
// clone or fetch makes two (listing the refs, then fetching the pack).
func (s *HTTPSServer) UploadPackRequests() int64 { return s.uploadPacks.Load() }

// RefusedHosts returns how many proxy requests for other hosts were refused.
func (s *HTTPSServer) RefusedHosts() int64 { return s.refusedHosts.Load() }

// Close stops the server and the proxy and closes their connections.
func (s *HTTPSServer) Close() error {
	err := errors.Join(s.proxy.Close(), s.backend.Close())
	s.mu.Lock()
	s.closed = true
	for c := range s.tunnels {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// track registers the ends of a tunnel, so that Close ends it; it fails once the server is closed.
func (s *HTTPSServer) track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for _, c := range conns {
		s.tunnels[c] = struct{}{}
	}
	return true
}

func (s *HTTPSServer) untrack(conns ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conns {
		delete(s.tunnels, c)
		_ = c.Close()
	}
}

// readOnly lets only the upload-pack side of the protocol through to git http-backend.
func (s *HTTPSServer) readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			s.uploadPacks.Add(1)
		default:
			http.Error(w, "only git-upload-pack is served", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// connect is the proxy: it tunnels CONNECT requests for the server's hosts on port 443 to the
// TLS listener.
func (s *HTTPSServer) connect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT is proxied", http.StatusMethodNotAllowed)
		return
	}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || port != "443" || !slices.Contains(s.hosts, host) {
		s.refusedHosts.Add(1)
		http.Error(w, fmt.Sprintf("%s is not reachable through this proxy", r.Host), http.StatusForbidden)
		return
	}
	upstream, err := net.DialTimeout("tcp", s.backendAddr, HandshakeTimeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "connection cannot be tunnelled", http.StatusInternalServerError)
		return
	}
	client, buffered, err := hijacker.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if !s.track(client, upstream) {
		_ = errors.Join(client.Close(), upstream.Close())
		return
	}
	defer s.untrack(client, upstream)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent after the request line, if anything, is in the reader's buffer.
		_, _ = io.Copy(upstream, buffered)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
}

// hostCertificate creates a certificate authority and a certificate for hosts signed by it.
func hostCertificate(hosts []string) ([]byte, tls.Certificate, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("generating CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "shoot-flux test git hosts CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("creating CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("parsing CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("generating host key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: hosts[0]},
		DNSNames:     hosts,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("creating host certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
