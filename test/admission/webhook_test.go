// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

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
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
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
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() int {
	GinkgoHelper()
	port, err := kubelet.FreePort()
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

// extensionLabel is the label gardener-apiserver's ExtensionLabels plugin sets on Shoots that
// enable shoot-flux.
const extensionLabel = v1beta1constants.LabelExtensionExtensionTypePrefix + constants.ExtensionType

func fluxConfigMap(namespace string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "flux-config"}, Data: data}
}

// newShoot returns a Shoot that gardener-apiserver admits in a project of the suite, enabling
// shoot-flux with providerConfig (JSON) and referring to resources. It does not carry the label
// that the webhook's object selector matches: gardener-apiserver's ExtensionLabels plugin sets it,
// as for every Shoot a user writes, before its ValidatingAdmissionWebhook plugin calls the webhook.
func newShoot(namespace, name, providerConfig string, resources ...gardencorev1beta1.NamedResourceReference) *gardencorev1beta1.Shoot {
	GinkgoHelper()
	shoot, err := sandbox.NewShoot(namespace, name, []byte(providerConfig))
	Expect(err).NotTo(HaveOccurred())
	shoot.Spec.Resources = resources
	return shoot
}

// deleteShoot deletes a Shoot the way a user does, with the confirmation annotation that
// gardener-apiserver's DeletionConfirmation plugin requires.
func deleteShoot(ctx context.Context, shoot *gardencorev1beta1.Shoot) {
	GinkgoHelper()
	patch := client.MergeFrom(shoot.DeepCopy())
	metav1.SetMetaDataAnnotation(&shoot.ObjectMeta, v1beta1constants.ConfirmationDeletion, "true")
	Expect(k8s.Patch(ctx, shoot, patch)).To(Succeed())
	Expect(k8s.Delete(ctx, shoot)).To(Succeed())
}

// createSecretResource creates the Secret secret-<name> in namespace and returns the Shoot
// resource referring to it; gardener-apiserver's ResourceReferenceManager plugin rejects Shoots
// referring to Secrets that do not exist.
func createSecretResource(ctx context.Context, namespace, name string) gardencorev1beta1.NamedResourceReference {
	GinkgoHelper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "secret-" + name}}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	return gardencorev1beta1.NamedResourceReference{
		Name:        name,
		ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: secret.Name},
	}
}

// waitForWebhooks waits until both API servers call the webhooks: the garden kube-apiserver for
// ConfigMaps and gardener-apiserver for Shoots load webhook configurations asynchronously, each
// from its own informer. It waits until creating an invalid flux-config and an invalid Shoot (a
// dry run) fails as expected.
func waitForWebhooks(ctx context.Context, namespace string, expected func(error) bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := fluxConfigMap(namespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"})
		err := k8s.Create(ctx, cm)
		if err == nil {
			g.Expect(k8s.Delete(ctx, cm)).To(Succeed())
		}
		g.Expect(expected(err)).To(BeTrue(), "creating an invalid flux-config: %v", err)

		err = k8s.Create(ctx, newShoot(namespace, "probe", `{"source": {"url": "ftp://example.com/repo"}}`), client.DryRunAll)
		g.Expect(expected(err)).To(BeTrue(), "creating an invalid Shoot: %v", err)
	}, webhookActiveTimeout).Should(Succeed())
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

var _ = Describe("Admission behind the garden's API servers", Ordered, func() {
	var (
		projectNamespace string
		// legacyShoot was admitted before the webhooks were registered, as a Shoot written when
		// its flux version was still supported.
		legacyShoot *gardencorev1beta1.Shoot
	)

	BeforeAll(func(ctx SpecContext) {
		projectNamespace = createProject(ctx, "dev")
		legacyShoot = newShoot(projectNamespace, "legacy", `{"flux": {"version": "v0.1.0"}}`)
		// Right after its project, gardener-apiserver's caches may lack the CredentialsBinding.
		Expect(sandbox.CreateGardenShoot(ctx, k8s, legacyShoot)).To(Succeed())

		// A private network of git servers, as an operator allows it for the controller's scans.
		registerWebhooks(ctx, startAdmission("--host-policy-allowed-networks=10.20.0.0/16"), "")
		waitForWebhooks(ctx, projectNamespace, apierrors.IsForbidden)
	})

	fluxVersion := func() string {
		return manifests.SupportedVersions().Flux[0]
	}

	Describe("Shoots", func() {
		It("rejects an invalid providerConfig with its field path through gardener-apiserver", func(ctx SpecContext) {
			shoot := newShoot(projectNamespace, "bad-url", `{"source": {"url": "ftp://example.com/repo"}}`)
			// The webhook's object selector matches the label only once gardener-apiserver's
			// ExtensionLabels plugin has set it: its ValidatingAdmissionWebhook plugin calls the
			// webhook, not the garden kube-apiserver, which merely proxies the request.
			Expect(shoot.Labels).NotTo(HaveKey(extensionLabel))
			expectDenied(k8s.Create(ctx, shoot), shootWebhook, `spec.extensions[0].providerConfig.source.url: Invalid value: "ftp://example.com/repo"`)
		})

		It("rejects a reference to a missing Shoot resource", func(ctx SpecContext) {
			shoot := newShoot(projectNamespace, "missing-ref",
				`{"source": {"url": "https://github.com/owner/repo", "secretResourceName": "git-creds"}}`, createSecretResource(ctx, projectNamespace, "other"))
			expectDenied(k8s.Create(ctx, shoot), shootWebhook,
				`spec.extensions[0].providerConfig.source.secretResourceName: Invalid value: "git-creds": must name an entry of spec.resources`)
		})

		It("admits a valid providerConfig and checks changes of it", func(ctx SpecContext) {
			shoot := newShoot(projectNamespace, "valid",
				`{"flux": {"version": "`+fluxVersion()+`"}, "source": {"url": "https://github.com/owner/repo", "secretResourceName": "git-creds"}}`,
				createSecretResource(ctx, projectNamespace, "git-creds"))
			Expect(k8s.Create(ctx, shoot)).To(Succeed())

			patch := client.MergeFrom(shoot.DeepCopy())
			shoot.Spec.Extensions[0].ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"flux": {"version": "v0.1.0"}}`)}
			expectDenied(k8s.Patch(ctx, shoot, patch), shootWebhook, `spec.extensions[0].providerConfig.flux.version: Unsupported value: "v0.1.0"`)

			deleteShoot(ctx, shoot)
		})

		It("admits unrelated changes of a Shoot whose providerConfig is no longer valid", func(ctx SpecContext) {
			shoot := &gardencorev1beta1.Shoot{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(legacyShoot), shoot)).To(Succeed())
			// The label the webhook's object selector matches, set by gardener-apiserver.
			Expect(shoot.Labels).To(HaveKeyWithValue(extensionLabel, "true"))

			patch := client.MergeFrom(shoot.DeepCopy())
			shoot.Spec.Provider.Workers[0].Maximum = 2
			Expect(k8s.Patch(ctx, shoot, patch)).To(Succeed())

			patch = client.MergeFrom(shoot.DeepCopy())
			shoot.Spec.Extensions[0].ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"flux": {"version": "v0.2.0"}}`)}
			expectDenied(k8s.Patch(ctx, shoot, patch), shootWebhook, "spec.extensions[0].providerConfig.flux.version")

			// Deletion is no operation of the webhook.
			deleteShoot(ctx, shoot)
		})

		It("comes after gardener's own admission plugins", func(ctx SpecContext) {
			// A Kubernetes version the CloudProfile does not offer is gardener's reason to reject,
			// before the webhook is asked about the invalid providerConfig.
			shoot := newShoot(projectNamespace, "old-k8s", `{"flux": {"version": "v0.1.0"}}`)
			shoot.Spec.Kubernetes.Version = "1.0.0"
			err := k8s.Create(ctx, shoot)
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected gardener's rejection, got %v", err)
			Expect(err.Error()).To(ContainSubstring(`shoots.core.gardener.cloud "old-k8s" is forbidden: spec.kubernetes.version: Unsupported value: "1.0.0": supported values: "` + sandbox.KubernetesVersion + `"`))
			Expect(err.Error()).NotTo(ContainSubstring("admission webhook"))

			// With gardener's reason gone, the webhook's remains.
			shoot.Spec.Kubernetes.Version = sandbox.KubernetesVersion
			expectDenied(k8s.Create(ctx, shoot), shootWebhook, `spec.extensions[0].providerConfig.flux.version: Unsupported value: "v0.1.0"`)
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
			namespace := createNamespace(ctx, "not-a-project")
			Expect(k8s.Create(ctx, fluxConfigMap(namespace, map[string]string{"repositoryUrl": "ftp://example.com/repo"}))).To(Succeed())
		})
	})

	Describe("repository hosts", func() {
		const hostNotAllowed = "the host is not allowed by the operator's host policy"

		It("rejects the host of an SSH scan the policy refuses in a Shoot with its field path", func(ctx SpecContext) {
			shoot := newShoot(projectNamespace, "loopback", `{"source": {"url": "ssh://git@127.0.0.1/owner/repo"}}`)
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
			shoot := newShoot(projectNamespace, "github", `{"source": {"url": "ssh://git@github.com:22/owner/repo"}}`)
			Expect(k8s.Create(ctx, shoot)).To(Succeed())
			deleteShoot(ctx, shoot)

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
		projectNamespace = createProject(ctx, "down")
		// Runs after the configuration is deleted (cleanups run in reverse order), so that neither
		// API server calls the dead webhooks any more when other specs start.
		DeferCleanup(func(ctx SpecContext) {
			Eventually(func(g Gomega) {
				g.Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, fluxConfigMap(projectNamespace, nil)))).To(Succeed())
				g.Expect(k8s.Create(ctx, newShoot(projectNamespace, "probe", `{}`), client.DryRunAll)).To(Succeed())
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
		err := k8s.Create(ctx, newShoot(projectNamespace, "down", `{}`))
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("failed calling webhook %q", shootWebhook))))
	})

	It("does not affect other ConfigMaps of projects", func(ctx SpecContext) {
		cm := fluxConfigMap(projectNamespace, nil)
		cm.Name = "kube-root-ca-copy"
		Expect(k8s.Create(ctx, cm)).To(Succeed())
	})

	It("does not affect Shoots without shoot-flux", func(ctx SpecContext) {
		shoot := newShoot(projectNamespace, "without-flux", "")
		shoot.Spec.Extensions = nil
		Expect(k8s.Create(ctx, shoot)).To(Succeed())
		Expect(shoot.Labels).NotTo(HaveKey(extensionLabel))
	})
})
