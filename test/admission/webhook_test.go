package admission_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	admissionchart "github.com/shoot-flux/gardener-extension-shoot-flux/charts/gardener-extension-shoot-flux-admission"
	"github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux-admission/app"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() int {
	GinkgoHelper()
	port, err := sandbox.FreePort()
	Expect(err).NotTo(HaveOccurred())
	return port
}

// startAdmission runs the admission command in-process with the serving certificate of the suite,
// as the runtime chart mounts it, and further args, and waits until it reports ready. Its
// kubeconfig points at an address where no API server listens: the webhooks must not need one.
func startAdmission(args ...string) (webhookPort int) {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	certDir := filepath.Join(dir, "tls")
	Expect(os.Mkdir(certDir, 0o700)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(certDir, corev1.TLSCertKey), []byte(certs.certPEM), 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(certDir, corev1.TLSPrivateKeyKey), []byte(certs.keyPEM), 0o600)).To(Succeed())

	kubeconfig := filepath.Join(dir, "kubeconfig")
	Expect(clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"none": {Server: "https://127.0.0.1:1"}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"none": {Token: "unused"}},
		Contexts:       map[string]*clientcmdapi.Context{"none": {Cluster: "none", AuthInfo: "none"}},
		CurrentContext: "none",
	}, kubeconfig)).To(Succeed())

	webhookPort, healthPort := freePort(), freePort()
	cmd := app.NewAdmissionCommand()
	cmd.SetArgs(append([]string{
		"--kubeconfig=" + kubeconfig,
		"--webhook-config-server-host=127.0.0.1",
		"--webhook-config-server-port=" + strconv.Itoa(webhookPort),
		"--webhook-config-cert-dir=" + certDir,
		"--health-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"--metrics-bind-address=0",
		"--log-format=text",
	}, args...))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		done <- cmd.ExecuteContext(ctx)
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(done, admissionStopTimeout).Should(Receive(BeNil()))
	})

	probe := func(path string) func(Gomega) {
		return func(g Gomega) {
			select {
			case err := <-done:
				StopTrying(fmt.Sprintf("the admission exited: %v", err)).Now()
			default:
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", healthPort, path))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.Body.Close()).To(Succeed())
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		}
	}
	Eventually(probe("/readyz"), admissionStartTimeout).Should(Succeed())
	Eventually(probe("/healthz"), admissionStartTimeout).Should(Succeed())
	return webhookPort
}

// registerWebhooks creates the ValidatingWebhookConfiguration of the application chart, calling
// the admission at 127.0.0.1 and trusting the suite's CA. The name suffix lets two configurations
// exist at once.
func registerWebhooks(ctx context.Context, webhookPort int, nameSuffix string) {
	GinkgoHelper()
	objs := mustRender(admissionchart.ApplicationChartPath, virtualNamespace, applicationValues(),
		map[string]any{"webhookConfig": map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d", webhookPort)}})
	cfg := find(objs, "ValidatingWebhookConfiguration")
	cfg.SetName(cfg.GetName() + nameSuffix)
	Expect(k8s.Create(ctx, cfg)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, cfg))).To(Succeed())
	})
}

// projectLabels are the labels gardener puts on project namespaces.
var projectLabels = map[string]string{"gardener.cloud/role": "project", "project.gardener.cloud/name": "dev"}

func fluxConfigMap(namespace string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "flux-config"}, Data: data}
}

// waitForWebhooks waits until the API server calls the webhooks (it loads webhook configurations
// asynchronously): until creating an invalid flux-config fails as expected.
func waitForWebhooks(ctx context.Context, namespace string, expected func(error) bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := fluxConfigMap(namespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"})
		err := k8s.Create(ctx, cm)
		if err == nil {
			g.Expect(k8s.Delete(ctx, cm)).To(Succeed())
		}
		g.Expect(expected(err)).To(BeTrue(), "creating an invalid flux-config: %v", err)
	}, webhookActiveTimeout).Should(Succeed())
}

// shootWithFlux returns a Shoot that enables shoot-flux with the given providerConfig and carries
// the label gardener-apiserver sets on such Shoots.
func shootWithFlux(namespace, name, providerConfig string, resources ...gardencorev1beta1.NamedResourceReference) *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			Labels:    map[string]string{"extensions.extensions.gardener.cloud/shoot-flux": "true"},
		},
		Spec: gardencorev1beta1.ShootSpec{
			Extensions: []gardencorev1beta1.Extension{{Type: "shoot-flux", ProviderConfig: &runtime.RawExtension{Raw: []byte(providerConfig)}}},
			Resources:  resources,
		},
	}
}

func secretResource(name string) gardencorev1beta1.NamedResourceReference {
	return gardencorev1beta1.NamedResourceReference{
		Name:        name,
		ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "secret-" + name},
	}
}

// expectDenied asserts that the API server rejected a request because a webhook denied it.
func expectDenied(err error, webhook string, messages ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred())
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected a denial, got %v", err)
	Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("admission webhook %q denied the request", webhook)))
	for _, msg := range messages {
		Expect(err.Error()).To(ContainSubstring(msg))
	}
}

var _ = Describe("Admission behind a real API server", Ordered, func() {
	var projectNamespace string

	BeforeAll(func(ctx SpecContext) {
		// A private network of git servers, as an operator allows it for the controller's scans.
		registerWebhooks(ctx, startAdmission("--host-policy-allowed-networks=10.20.0.0/16"), "")
		projectNamespace = createNamespace(ctx, "garden-dev", projectLabels)
		waitForWebhooks(ctx, projectNamespace, apierrors.IsForbidden)
	})

	fluxVersion := func() string {
		return manifests.SupportedVersions().Flux[0]
	}

	Describe("Shoots", func() {
		It("rejects an invalid providerConfig with its field path", func(ctx SpecContext) {
			shoot := shootWithFlux(projectNamespace, "bad-url", `{"source": {"url": "ftp://example.com/repo"}}`)
			expectDenied(k8s.Create(ctx, shoot), shootWebhook, `spec.extensions[0].providerConfig.source.url: Invalid value: "ftp://example.com/repo"`)
		})

		It("rejects a reference to a missing Shoot resource", func(ctx SpecContext) {
			shoot := shootWithFlux(projectNamespace, "missing-ref",
				`{"source": {"url": "https://github.com/owner/repo", "secretResourceName": "git-creds"}}`, secretResource("other"))
			expectDenied(k8s.Create(ctx, shoot), shootWebhook,
				`spec.extensions[0].providerConfig.source.secretResourceName: Invalid value: "git-creds": must name an entry of spec.resources`)
		})

		It("admits a valid providerConfig and checks changes of it", func(ctx SpecContext) {
			shoot := shootWithFlux(projectNamespace, "valid",
				`{"flux": {"version": "`+fluxVersion()+`"}, "source": {"url": "https://github.com/owner/repo", "secretResourceName": "git-creds"}}`,
				secretResource("git-creds"))
			Expect(k8s.Create(ctx, shoot)).To(Succeed())

			patch := client.MergeFrom(shoot.DeepCopy())
			shoot.Spec.Extensions[0].ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"flux": {"version": "v0.1.0"}}`)}
			expectDenied(k8s.Patch(ctx, shoot, patch), shootWebhook, `spec.extensions[0].providerConfig.flux.version: Unsupported value: "v0.1.0"`)

			Expect(k8s.Delete(ctx, shoot)).To(Succeed())
		})

		It("leaves Shoots without the extension label alone, and admits unrelated changes of an invalid providerConfig", func(ctx SpecContext) {
			// Without the label gardener-apiserver sets, the object selector keeps the Shoot away
			// from the admission: this one exists although its providerConfig is invalid, as a Shoot
			// whose configuration was valid when it was written.
			shoot := shootWithFlux(projectNamespace, "unlabeled", `{"flux": {"version": "v0.1.0"}}`)
			shoot.Labels = nil
			Expect(k8s.Create(ctx, shoot)).To(Succeed())

			patch := client.MergeFrom(shoot.DeepCopy())
			shoot.Labels = map[string]string{"extensions.extensions.gardener.cloud/shoot-flux": "true"}
			shoot.Annotations = map[string]string{"gardener.cloud/operation": "reconcile"}
			Expect(k8s.Patch(ctx, shoot, patch)).To(Succeed())

			patch = client.MergeFrom(shoot.DeepCopy())
			shoot.Spec.Extensions[0].ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"flux": {"version": "v0.2.0"}}`)}
			expectDenied(k8s.Patch(ctx, shoot, patch), shootWebhook, "spec.extensions[0].providerConfig.flux.version")

			// Deletion is no operation of the webhook.
			Expect(k8s.Delete(ctx, shoot)).To(Succeed())
		})
	})

	Describe("project ConfigMaps", func() {
		It("rejects an invalid flux-config with the key", func(ctx SpecContext) {
			cm := fluxConfigMap(projectNamespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"})
			expectDenied(k8s.Create(ctx, cm), configMapWebhook, `repositoryUrl: Invalid value: "ftp://example.com/repo"`)
		})

		It("quotes a legacy value as the user wrote it", func(ctx SpecContext) {
			cm := fluxConfigMap(projectNamespace, map[string]string{"fluxVersion": "0.29.5", "repositoryBranch": "main"})
			expectDenied(k8s.Create(ctx, cm), configMapWebhook, `ConfigMap `+projectNamespace+`/flux-config: fluxVersion: Unsupported value: "0.29.5": supported values: "`+strings.Join(helper.VersionSelectors(manifests.FluxVersions()), `", "`)+`"`)
		})

		It("admits a valid flux-config and checks changes of it", func(ctx SpecContext) {
			cm := fluxConfigMap(projectNamespace, map[string]string{
				"fluxVersion":      fluxVersion(),
				"repositoryUrl":    "ssh://git@github.com/owner/repo",
				"repositoryBranch": "main",
				"repositoryType":   "private",
			})
			Expect(k8s.Create(ctx, cm)).To(Succeed())

			patch := client.MergeFrom(cm.DeepCopy())
			cm.Data["config.yaml"] = "bootstrap:\n  mode: helm\n"
			expectDenied(k8s.Patch(ctx, cm, patch), configMapWebhook, `config.yaml: bootstrap.mode: Unsupported value: "helm"`)

			Expect(k8s.Delete(ctx, cm)).To(Succeed())
		})

		It("leaves other ConfigMaps of project namespaces alone", func(ctx SpecContext) {
			cm := fluxConfigMap(projectNamespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"})
			cm.Name = "not-flux-config"
			Expect(k8s.Create(ctx, cm)).To(Succeed())
		})

		It("leaves flux-config ConfigMaps outside project namespaces alone", func(ctx SpecContext) {
			namespace := createNamespace(ctx, "not-a-project", nil)
			Expect(k8s.Create(ctx, fluxConfigMap(namespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"}))).To(Succeed())
		})
	})

	Describe("repository hosts", func() {
		const hostNotAllowed = "the host is not allowed by the operator's host policy"

		It("rejects the host of an SSH scan the policy refuses in a Shoot with its field path", func(ctx SpecContext) {
			shoot := shootWithFlux(projectNamespace, "loopback", `{"source": {"url": "ssh://git@127.0.0.1/owner/repo"}}`)
			expectDenied(k8s.Create(ctx, shoot), shootWebhook,
				`spec.extensions[0].providerConfig.source.url: Invalid value: "ssh://git@127.0.0.1/owner/repo": `+hostNotAllowed)
		})

		It("rejects refused hosts and ports in a flux-config with the key", func(ctx SpecContext) {
			cm := fluxConfigMap(projectNamespace, map[string]string{"repositoryUrl": "git@kubernetes.default.svc:owner/repo"})
			expectDenied(k8s.Create(ctx, cm), configMapWebhook, `repositoryUrl: Invalid value: "git@kubernetes.default.svc:owner/repo": `+hostNotAllowed)

			cm = fluxConfigMap(projectNamespace, map[string]string{"config.yaml": "source:\n  url: ssh://git@github.com:2200/owner/repo\n"})
			expectDenied(k8s.Create(ctx, cm), configMapWebhook, `config.yaml: source.url: Invalid value: "ssh://git@github.com:2200/owner/repo": `+hostNotAllowed)
		})

		It("admits public hosts and the networks the operator allows", func(ctx SpecContext) {
			shoot := shootWithFlux(projectNamespace, "github", `{"source": {"url": "ssh://git@github.com:22/owner/repo"}}`)
			Expect(k8s.Create(ctx, shoot)).To(Succeed())
			Expect(k8s.Delete(ctx, shoot)).To(Succeed())

			cm := fluxConfigMap(projectNamespace, map[string]string{"repositoryUrl": "ssh://git@10.20.1.2/owner/repo"})
			Expect(k8s.Create(ctx, cm)).To(Succeed())
			Expect(k8s.Delete(ctx, cm)).To(Succeed())
		})
	})
})

// With failurePolicy Fail, everything the webhooks select depends on the admission's availability;
// the selectors and the match condition keep that to what the admission validates.
var _ = Describe("Unreachable admission", Ordered, func() {
	var projectNamespace string

	BeforeAll(func(ctx SpecContext) {
		projectNamespace = createNamespace(ctx, "garden-down", projectLabels)
		// Runs after the configuration is deleted (cleanups run in reverse order), so that the
		// API server no longer calls the dead webhooks when other specs start.
		DeferCleanup(func(ctx SpecContext) {
			Eventually(func() error {
				return client.IgnoreAlreadyExists(k8s.Create(ctx, fluxConfigMap(projectNamespace, nil)))
			}, webhookActiveTimeout).Should(Succeed())
		})
		// Nothing listens on the port.
		registerWebhooks(ctx, freePort(), "-unreachable")
		waitForWebhooks(ctx, projectNamespace, apierrors.IsInternalError)
	})

	It("blocks flux-config ConfigMaps of projects", func(ctx SpecContext) {
		err := k8s.Create(ctx, fluxConfigMap(projectNamespace, map[string]string{"repositoryUrl": "ssh://git@github.com/owner/repo"}))
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("failed calling webhook %q", configMapWebhook))))
	})

	It("blocks Shoots that enable shoot-flux", func(ctx SpecContext) {
		err := k8s.Create(ctx, shootWithFlux(projectNamespace, "down", `{}`))
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("failed calling webhook %q", shootWebhook))))
	})

	It("does not affect other ConfigMaps of projects", func(ctx SpecContext) {
		cm := fluxConfigMap(projectNamespace, nil)
		cm.Name = "kube-root-ca-copy"
		Expect(k8s.Create(ctx, cm)).To(Succeed())
	})

	It("does not affect Shoots without shoot-flux", func(ctx SpecContext) {
		shoot := shootWithFlux(projectNamespace, "without-flux", `{}`)
		shoot.Labels = nil
		shoot.Spec.Extensions = nil
		Expect(k8s.Create(ctx, shoot)).To(Succeed())
	})
})
