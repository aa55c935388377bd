package sandbox

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Cluster is one envtest API server (etcd and kube-apiserver, no controllers).
type Cluster struct {
	// Name is the role of the cluster (garden, seed) or the seed namespace of a shoot.
	Name string
	// Env is the running envtest environment.
	Env *envtest.Environment
	// Config is an admin REST config for the API server.
	Config *rest.Config
	// Client is an uncached admin client; unstructured objects are supported.
	Client client.WithWatch

	stopOnce sync.Once
	stopErr  error
}

func startCluster(name string, scheme *runtime.Scheme, crdPaths []string) (*Cluster, error) {
	env := &envtest.Environment{
		Scheme:                   scheme,
		CRDDirectoryPaths:        crdPaths,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: ControlPlaneStartTimeout,
		ControlPlaneStopTimeout:  ControlPlaneStopTimeout,
	}
	cfg, err := env.Start()
	if err != nil {
		// A half-started control plane still owns processes and a data directory.
		_ = env.Stop()
		return nil, fmt.Errorf("failed starting %s API server: %w", name, err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("failed creating %s client: %w", name, err)
	}
	return &Cluster{Name: name, Env: env, Config: cfg, Client: c}, nil
}

// stop stops the API server once; later calls return the first result.
func (c *Cluster) stop() error {
	c.stopOnce.Do(func() {
		if err := c.Env.Stop(); err != nil {
			c.stopErr = fmt.Errorf("failed stopping %s API server: %w", c.Name, err)
		}
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
