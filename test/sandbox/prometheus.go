// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

const (
	// PrometheusShootServiceAccount is the ServiceAccount in the shoot's kube-system as which the
	// shoot's Prometheus reads the shoot (gardener's prometheus/shoot ServiceAccountName).
	PrometheusShootServiceAccount = "prometheus-shoot"
	// PrometheusShootAccessSecret is the seed Secret that holds its token (gardener's
	// prometheus/shoot AccessSecretName), which ScrapeConfigs of the shoot's Prometheus reference.
	PrometheusShootAccessSecret = gardenerutils.SecretNamePrefixShootAccess + PrometheusShootServiceAccount
	// prometheusShootClusterRole is the name gardener gives the ClusterRole of the shoot's
	// Prometheus in the shoot: "gardener.cloud:monitoring:" + "prometheus-" + its name.
	prometheusShootClusterRole = "gardener.cloud:monitoring:" + PrometheusShootServiceAccount
)

// PrometheusShootAccess gives the shoot's Prometheus its shoot access as a landscape does, with
// gardener's code (the shoot-access-prometheus-shoot Secret, its token requestor and ClusterRole),
// and returns the token a ScrapeConfig labelled prometheus=shoot gets from that Secret.
func (h *ShootHandle) PrometheusShootAccess(ctx context.Context) ([]byte, error) {
	if h.shared != nil {
		return nil, errSharedResourceManager(h.SeedNamespace)
	}
	access := gardenerutils.NewShootAccessSecret(PrometheusShootServiceAccount, h.SeedNamespace)
	if err := access.Reconcile(ctx, h.sandbox.Seed.Client); err != nil {
		return nil, fmt.Errorf("failed creating the access Secret of the shoot's Prometheus: %w", err)
	}
	_, token, err := requestToken(ctx, &tokenrequestor.Reconciler{
		SourceClient: h.sandbox.Seed.Client,
		TargetClient: h.Shoot.Client,
		Clock:        clock.RealClock{},
		JitterFunc:   wait.Jitter,
		APIAudiences: []string{v1beta1constants.GardenerAudience},
		Class:        ptr.To(resourcesv1alpha1.ResourceManagerClassShoot),
	}, client.ObjectKeyFromObject(access.Secret))
	if err != nil {
		return nil, fmt.Errorf("shoot access of the shoot's Prometheus: %w", err)
	}
	if err := grantPrometheusShoot(ctx, h.Shoot.Client); err != nil {
		return nil, err
	}
	return token, nil
}

// prometheusShootRules are the rules of the ClusterRole gardener deploys into the shoot for the
// shoot's Prometheus, which scrapes metrics there (gardener's
// pkg/component/observability/monitoring/prometheus rbac.go clusterRoleTarget with
// TargetCluster.ScrapesMetrics). A stand-in: that function is unexported, and the component that
// calls it deploys a whole Prometheus.
var prometheusShootRules = []rbacv1.PolicyRule{
	{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	{APIGroups: []string{corev1.GroupName}, Resources: []string{"nodes", "services", "endpoints", "pods"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{corev1.GroupName}, Resources: []string{"nodes/metrics", "pods/log", "nodes/proxy", "services/proxy", "pods/proxy"}, Verbs: []string{"get"}},
}

func grantPrometheusShoot(ctx context.Context, shoot client.Client) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: prometheusShootClusterRole}}
	if _, err := controllerutil.CreateOrUpdate(ctx, shoot, role, func() error {
		role.Rules = prometheusShootRules
		return nil
	}); err != nil {
		return fmt.Errorf("failed writing ClusterRole %s: %w", role.Name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: prometheusShootClusterRole}}
	if _, err := controllerutil.CreateOrUpdate(ctx, shoot, binding, func() error {
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: PrometheusShootServiceAccount, Namespace: metav1.NamespaceSystem}}
		return nil
	}); err != nil {
		return fmt.Errorf("failed writing ClusterRoleBinding %s: %w", binding.Name, err)
	}
	return nil
}

// TokenConfig is a REST config for the shoot's API server that authenticates with token only,
// e.g. the one of PrometheusShootAccess: what the shoot's Prometheus uses for its kubernetes
// service discovery and its scrapes. It verifies the API server's certificate, which the
// ScrapeConfigs of gardener's shoot Prometheus skip.
func (h *ShootHandle) TokenConfig(token []byte) *rest.Config {
	return &rest.Config{
		Host:            h.Shoot.Config.Host,
		APIPath:         h.Shoot.Config.APIPath,
		BearerToken:     string(token),
		TLSClientConfig: rest.TLSClientConfig{CAData: h.Shoot.Config.CAData},
	}
}

// PodMetricsPath is the path through which the shoot's Prometheus scrapes a port of a pod in the
// shoot: kube-apiserver's pod proxy, as gardener's ClusterComponentScrapeConfigSpec sets
// __metrics_path__ from the pod's name and the container port's number.
func PodMetricsPath(namespace, pod string, port int32) string {
	return "/api/v1/namespaces/" + namespace + "/pods/" + pod + ":" + strconv.Itoa(int(port)) + "/proxy/metrics"
}

// ScrapePod GETs path (PodMetricsPath) from the shoot's API server with token as the shoot's
// Prometheus does, and returns the exposition text. Anything but 200 is an error that carries the
// status and the start of the answer.
func (h *ShootHandle) ScrapePod(ctx context.Context, token []byte, path string) ([]byte, error) {
	httpClient, err := rest.HTTPClientFor(h.TokenConfig(token))
	if err != nil {
		return nil, fmt.Errorf("failed creating an HTTP client for the shoot API server: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(h.Shoot.Config.Host, "/")+path, nil)
	if err != nil {
		return nil, fmt.Errorf("failed creating the request for %s: %w", path, err)
	}
	// What Prometheus asks for; the proxy passes the controllers' text format through.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed scraping %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("failed reading %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s: %s", path, resp.Status, truncate(string(body), 512))
	}
	return body, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
