// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/helmrepo"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	helmReleaseGVK    = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
	helmRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"}
)

// The names of what the fleet repository of these specs deploys.
const (
	fleetAppsNamespace = "apps"
	fleetAppsName      = "web"
	fleetNested        = "apps"
	fleetRelease       = "demo"
	fleetReleaseNS     = "demo"
)

// fleetRepo is a repository the way Flux users structure one: the bootstrap path holds a nested
// Kustomization with prune: true that owns a Deployment and a ConfigMap, and a HelmRelease of a
// chart from a Helm repository.
func fleetRepo(helmURL string) map[string]string {
	return map[string]string{
		"cluster/apps.yaml": fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  interval: 1m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: %[3]s
`, fleetNested, fluxNamespace, constants.BootstrapName),
		"cluster/helm.yaml": fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: %[1]s
spec:
  interval: 1m
  url: %[2]s
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %[3]s
  namespace: %[1]s
spec:
  interval: 1m
  releaseName: %[3]s
  targetNamespace: %[4]s
  install:
    createNamespace: true
  chart:
    spec:
      chart: %[3]s
      version: 0.1.0
      sourceRef:
        kind: HelmRepository
        name: charts
`, fluxNamespace, helmURL, fleetRelease, fleetReleaseNS),
		"apps/namespace.yaml": fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %s
`, fleetAppsNamespace),
		"apps/configmap.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  greeting: hello
`, fleetAppsName, fleetAppsNamespace),
		"apps/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: web
        image: registry.example.com/web:1.0
`, fleetAppsName, fleetAppsNamespace),
	}
}

var fleetChart = helmrepo.Chart{
	Name:    fleetRelease,
	Version: "0.1.0",
	Values:  "message: hello\n",
	Templates: map[string]string{"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  message: {{ .Values.message }}
`},
}

// fleetShoot runs a shoot in bootstrap mode flux with the real source-, kustomize- and
// helm-controller on a fleet repository, and waits until they deployed everything in it. A non-nil
// projectConfig is the data of the project's ConfigMap flux-config.
func fleetShoot(ctx context.Context, project string, projectConfig map[string]string) (*sandbox.ShootHandle, func() string) {
	GinkgoHelper()
	charts, err := helmrepo.Start(fleetChart)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(charts.Close)
	repo := "fleet-" + project
	_, err = gitserver.NewRepo(filepath.Join(gitRepoRoot, repo), fleetRepo(charts.URL()), "Add the fleet")
	Expect(err).NotTo(HaveOccurred())

	projectNamespace := newProject(ctx, project)
	if projectConfig != nil {
		setProjectConfig(ctx, projectNamespace, projectConfig)
	}
	h := createShootSucceeded(ctx, sandbox.ShootSpec{
		Project:        project,
		Name:           "one",
		RunControllers: true,
		ProviderConfig: fluxModeConfig(repo, "cluster", "source-controller", "kustomize-controller", "helm-controller"),
	})
	registerDeployKey(ctx, h)
	logs := func() string { return "controller logs:\n" + h.ControllerLogs() }
	expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller", "helm-controller")

	By("waiting for the controllers to deploy the fleet")
	Eventually(func(g Gomega) {
		for _, obj := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{
			{kustomizationGVK, constants.BootstrapName},
			{kustomizationGVK, fleetNested},
			{helmReleaseGVK, fleetRelease},
		} {
			ready := readyConditionOf(g, ctx, h, obj.gvk, fluxNamespace, obj.name)
			g.Expect(ready["status"]).To(Equal("True"), "Ready condition of %s %s: %v", obj.gvk.Kind, obj.name, ready)
		}
	}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
	expectFleetWorkloads(ctx, h)
	return h, logs
}

// fleetFluxObjects are the Flux objects of a fleet shoot: the bootstrap's and the user's.
var fleetFluxObjects = []struct {
	gvk  schema.GroupVersionKind
	name string
}{
	{gitRepositoryGVK, constants.BootstrapName},
	{kustomizationGVK, constants.BootstrapName},
	{kustomizationGVK, fleetNested},
	{helmRepositoryGVK, "charts"},
	{helmReleaseGVK, fleetRelease},
}

// fleetWorkloads are what the fleet deploys: the nested Kustomization's objects and the Helm
// release with what it installed.
func fleetWorkloads() []client.Object {
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleetAppsNamespace, Name: fleetAppsName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fleetAppsNamespace, Name: fleetAppsName}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleetReleaseNS, Name: fleetRelease + "-config"}},
		// Helm's record of the release: without it, the release is uninstalled.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNamespace, Name: "sh.helm.release.v1." + fleetRelease + ".v1"}},
	}
}

// expectFleetWorkloads checks that what the fleet deployed is in the shoot and not being deleted,
// and returns the objects read.
func expectFleetWorkloads(ctx context.Context, h *sandbox.ShootHandle) []client.Object {
	GinkgoHelper()
	objects := fleetWorkloads()
	for _, obj := range objects {
		Expect(h.Shoot.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed(), "%T %s", obj, client.ObjectKeyFromObject(obj))
		Expect(obj.GetDeletionTimestamp()).To(BeNil(), "%T %s", obj, client.ObjectKeyFromObject(obj))
	}
	return objects
}

var _ = Describe("Disabling the extension with the delivered Flux controllers running", func() {
	It("keeps the workloads and the Helm release of the user's Flux objects", func(ctx SpecContext) {
		h, logs := fleetShoot(ctx, "disrun", nil)

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		AddReportEntry("disable with controllers running", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))
		Eventually(h.Controllers).WithTimeout(shootTimeout).Should(BeEmpty(), logs)

		By("checking that nothing was pruned or uninstalled")
		expectFleetWorkloads(ctx, h)
		for _, obj := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{{kustomizationGVK, fleetNested}, {helmReleaseGVK, fleetRelease}, {helmRepositoryGVK, "charts"}} {
			u, err := shootObject(ctx, h, obj.gvk, fluxNamespace, obj.name)
			Expect(err).NotTo(HaveOccurred(), "the user's %s %s", obj.gvk.Kind, obj.name)
			Expect(u.GetDeletionTimestamp()).To(BeNil(), "the user's %s %s", obj.gvk.Kind, obj.name)
		}
	})

	It("completes when the controllers were stopped before", func(ctx SpecContext) {
		h, logs := fleetShoot(ctx, "disstop", nil)

		By("stopping the controllers: the operator pauses the ManagedResource and scales them to 0")
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(mr.DeepCopy())
		metav1.SetMetaDataAnnotation(&mr.ObjectMeta, resourcesv1alpha1.Ignore, "true")
		Expect(sb.Seed.Client.Patch(ctx, mr, patch)).To(Succeed())
		for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
			d := &appsv1.Deployment{}
			Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, name)).To(Succeed())
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Replicas = ptr.To[int32](0)
			Expect(h.Shoot.Client.Patch(ctx, d, patch)).To(Succeed())
		}
		Eventually(h.Controllers).WithTimeout(shootTimeout).Should(BeEmpty(), logs)

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		AddReportEntry("disable with controllers stopped", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))

		By("checking that nothing was pruned or uninstalled and the bootstrap objects were left")
		expectFleetWorkloads(ctx, h)
		for _, gvk := range []schema.GroupVersionKind{gitRepositoryGVK, kustomizationGVK} {
			u, err := shootObject(ctx, h, gvk, fluxNamespace, constants.BootstrapName)
			Expect(err).NotTo(HaveOccurred(), "the bootstrap %s", gvk.Kind)
			Expect(u.GetFinalizers()).To(ContainElement("finalizers.fluxcd.io"), "nobody processed the bootstrap %s", gvk.Kind)
		}
		nested := &unstructured.Unstructured{}
		nested.SetGroupVersionKind(kustomizationGVK)
		Expect(get(ctx, h.Shoot.Client, nested, fluxNamespace, fleetNested)).To(Succeed())
		Expect(nested.GetDeletionTimestamp()).To(BeNil())
	})
})

var _ = Describe("Migrating a shoot with the delivered Flux controllers running", func() {
	It("neither re-creates nor restarts anything in the shoot", func(ctx SpecContext) {
		h, logs := fleetShoot(ctx, "migrun", nil)
		uids := func() map[string]string {
			GinkgoHelper()
			out := map[string]string{}
			for _, name := range []string{"source-controller", "kustomize-controller", "helm-controller"} {
				d := &appsv1.Deployment{}
				Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, name)).To(Succeed())
				out["Deployment "+name] = string(d.UID)
			}
			for _, obj := range []struct {
				gvk  schema.GroupVersionKind
				name string
			}{{gitRepositoryGVK, constants.BootstrapName}, {kustomizationGVK, constants.BootstrapName}, {kustomizationGVK, fleetNested}, {helmReleaseGVK, fleetRelease}} {
				u, err := shootObject(ctx, h, obj.gvk, fluxNamespace, obj.name)
				Expect(err).NotTo(HaveOccurred())
				out[obj.gvk.Kind+" "+obj.name] = string(u.GetUID())
			}
			return out
		}
		expectMigrateAndRestoreKeep(ctx, h, uids, logs)
		expectFleetWorkloads(ctx, h)
	})
})
