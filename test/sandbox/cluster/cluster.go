// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package cluster runs the sandbox's API servers (envtest's etcd and kube-apiserver, no
// controllers) and the controller-runtime managers that the stand-ins and Gardener's components
// run against them. It is the bottom of the sandbox: the stand-ins, the wiring of Gardener's
// components and the harness build on it, and it imports none of them. The suites under test/
// start their API servers with it too.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

var (
	// ControlPlaneStartTimeout bounds the start of one etcd or kube-apiserver.
	ControlPlaneStartTimeout = time.Minute
	// ControlPlaneStopTimeout bounds the stop of one etcd or kube-apiserver.
	ControlPlaneStopTimeout = 30 * time.Second
)

// Cluster is one envtest API server (etcd and kube-apiserver, no controllers).
type Cluster struct {
	// Name is the role of the cluster (garden, seed) or the seed namespace of a shoot.
	Name string
	// Env is the running envtest environment.
	Env *envtest.Environment
	// Config is an admin REST config for the API server. It stays valid across StopAPIServer and
	// StartAPIServer.
	Config *rest.Config
	// Client is an uncached admin client; unstructured objects are supported.
	Client client.WithWatch
	// AuditLogPath is the kube-apiserver's audit log, if the cluster was started with one.
	AuditLogPath string

	// certDir holds kube-apiserver's serving certificates. The cluster owns it rather than envtest,
	// which would replace the certificates on a restart and so invalidate every client's CA.
	certDir string
	// tmpDir is the cluster's own temporary directory (certDir unless gardener's test environment
	// chose the certificate directory).
	tmpDir string
	// stopEnv stops the control plane: envtest's, or gardener's test environment with its
	// gardener-apiserver.
	stopEnv func() error
	// closers run after the control plane stopped.
	closers []func() error

	mu        sync.Mutex
	apiServer bool

	stopOnce sync.Once
	stopErr  error
}

// Environment is a started and stopped control plane: envtest's, or one that wraps it.
type Environment interface {
	Start() (*rest.Config, error)
	Stop() error
}

// Options are the optional settings of Start.
type Options struct {
	// AuditDir, if set, makes kube-apiserver write an audit log <name>-audit.log there (see
	// auditPolicy).
	AuditDir string
	// Wrap, if set, wraps envtest's environment into one that starts more with it, e.g.
	// gardener-apiserver behind kube-apiserver (gardener.StartGarden).
	Wrap func(*envtest.Environment) Environment
	// APIServerFlags are further kube-apiserver flags. They are part of envtest's configuration of
	// the process, so StartAPIServer keeps them.
	APIServerFlags map[string]string
}

// auditPolicy records every request at metadata level, and Extension requests with their bodies,
// so that a benchmark can tell the generic reconciler's lastOperation updates from the
// extension's own status writes. Secret bodies never reach the log.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch"]
  resources:
  - group: extensions.gardener.cloud
    resources: ["extensions", "extensions/status"]
- level: Metadata
`

// AssetsEnv names the directory of envtest's kube-apiserver and etcd, which hack/build-envtest.sh
// prints and the Makefile's test, demo and bench targets set.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// RequireAssets fails without AssetsEnv. envtest would look for its binaries in a default
// directory and fail on a missing etcd instead; a missing variable is a broken setup, not a skip.
func RequireAssets() error {
	if os.Getenv(AssetsEnv) == "" {
		return errors.New(AssetsEnv + " is not set: point it at the envtest binaries (hack/build-envtest.sh); make test-integration provides it; a missing one is a broken setup")
	}
	return nil
}

// Start starts an API server named name with the scheme's kinds (nil: client-go's) and the CRDs of
// crdPaths, files or directories. It requires AssetsEnv; test suites stop it with
// DeferCleanup(c.Stop).
func Start(name string, scheme *runtime.Scheme, crdPaths []string, opts Options) (*Cluster, error) {
	if err := RequireAssets(); err != nil {
		return nil, err
	}
	certDir, err := os.MkdirTemp("", "shoot-flux-sandbox-"+FileName(name)+"-")
	if err != nil {
		return nil, fmt.Errorf("failed creating certificate directory of %s: %w", name, err)
	}
	c := &Cluster{Name: name, certDir: certDir, tmpDir: certDir}
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        crdPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: ControlPlaneStartTimeout,
		ControlPlaneStopTimeout:  ControlPlaneStopTimeout,
	}
	apiServer := &envtest.APIServer{CertDir: certDir}
	if opts.AuditDir != "" {
		policy := filepath.Join(certDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, errors.Join(fmt.Errorf("failed writing audit policy of %s: %w", name, err), os.RemoveAll(certDir))
		}
		c.AuditLogPath = filepath.Join(opts.AuditDir, FileName(name)+"-audit.log")
		apiServer.Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", c.AuditLogPath).
			Set("audit-log-format", "json")
	}
	for name, value := range opts.APIServerFlags {
		apiServer.Configure().Set(name, value)
	}
	env.ControlPlane.APIServer = apiServer
	c.Env = env

	start, stop := env.Start, env.Stop
	if opts.Wrap != nil {
		wrapped := opts.Wrap(env)
		start, stop = wrapped.Start, wrapped.Stop
	}
	c.stopEnv = stop
	cfg, err := start()
	if err != nil {
		// A half-started control plane still owns processes and a data directory.
		return nil, errors.Join(fmt.Errorf("failed starting %s API server: %w", name, err), stop(), os.RemoveAll(certDir))
	}
	// gardener's test environment generates the certificates, with the aggregation layer's, in a
	// directory of its own that stays until it stops.
	c.certDir = apiServer.CertDir
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("failed creating %s client: %w", name, err), stop(), os.RemoveAll(certDir))
	}
	c.Config, c.Client, c.apiServer = cfg, cl, true
	return c, nil
}

// StartSeedAndShoot starts a seed API server with seedScheme's kinds and the CRDs of seedCRDs, and a
// shoot API server with client-go's kinds, side by side: each start mostly waits for its processes.
// When either fails, it stops the other; test suites stop both with DeferCleanup.
func StartSeedAndShoot(seedScheme *runtime.Scheme, seedCRDs []string) (seed, shoot *Cluster, err error) {
	shootStarted := make(chan error, 1)
	go func() {
		var err error
		shoot, err = Start("shoot", nil, nil, Options{})
		shootStarted <- err
	}()
	seed, seedErr := Start("seed", seedScheme, seedCRDs, Options{})
	shootErr := <-shootStarted
	if seedErr == nil && shootErr == nil {
		return seed, shoot, nil
	}
	err = errors.Join(seedErr, shootErr)
	for _, c := range []*Cluster{seed, shoot} {
		if c != nil {
			err = errors.Join(err, c.Stop())
		}
	}
	return nil, nil, err
}

// FileName turns a cluster's name into one that fits into a file name.
func FileName(name string) string {
	return strings.NewReplacer("/", "-", ":", "-").Replace(name)
}

// StopAPIServer kills kube-apiserver and keeps etcd running, as in a crash of the API server:
// clients get connection errors until StartAPIServer. A graceful stop would take up to a minute
// while clients hold watches open.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.apiServer {
		return nil
	}
	pid, err := c.apiServerPID()
	if err != nil {
		return err
	}
	// kube-apiserver runs in a process group of its own (envtest starts it that way).
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("failed killing %s API server: %w", c.Name, err)
	}
	// envtest reaps the process; until then it still owns the port.
	err = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, ControlPlaneStopTimeout, true, func(context.Context) (bool, error) {
		_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
		return os.IsNotExist(err), nil
	})
	if err != nil {
		return fmt.Errorf("%s API server did not end within %s: %w", c.Name, ControlPlaneStopTimeout, err)
	}
	c.apiServer = false
	return nil
}

// apiServerPID finds the kube-apiserver process by its certificate directory, which belongs to
// this cluster alone.
func (c *Cluster) apiServerPID() (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("failed listing processes: %w", err)
	}
	arg := []byte("--cert-dir=" + c.certDir + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.HasPrefix(cmdline, []byte(c.Env.ControlPlane.APIServer.Path)) && bytes.Contains(cmdline, arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no kube-apiserver process of %s found", c.Name)
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same address, with the
// same certificates and on the same etcd, so existing clients and REST configs keep working.
func (c *Cluster) StartAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiServer {
		return nil
	}
	if err := c.Env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("failed starting %s API server again: %w", c.Name, err)
	}
	c.apiServer = true
	return nil
}

// APIServerRunning tells whether kube-apiserver runs.
func (c *Cluster) APIServerRunning() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiServer
}

// AddCloser adds a function that runs after the control plane stopped, e.g. to close what a
// wrapped environment left open.
func (c *Cluster) AddCloser(closeFn func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closers = append(c.closers, closeFn)
}

// Stop stops the API server once; later calls return the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		var errs []error
		if err := c.stopEnv(); err != nil {
			errs = append(errs, fmt.Errorf("failed stopping %s API server: %w", c.Name, err))
		}
		c.apiServer = false
		for _, closeFn := range c.closers {
			errs = append(errs, closeFn())
		}
		if err := os.RemoveAll(c.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("failed removing certificate directory of %s: %w", c.Name, err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// Kubeconfig returns an admin kubeconfig for the API server with a context named after the
// cluster, so that several of them can be merged into one KUBECONFIG.
func (c *Cluster) Kubeconfig() ([]byte, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("failed parsing API server address of %s: %w", c.Name, err)
	}
	u.Path = c.Config.APIPath
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos[c.Name] = &clientcmdapi.AuthInfo{ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name}
	cfg.CurrentContext = c.Name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed serializing kubeconfig of %s: %w", c.Name, err)
	}
	return out, nil
}

// WriteUserKubeconfig writes a kubeconfig to path that authenticates as user in groups with a
// client certificate of the API server's CA, so that the audit log names that user for every
// request made with it.
func (c *Cluster) WriteUserKubeconfig(path, user string, groups ...string) error {
	u, err := c.Env.ControlPlane.AddUser(envtest.User{Name: user, Groups: groups}, c.Config)
	if err != nil {
		return fmt.Errorf("failed adding user %s to %s: %w", user, c.Name, err)
	}
	data, err := u.KubeConfig()
	if err != nil {
		return fmt.Errorf("failed serializing kubeconfig of user %s of %s: %w", user, c.Name, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// WriteKubeconfig writes the admin kubeconfig to path, readable by the owner only since it holds
// a client key.
func (c *Cluster) WriteKubeconfig(path string) error {
	data, err := c.Kubeconfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("failed creating directory for %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("failed writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// Address returns the "host:port" of the cluster's API server.
func (c *Cluster) Address() (string, error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return "", fmt.Errorf("failed parsing the address of the %s API server: %w", c.Name, err)
	}
	if u.Host == "" {
		return "", errors.New("the " + c.Name + " API server has no address")
	}
	return u.Host, nil
}
