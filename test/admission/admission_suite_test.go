// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package admission_test tests the shoot-flux admission against a real garden: its charts are
// rendered the way gardener-operator renders them and every object is applied with server-side
// dry-run, and the admission command runs in-process behind the ValidatingWebhookConfiguration of
// its application chart, so that gardener-apiserver admits or rejects Shoots (its
// ValidatingAdmissionWebhook plugin calls the webhook after gardener's own plugins) and the garden
// kube-apiserver admits or rejects project ConfigMaps.
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

	"github.com/gardener/gardener/pkg/client/kubernetes"
	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
)

// Timeouts of the suite. The admission starts in about a second and the API servers (the garden
// kube-apiserver and gardener-apiserver, each with its own informer) pick up a webhook
// configuration within a few; the bounds leave room for a loaded machine.
var (
	// admissionStartTimeout bounds the start of the admission until it reports ready.
	admissionStartTimeout = time.Minute
	// webhookActiveTimeout bounds the wait until both API servers call newly registered webhooks,
	// or stop calling removed ones.
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
	// Before the garden starts: gardener-apiserver, running in this process, sets controller-runtime's
	// logger too, and controller-runtime keeps the first one set.
	logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))

	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/gardener/gardener").Output()
	Expect(err).NotTo(HaveOccurred(), "locating the gardener module with go list")
	gardenerDir := strings.TrimSpace(string(out))

	// The runtime chart's VerticalPodAutoscaler needs its CRD, as gardener-operator installs it in
	// the runtime cluster.
	garden := startGarden(filepath.Join(gardenerDir, "example", "seed-crds", "10-crd-autoscaling.k8s.io_verticalpodautoscalers.yaml"))
	DeferCleanup(garden.Stop)

	// Pod Security warnings for workload templates arrive as HTTP warnings, not errors.
	warnings = &sandbox.WarningRecorder{}
	cfg := rest.CopyConfig(garden.Config)
	cfg.WarningHandler = warnings
	k8s, err = client.New(cfg, client.Options{Scheme: kubernetes.GardenScheme})
	Expect(err).NotTo(HaveOccurred())

	// The garden runtime cluster provides both; the Priority admission plugin rejects pods naming
	// a class that does not exist. The namespace comes before CreateGardenObjects, which creates
	// it without the label when it is missing.
	Expect(k8s.Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: priorityClassName},
		Value:      999998400,
	})).To(Succeed())
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   runtimeNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})).To(Succeed())

	// What gardener-apiserver needs to admit the suite's Shoots: the CloudProfile, Seed and
	// provider registrations of a landscape, and shoot-flux registered as an operator registers
	// it, without which the ExtensionValidator plugin rejects every Shoot naming shoot-flux.
	_, err = sandbox.CreateGardenObjects(ctx, k8s)
	Expect(err).NotTo(HaveOccurred())
	registration, err := os.ReadFile(filepath.Join("..", "..", "example", "controller-registration.yaml"))
	Expect(err).NotTo(HaveOccurred())
	objs, err := sandbox.DecodeObjects(registration)
	Expect(err).NotTo(HaveOccurred())
	Expect(kinds(objs)).To(ConsistOf("ControllerDeployment", "ControllerRegistration"))
	for _, o := range objs {
		Expect(k8s.Create(ctx, o)).To(Succeed(), "%s %s of example/controller-registration.yaml", o.GetKind(), o.GetName())
	}

	certs = newTestCertificates()
})

// startGarden starts the garden with gardener-apiserver's log in GinkgoWriter, shown with a failed
// spec (see gardener.GardenOptions.APIServerLog).
func startGarden(crdPaths ...string) *cluster.Cluster {
	GinkgoHelper()
	c, err := gardener.StartGarden(gardener.GardenOptions{CRDPaths: crdPaths, APIServerLog: GinkgoWriter})
	Expect(err).NotTo(HaveOccurred())
	return c
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
func createNamespace(ctx context.Context, prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// createProject creates a Project named name with its namespace and the cloud credentials its
// Shoots are bound to, and returns the namespace. Projects are not deleted after the spec: the
// garden runs no gardener-controller-manager that would finish their deletion, and each
// container of the suite has a project of its own.
func createProject(ctx context.Context, name string) string {
	GinkgoHelper()
	namespace, err := sandbox.CreateProject(ctx, k8s, name)
	Expect(err).NotTo(HaveOccurred())
	return namespace
}
