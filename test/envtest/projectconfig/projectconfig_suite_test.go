// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package projectconfig_test runs the project ConfigMap watches of the extension controller
// (pkg/controller/projectconfig.AddToManager) alone, in a controller whose reconciler records what
// it is given, against one envtest API server that serves as both garden and seed: the garden's
// project ConfigMaps and the seed's Clusters and Extensions (gardener's CRDs).
package projectconfig_test

import (
	"context"
	"sync"
	"testing"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/projectconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

func TestProjectConfig(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Project ConfigMap Watches Envtest Suite")
}

var (
	ctx    = context.Background()
	scheme = runtime.NewScheme()
	// api is the one API server: garden and seed.
	api *cluster.Cluster
)

// timeout bounds every wait for the controller, on a loaded machine.
const timeout = 30 * time.Second

// window is the coalescing window of the specs: short, so that a spec waits little for it.
const window = 200 * time.Millisecond

var _ = BeforeSuite(func() {
	logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())

	crds, err := cluster.GardenerSeedCRDs(
		"10-crd-extensions.gardener.cloud_clusters.yaml",
		"10-crd-extensions.gardener.cloud_extensions.yaml",
	)
	Expect(err).NotTo(HaveOccurred())
	api, err = cluster.Start("garden-and-seed", scheme, crds, cluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(api.Stop)

	DeferCleanup(func(old time.Duration) { projectconfig.CoalesceWindow = old }, projectconfig.CoalesceWindow)
	projectconfig.CoalesceWindow = window
})

// recorder is the reconciler of the controller under test: it records the requests the watches
// enqueue.
type recorder struct {
	mu       sync.Mutex
	requests map[reconcile.Request]int
}

func (r *recorder) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[req]++
	return reconcile.Result{}, nil
}

// Reconciled returns the namespaces of the Extensions reconciled so far (each a shoot's seed
// namespace), for matchers.
func (r *recorder) Reconciled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for req := range r.requests {
		out = append(out, req.Namespace+"/"+req.Name)
	}
	return out
}

// startController starts a manager with only the controller under test, as the extension starts
// (garden access through gardencluster, the watches of projectconfig.AddToManager), and waits
// until the ConfigMap watch is live: until it enqueued the outdated Extension of a project of its
// own from its initial list. The manager stops at the end of the spec.
func startController() *recorder {
	GinkgoHelper()
	sentinel := newProject()
	sentinel.configMap(map[string]string{"repositoryUrl": "https://git.example.com/org/sentinel.git"})
	live := sentinel.shoot("sentinel", outdated)
	log := logf.Log.WithName("projectconfig")
	mgr, err := manager.New(api.Config, manager.Options{
		Scheme:                 scheme,
		Logger:                 log,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every spec starts the controller again.
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	garden, err := gardencluster.New(api.Config, log.WithName("garden"), 0)
	Expect(err).NotTo(HaveOccurred())
	Expect(mgr.Add(garden)).To(Succeed())

	runner := cluster.NewRunner(ctx, "projectconfig")
	watches, err := projectconfig.AddToManager(runner.Context(), mgr, garden, log)
	Expect(err).NotTo(HaveOccurred())
	rec := &recorder{requests: map[reconcile.Request]int{}}
	c, err := controller.New("projectconfig", mgr, controller.Options{Reconciler: rec})
	Expect(err).NotTo(HaveOccurred())
	for _, watch := range watches {
		Expect(watch(c)).To(Succeed())
	}
	Expect(runner.Start(ctx, log, mgr)).To(Succeed())
	DeferCleanup(runner.Stop)
	Eventually(rec.Reconciled).WithTimeout(timeout).Should(ContainElement(live), "the ConfigMap watch starts")
	return rec
}
