// Package admission_test tests the shoot-flux admission against a real kube-apiserver: its charts
// are rendered the way gardener-operator renders them and every object is applied with server-side
// dry-run, and the admission command runs in-process behind the ValidatingWebhookConfiguration of
// its application chart, so that the API server itself admits or rejects Shoots and project
// ConfigMaps. gardener-apiserver is not available here; Shoots are served from a CRD instead.
package admission_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// Timeouts of the suite. The admission starts in about a second and the API server picks up a
// webhook configuration within a few; the bounds leave room for a loaded machine.
var (
	// admissionStartTimeout bounds the start of the admission until it reports ready.
	admissionStartTimeout = time.Minute
	// webhookActiveTimeout bounds the wait until the API server calls newly registered webhooks.
	webhookActiveTimeout = time.Minute
	// admissionStopTimeout bounds the shutdown of the admission.
	admissionStopTimeout = 30 * time.Second
	// pollInterval is the polling interval of Eventually.
	pollInterval = 250 * time.Millisecond
)

const (
	// runtimeNamespace is where gardener-operator installs the runtime chart.
	runtimeNamespace = "garden"
	// priorityClassName is the class gardener-operator sets for admission pods.
	priorityClassName = "gardener-garden-system-400"
	// serviceName is the name of the runtime chart's Service.
	serviceName = "gardener-extension-shoot-flux-admission"
)

var (
	testEnv  *envtest.Environment
	k8s      client.Client
	warnings *sandbox.WarningRecorder
	certs    *testCertificates
)

func TestAdmission(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Admission Suite")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	SetDefaultEventuallyPollingInterval(pollInterval)
	logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))

	// make test-integration provides it; a missing one is a broken setup, not a reason to skip.
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS must point at the envtest binaries (hack/build-envtest.sh)")

	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/gardener").Output()
	Expect(err).NotTo(HaveOccurred(), "locating the gardener module with go list")
	gardenerDir := strings.TrimSpace(string(out))

	testEnv = &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(gardenerDir, "example", "seed-crds", "10-crd-autoscaling.k8s.io_verticalpodautoscalers.yaml")},
			CRDs:  []*apiextensionsv1.CustomResourceDefinition{shootCRD()},
		},
		ErrorIfCRDPathMissing: true,
	}
	restCfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(testEnv.Stop)

	scheme := runtime.NewScheme()
	Expect(validator.AddToScheme(scheme)).To(Succeed())
	// Pod Security warnings for workload templates arrive as HTTP warnings, not errors.
	warnings = &sandbox.WarningRecorder{}
	cfg := rest.CopyConfig(restCfg)
	cfg.WarningHandler = warnings
	// gardener's client package registers its types for protobuf, which gardener-apiserver serves
	// but the Shoot CRD does not.
	cfg.ContentType = runtime.ContentTypeJSON
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The garden runtime cluster provides both; the Priority admission plugin rejects pods naming
	// a class that does not exist.
	Expect(k8s.Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: priorityClassName},
		Value:      999998400,
	})).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   runtimeNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})).To(Succeed())

	certs = newTestCertificates()
})

// shootCRD serves core.gardener.cloud/v1beta1 Shoots without a schema, so that the API server
// routes their creations and updates through the webhooks like gardener-apiserver does.
func shootCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "shoots.core.gardener.cloud"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "core.gardener.cloud",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "shoots", Singular: "shoot", Kind: "Shoot", ListKind: "ShootList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name:    "v1beta1",
				Served:  true,
				Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// testCertificates are a CA and a serving certificate signed by it, as an operator provides them
// in the chart values.
type testCertificates struct {
	caPEM   string
	certPEM string
	keyPEM  string
}

// newTestCertificates issues the serving certificate for the names the runtime chart's Service has
// and for 127.0.0.1, where the suite runs the admission.
func newTestCertificates() *testCertificates {
	GinkgoHelper()
	ca, err := (&secretsutils.CertificateSecretConfig{Name: "ca", CommonName: "shoot-flux-admission-ca", CertType: secretsutils.CACert}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	server, err := (&secretsutils.CertificateSecretConfig{
		Name:       "server",
		CommonName: serviceName,
		DNSNames: []string{
			serviceName + "." + runtimeNamespace,
			serviceName + "." + runtimeNamespace + ".svc",
			serviceName + "." + runtimeNamespace + ".svc.cluster.local",
		},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		CertType:    secretsutils.ServerCert,
		SigningCA:   ca,
	}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	return &testCertificates{caPEM: string(ca.CertificatePEM), certPEM: string(server.CertificatePEM), keyPEM: string(server.PrivateKeyPEM)}
}

// createNamespace creates a namespace with a generated name and deletes it after the spec.
func createNamespace(ctx context.Context, prefix string, labels map[string]string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}
