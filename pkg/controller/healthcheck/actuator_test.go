// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/secrets"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
)

// seedManager is what gardener's health check actuator takes from the manager: the seed's config
// and client.
type seedManager struct {
	manager.Manager
	client client.Client
}

func (m seedManager) GetConfig() *rest.Config    { return &rest.Config{Host: "https://seed.invalid"} }
func (m seedManager) GetClient() client.Client   { return m.client }
func (m seedManager) GetLogger() logr.Logger     { return logr.Discard() }
func (m seedManager) Add(manager.Runnable) error { return nil }

// clientCheck records the shoot client it has when its check runs. Both checks of a test run at
// the same time: each waits until the other has started.
type clientCheck struct {
	shoot   client.Client
	started *sync.WaitGroup
	mu      *sync.Mutex
	seen    map[string]client.Client
}

func (c *clientCheck) InjectTargetClient(shoot client.Client) { c.shoot = shoot }
func (c *clientCheck) SetLoggerSuffix(string, string)         {}

func (c *clientCheck) Check(ctx context.Context, request types.NamespacedName) (*healthcheck.SingleCheckResult, error) {
	c.started.Done()
	both := make(chan struct{})
	go func() { c.started.Wait(); close(both) }()
	select {
	case <-both:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[request.Namespace] = c.shoot
	return &healthcheck.SingleCheckResult{Status: gardencorev1beta1.ConditionTrue}, nil
}

// shootAccessTo is the kubeconfig Secret through which the library reaches a shoot's API server.
func shootAccessTo(namespace, server string, ca []byte) *corev1.Secret {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["shoot"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["shoot"] = &clientcmdapi.AuthInfo{Token: namespace}
	cfg.Contexts["shoot"] = &clientcmdapi.Context{Cluster: "shoot", AuthInfo: "shoot"}
	cfg.CurrentContext = "shoot"
	kubeconfig, err := clientcmd.Write(*cfg)
	Expect(err).NotTo(HaveOccurred())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: v1beta1constants.SecretNameGardenerInternal},
		Data:       map[string][]byte{secrets.DataKeyKubeconfig: kubeconfig},
	}
}

var _ = Describe("Health check actuator", func() {
	namespaces := []string{"shoot--foo--a", "shoot--foo--b"}

	shootAccess := func(namespace string) *corev1.Secret {
		return shootAccessTo(namespace, fmt.Sprintf("https://api.%s.invalid", namespace), nil)
	}

	// checkConcurrently checks both shoots at once with actuator and returns the shoot client each
	// check had.
	checkConcurrently := func(newActuator func(newCheck func() healthcheck.HealthCheck) healthcheck.HealthCheckActuator) map[string]client.Client {
		var (
			started sync.WaitGroup
			mu      sync.Mutex
			seen    = map[string]client.Client{}
		)
		started.Add(len(namespaces))
		actuator := newActuator(func() healthcheck.HealthCheck {
			return &clientCheck{started: &started, mu: &mu, seen: seen}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, ns := range namespaces {
			wg.Go(func() {
				defer GinkgoRecover()
				results, err := actuator.ExecuteHealthCheckFunctions(ctx, logr.Discard(), types.NamespacedName{Namespace: ns, Name: "shoot-flux"})
				Expect(err).NotTo(HaveOccurred())
				Expect(*results).To(ConsistOf(HaveField("Status", gardencorev1beta1.ConditionTrue)))
			})
		}
		wg.Wait()
		Expect(seen).To(HaveLen(len(namespaces)))
		return seen
	}

	var mgr seedManager

	BeforeEach(func() {
		mgr = seedManager{client: fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).
			WithObjects(shootAccess(namespaces[0]), shootAccess(namespaces[1])).Build()}
	})

	It("gives every concurrent check the client of its own shoot", func() {
		seen := checkConcurrently(func(newCheck func() healthcheck.HealthCheck) healthcheck.HealthCheckActuator {
			return NewActuator(mgr, func() []healthcheck.ConditionTypeToHealthCheck {
				return []healthcheck.ConditionTypeToHealthCheck{{ConditionType: ConditionTypeBootstrapReady, HealthCheck: newCheck()}}
			}, extensionsconfigv1alpha1.RESTOptions{}, nil)
		})
		Expect(seen[namespaces[0]]).NotTo(BeIdenticalTo(seen[namespaces[1]]))
	})

	// Why NewActuator exists: the library's own actuator (DefaultRegistration) injects the shoot
	// client into the one check instance it was given, so with more than one worker a check reads
	// the shoot of another. If gardener changes that, this fails and NewActuator can go.
	It("is needed: gardener's actuator gives concurrent checks one shared client", func() {
		seen := checkConcurrently(func(newCheck func() healthcheck.HealthCheck) healthcheck.HealthCheckActuator {
			return healthcheck.NewActuator(mgr, "shoot-flux", "Extension", nil,
				[]healthcheck.ConditionTypeToHealthCheck{{ConditionType: ConditionTypeBootstrapReady, HealthCheck: newCheck()}},
				extensionsconfigv1alpha1.RESTOptions{}, nil)
		})
		Expect(seen[namespaces[0]]).To(BeIdenticalTo(seen[namespaces[1]]))
	})

	It("creates the bootstrap check anew for every run", func() {
		newChecks := BootstrapChecks(nil)
		first, second := newChecks(), newChecks()
		Expect(first).To(HaveLen(1))
		Expect(first[0].ConditionType).To(Equal(ConditionTypeBootstrapReady))
		Expect(first[0].HealthCheck).NotTo(BeIdenticalTo(second[0].HealthCheck))
	})

	Describe("a shoot API server that does not answer", func() {
		var (
			server        *httptest.Server
			stop          chan struct{}
			timeoutBefore time.Duration
		)

		BeforeEach(func() {
			stop = make(chan struct{})
			server = httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				select {
				case <-stop:
				case <-time.After(time.Minute):
				}
			}))
			server.Config.ErrorLog = log.New(io.Discard, "", 0)
			timeoutBefore = ShootRequestTimeout
			ShootRequestTimeout = 200 * time.Millisecond
			DeferCleanup(func() {
				ShootRequestTimeout = timeoutBefore
				close(stop)
				server.Close()
			})

			access := shootAccessTo(namespaces[0], server.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}))

			ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0], Name: "shoot-flux"}}
			raw, err := json.Marshal(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"})
			Expect(err).NotTo(HaveOccurred())
			ex.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
			mgr = seedManager{client: fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(access, ex).Build()}
		})

		// The library's shoot client discovers the API without the check's context: before
		// ShootRequestTimeout, the check waited for the shoot's answer (here a minute) whatever
		// its deadline.
		It("fails the check after the request timeout, whatever the check's deadline", func() {
			done := make(chan *[]healthcheck.Result, 1)
			go func() {
				defer GinkgoRecover()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				actuator := NewActuator(mgr, BootstrapChecks(nil), ShootRESTOptions(nil), nil)
				results, err := actuator.ExecuteHealthCheckFunctions(ctx, logr.Discard(), types.NamespacedName{Namespace: namespaces[0], Name: "shoot-flux"})
				Expect(err).NotTo(HaveOccurred())
				done <- results
			}()
			var results *[]healthcheck.Result
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&results))
			Expect(*results).To(ConsistOf(And(HaveField("FailedChecks", 1), HaveField("Detail", HaveValue(MatchRegexp(`Timeout|deadline exceeded`))))))
		})

		It("keeps a configured timeout and the other options", func() {
			configured := &extensionsconfigv1alpha1.RESTOptions{QPS: ptr.To[float32](7), Timeout: ptr.To(time.Hour)}
			Expect(ShootRESTOptions(configured)).To(Equal(extensionsconfigv1alpha1.RESTOptions{QPS: ptr.To[float32](7), Timeout: ptr.To(time.Hour)}))
			Expect(ShootRESTOptions(&extensionsconfigv1alpha1.RESTOptions{QPS: ptr.To[float32](7)})).To(Equal(
				extensionsconfigv1alpha1.RESTOptions{QPS: ptr.To[float32](7), Timeout: ptr.To(200 * time.Millisecond)}))
		})
	})

	It("checks with several workers by default", func() {
		Expect(DefaultAddOptions.Controller.MaxConcurrentReconciles).To(BeNumerically(">", 1))
	})
})
