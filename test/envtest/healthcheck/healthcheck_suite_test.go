// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package healthcheck_test runs the shoot-flux health check controller (pkg/controller/healthcheck,
// switched on as the binary switches it on) with what it reads and nothing more: a seed API server
// with gardener's Cluster, Extension and ManagedResource CRDs, and a shoot API server with the CRDs
// of the bootstrap objects. The check reaches the shoot as gardener lets extensions reach it: through
// the seed namespace's gardener-internal shoot access Secret, whose token gardener-resource-manager's
// token requestor requests for a ServiceAccount bound to cluster-admin. No ManagedResource
// controller, extension controller, kluctl or Flux: the specs write the ManagedResources' status as
// gardener-resource-manager does, the providerStatus as the extension controller does and the
// bootstrap objects' status as kluctl and Flux do, so every state the check judges is exact at once.
package healthcheck_test

import (
	"context"
	"testing"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/controller/tokenrequestor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

func TestHealthCheck(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Health Check Controller Envtest Suite")
}

var (
	ctx = context.Background()
	// seed is the seed's API server.
	seed *cluster.Cluster
	// shoot is the API server of every shoot of the specs; their bootstrap objects differ.
	shoot *cluster.Cluster
	// healthCheckCache reads what the health check sees of the seed.
	healthCheckCache client.Reader
)

const (
	// timeout bounds every wait for the controllers, on a loaded machine.
	timeout = time.Minute
	// syncPeriod is healthCheckConfig.syncPeriod: a few periods fit into a spec, and a check,
	// whose deadline it also is, still ends within it on a loaded machine.
	syncPeriod = "5s"
)

var _ = BeforeSuite(func() {
	logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))
	log := logf.Log

	By("starting the seed and the shoot API servers")
	crds, err := cluster.GardenerSeedCRDs(
		"10-crd-extensions.gardener.cloud_clusters.yaml",
		"10-crd-extensions.gardener.cloud_extensions.yaml",
		"10-crd-resources.gardener.cloud_managedresources.yaml",
	)
	Expect(err).NotTo(HaveOccurred())
	seed, shoot, err = cluster.StartSeedAndShoot(kubernetes.SeedScheme, crds)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(seed.Stop)
	DeferCleanup(shoot.Stop)

	By("installing the CRDs of the bootstrap objects into the shoot, as the controllers ManagedResource carries them")
	shootCRDs, err := controllers.CRDs(controllers.Values{
		Flux: manifests.FluxOptions{
			Version:    manifests.NewestFluxVersion(),
			Components: []string{manifests.SourceController, manifests.KustomizeController},
			Namespace:  fluxNamespace,
		},
		Kluctl: &manifests.KluctlOptions{Version: manifests.NewestKluctlVersion(), Namespace: "kluctl-system"},
	})
	Expect(err).NotTo(HaveOccurred())
	var crdObjects []*apiextensionsv1.CustomResourceDefinition
	for i := range shootCRDs {
		crdObjects = append(crdObjects, &shootCRDs[i])
	}
	_, err = envtest.InstallCRDs(shoot.Config, envtest.CRDInstallOptions{CRDs: crdObjects, MaxTime: timeout})
	Expect(err).NotTo(HaveOccurred())

	By("binding gardener's shoot access ServiceAccounts to cluster-admin in the shoot, as gardener's access ManagedResource does")
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener.cloud:system:gardener"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
	}
	for _, name := range shootAccessSecrets {
		crb.Subjects = append(crb.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: metav1.NamespaceSystem})
	}
	Expect(shoot.Client.Create(ctx, crb)).To(Succeed())

	By("starting gardener-resource-manager's token requestor of the shoot class")
	grm, err := manager.New(seed.Config, manager.Options{
		Scheme:                 clientgoscheme.Scheme,
		Logger:                 log.WithName("token-requestor"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	target, err := ctrlcluster.New(shoot.Config, func(o *ctrlcluster.Options) { o.Scheme = clientgoscheme.Scheme })
	Expect(err).NotTo(HaveOccurred())
	Expect(grm.Add(target)).To(Succeed())
	Expect((&tokenrequestor.Reconciler{
		ConcurrentSyncs: 1,
		Class:           ptr.To(resourcesv1alpha1.ResourceManagerClassShoot),
	}).AddToManager(grm, grm, target)).To(Succeed())
	grmRunner, err := cluster.StartManager(ctx, log.WithName("token-requestor"), "token-requestor", grm)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(grmRunner.Stop)

	By("starting the health check as the binary does with only its controller switched on")
	cfg, err := loader.Load([]byte("healthCheckConfig:\n  syncPeriod: " + syncPeriod + "\n"))
	Expect(err).NotTo(HaveOccurred())
	// The binary's manager starts with client-go's global scheme, to which SetUpManager adds the
	// extension's kinds; a scheme of its own leaves the global one alone.
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	mgrOpts := manager.Options{
		Scheme:                 scheme,
		Logger:                 log.WithName("healthcheck"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	}
	fluxcmd.ApplySeedCacheOptions(&mgrOpts)
	mgr, err := manager.New(seed.Config, mgrOpts)
	Expect(err).NotTo(HaveOccurred())
	// The seed's API server stands in for the garden, which the health check never reads.
	_, err = fluxcmd.SetUpManager(mgr, seed.Config, cfg.Limits)
	Expect(err).NotTo(HaveOccurred())
	// As cmd/gardener-extension-shoot-flux/app does with the configuration; the extension classes
	// stay the flag's default, none.
	healthcheck.DefaultAddOptions.HealthCheckConfig = *cfg.HealthCheckConfig
	// --controllers=shoot-flux-healthcheck: the binary's switch of the health check alone.
	switches := fluxcmd.ControllerSwitches()
	switches.Enabled = []string{healthcheck.ControllerName}
	Expect(switches.Complete()).To(Succeed())
	runner := cluster.NewRunner(ctx, "healthcheck")
	Expect(switches.Completed().AddToManager(runner.Context(), mgr)).To(Succeed())
	Expect(runner.Start(ctx, log.WithName("healthcheck"), mgr)).To(Succeed())
	DeferCleanup(runner.Stop)
	healthCheckCache = mgr.GetClient()
})
