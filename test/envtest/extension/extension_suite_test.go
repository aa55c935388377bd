// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package extension_test runs the shoot-flux Extension controller (pkg/controller/extension, added
// as the binary adds it) with what its reconcile and delete need and nothing more: a seed API
// server with gardener's CRDs, which also serves as the garden (project ConfigMaps), a shoot API
// server, gardener-resource-manager's ManagedResource controller applying from the seed into the
// shoot, and the kube-controller-manager stand-in of the shoot, without which gardener-resource-
// manager's foreground deletions never end in envtest. No gardenlet, gardener-apiserver, kubelet
// or Flux controllers: the sandbox (test/integration) runs those.
package extension_test

import (
	"context"
	"testing"
	"time"

	resourcemanagerconfigv1alpha1 "github.com/gardener/gardener/pkg/apis/config/resourcemanager/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	resourcemanagerclient "github.com/gardener/gardener/pkg/resourcemanager/client"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/managedresource"
	resourcemanagerpredicate "github.com/gardener/gardener/pkg/resourcemanager/predicate"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubecontrollermanager"
)

func TestExtension(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Extension Controller Envtest Suite")
}

var (
	ctx = context.Background()
	// seed is the seed's API server, which also serves as the garden.
	seed *cluster.Cluster
	// shoot is the shoot's API server.
	shoot *cluster.Cluster
	// extensionCache reads what the extension controller sees.
	extensionCache client.Reader
)

// timeout bounds every wait for the controllers, on a loaded machine.
const timeout = time.Minute

var _ = BeforeSuite(func() {
	logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))
	log := logf.Log

	By("starting the seed and the shoot API servers")
	// The extension's kinds in the seed, and the prometheus-operator kinds of the shoot's monitoring.
	crds, err := cluster.GardenerSeedCRDs(
		"10-crd-extensions.gardener.cloud_clusters.yaml",
		"10-crd-extensions.gardener.cloud_extensions.yaml",
		"10-crd-resources.gardener.cloud_managedresources.yaml",
		"10-crd-monitoring.coreos.com_prometheusrules.yaml",
		"10-crd-monitoring.coreos.com_scrapeconfigs.yaml",
	)
	Expect(err).NotTo(HaveOccurred())
	seed, shoot, err = cluster.StartSeedAndShoot(kubernetes.SeedScheme, crds)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(seed.Stop)
	DeferCleanup(shoot.Stop)

	By("starting the shoot's kube-controller-manager stand-in")
	kcm, err := kubecontrollermanager.Start(ctx, log.WithName("kube-controller-manager"), shoot)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kcm.Stop)

	By("starting gardener-resource-manager's ManagedResource controller")
	grm, err := manager.New(seed.Config, manager.Options{
		Scheme:                 resourcemanagerclient.SourceScheme,
		Logger:                 log.WithName("resource-manager"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	target, err := ctrlcluster.New(shoot.Config, func(o *ctrlcluster.Options) {
		o.Scheme = resourcemanagerclient.TargetScheme
		// The CRDs come with the objects of the same ManagedResource.
		o.MapperProvider = apiutil.NewDynamicRESTMapper
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(grm.Add(target)).To(Succeed())
	Expect((&managedresource.Reconciler{
		Config: resourcemanagerconfigv1alpha1.ManagedResourceControllerConfig{
			ConcurrentSyncs:     ptr.To(2),
			SyncPeriod:          &metav1.Duration{Duration: time.Minute},
			AlwaysUpdate:        ptr.To(false),
			ManagedByLabelValue: ptr.To("gardener"),
		},
		// gardener's default class, which takes the ManagedResources without a class.
		ClassFilter:                   resourcemanagerpredicate.NewClassFilter(""),
		RequeueAfterOnDeletionPending: ptr.To(time.Second),
	}).AddToManager(grm, grm, target)).To(Succeed())
	grmRunner, err := cluster.StartManager(ctx, log.WithName("resource-manager"), "resource-manager", grm)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(grmRunner.Stop)

	By("starting the extension controller as the binary adds it")
	cfg, err := loader.Defaults()
	Expect(err).NotTo(HaveOccurred())
	// The binary's manager starts with client-go's global scheme, to which SetUpManager adds the
	// extension's kinds; a scheme of its own leaves the global one alone.
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	mgrOpts := manager.Options{
		Scheme:                 scheme,
		Logger:                 log.WithName("extension"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	fluxcmd.ApplySeedCacheOptions(&mgrOpts)
	mgr, err := manager.New(seed.Config, mgrOpts)
	Expect(err).NotTo(HaveOccurred())
	// The seed's API server is the garden too: project namespaces and seed namespaces differ.
	garden, err := fluxcmd.SetUpManager(mgr, seed.Config, cfg.Limits)
	Expect(err).NotTo(HaveOccurred())
	// The controller's predicates keep the context they are added with for the manager's lifetime.
	runner := cluster.NewRunner(ctx, "extension")
	Expect(extension.AddToManagerWithOptions(runner.Context(), mgr, extension.AddOptions{
		ControllerOptions: controller.Options{MaxConcurrentReconciles: 2},
		// As deployed: only Extensions with gardener's operation annotation are reconciled on
		// their own events.
		IgnoreOperationAnnotation: false,
		Config:                    *cfg,
		GardenCluster:             garden,
		Resync:                    extension.DefaultAddOptions.Resync,
	})).To(Succeed())
	Expect(runner.Start(ctx, log.WithName("extension"), mgr)).To(Succeed())
	DeferCleanup(runner.Stop)
	extensionCache = mgr.GetClient()
})
