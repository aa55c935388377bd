// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"golang.org/x/mod/semver"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// fluxRunnable are the Flux controllers of the fleet shoots, all of which the kubelet stand-in runs.
var fluxRunnable = []string{"source-controller", "kustomize-controller", "helm-controller"}

// fluxVersionConfig is the project ConfigMap data that selects a Flux release or minor.
func fluxVersionConfig(version string) map[string]string {
	return map[string]string{constants.ConfigMapKeyConfig: "flux:\n  version: " + version + "\n"}
}

// servedVersions returns the served versions of every Flux CRD, by CRD name, from the shoot or
// from the CRDs of the controllers ManagedResource.
func servedVersions(crds []apiextensionsv1.CustomResourceDefinition) map[string][]string {
	out := map[string][]string{}
	for _, crd := range crds {
		if !strings.HasSuffix(crd.Spec.Group, ".toolkit.fluxcd.io") {
			continue
		}
		var served []string
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
		}
		slices.Sort(served)
		out[crd.Name] = served
	}
	return out
}

// shootFluxCRDs returns the Flux CRDs in the shoot.
func shootFluxCRDs(ctx context.Context, h *sandbox.ShootHandle) []apiextensionsv1.CustomResourceDefinition {
	GinkgoHelper()
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	Expect(h.Shoot.Client.List(ctx, list)).To(Succeed())
	return slices.DeleteFunc(list.Items, func(crd apiextensionsv1.CustomResourceDefinition) bool {
		return !strings.HasSuffix(crd.Spec.Group, ".toolkit.fluxcd.io")
	})
}

// deliveredFluxCRDs returns the Flux CRDs the controllers ManagedResource delivers.
func deliveredFluxCRDs(ctx context.Context, h *sandbox.ShootHandle) []apiextensionsv1.CustomResourceDefinition {
	GinkgoHelper()
	objects, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceControllers)
	Expect(err).NotTo(HaveOccurred())
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, obj := range objects {
		if obj.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := apiextensionsv1.CustomResourceDefinition{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &crd)).To(Succeed())
		crds = append(crds, crd)
	}
	return crds
}

// fleetImages returns the images of the fleet's controllers in a Flux release, as the embedded
// manifests pin them.
func fleetImages(version string) map[string]string {
	GinkgoHelper()
	images, err := manifests.Images(manifests.FluxOptions{Version: version, Components: fluxRunnable}, nil)
	Expect(err).NotTo(HaveOccurred())
	return images
}

// expectRunning checks that the shoot's Deployments name the images of a Flux release and that
// the kubelet stand-in runs each with the binary of that image, and returns the processes.
func expectRunning(ctx context.Context, h *sandbox.ShootHandle, logs func() string, version string) []kubelet.ControllerProcess {
	GinkgoHelper()
	images := fleetImages(version)
	var processes []kubelet.ControllerProcess
	Eventually(func(g Gomega) {
		for _, name := range fluxRunnable {
			d := &appsv1.Deployment{}
			g.Expect(get(ctx, h.Shoot.Client, d, fluxNamespace, name)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(images[name]), "image of Deployment %s", name)
		}
		processes = h.Controllers()
		g.Expect(processes).To(HaveLen(len(fluxRunnable)))
		for _, p := range processes {
			g.Expect(p.Running && p.Ready).To(BeTrue(), "%s runs and is ready", p.Component)
			g.Expect(p.Image).To(Equal(images[p.Component]), "image of the %s process", p.Component)
			g.Expect(p.Binary).To(Equal(fluxBinaries[path.Base(p.Image)]), "binary of the %s process", p.Component)
		}
	}).WithTimeout(controllersTimeout).Should(Succeed(), logs)
	expectAvailable(ctx, h, logs, fluxRunnable...)
	return processes
}

// uidsOf returns the UIDs of the fleet's Flux objects and workloads, by kind and name.
func uidsOf(ctx context.Context, h *sandbox.ShootHandle) map[string]types.UID {
	GinkgoHelper()
	out := map[string]types.UID{}
	for _, obj := range fleetFluxObjects {
		u, err := shootObject(ctx, h, obj.gvk, fluxNamespace, obj.name)
		Expect(err).NotTo(HaveOccurred(), "%s %s", obj.gvk.Kind, obj.name)
		out[obj.gvk.Kind+" "+obj.name] = u.GetUID()
	}
	for _, obj := range expectFleetWorkloads(ctx, h) {
		out[fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))] = obj.GetUID()
	}
	return out
}

var _ = Describe("Upgrading Flux with the delivered controllers running", func() {
	It("moves every object to the newer release's CRDs and controllers, keeps the workloads, and refuses the way back", func(ctx SpecContext) {
		releases := manifests.FluxVersions()
		older, newer := releases[0], releases[len(releases)-1]
		Expect(semver.MajorMinor(older)).NotTo(Equal(semver.MajorMinor(newer)), "the extension embeds two Flux minors")

		By("running the fleet on Flux " + older)
		const project = "upgrade"
		h, logs := fleetShoot(ctx, project, fluxVersionConfig(older))
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(older))
		olderProcesses := expectRunning(ctx, h, logs, older)
		olderServed := servedVersions(shootFluxCRDs(ctx, h))
		uids := uidsOf(ctx, h)

		By("selecting Flux " + newer + " in the project ConfigMap")
		Expect(h.Checkpoint(ctx)).To(Succeed())
		switchedAt := time.Now()
		setProjectConfig(ctx, sandbox.ProjectNamespace(project), fluxVersionConfig(newer))
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred(), logs)
		status, err = h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.FluxVersion).To(Equal(newer))

		By("checking that the newer controllers replaced the older ones")
		newerProcesses := expectRunning(ctx, h, logs, newer)
		for _, p := range newerProcesses {
			Expect(olderProcesses).NotTo(ContainElement(HaveField("Pod", p.Pod)), "%s runs in a new pod", p.Component)
			Expect(olderProcesses).NotTo(ContainElement(HaveField("Binary", p.Binary)), "%s runs another binary", p.Component)
		}

		By("checking that the CRDs are the newer release's and still serve every stored version")
		crds := shootFluxCRDs(ctx, h)
		delivered := servedVersions(deliveredFluxCRDs(ctx, h))
		Expect(servedVersions(crds)).To(Equal(delivered))
		Expect(delivered).NotTo(Equal(olderServed), "the releases serve different API versions, so the CRDs must have changed")
		for _, crd := range crds {
			Expect(crd.Status.StoredVersions).NotTo(BeEmpty(), crd.Name)
			for _, stored := range crd.Status.StoredVersions {
				Expect(delivered[crd.Name]).To(ContainElement(stored), "CRD %s serves the stored version %s", crd.Name, stored)
			}
		}

		By("asking the newer controllers to reconcile every Flux object")
		requestedAt := switchedAt.UTC().Format(time.RFC3339Nano)
		for _, obj := range fleetFluxObjects {
			u := unstructuredObject(obj.gvk)
			u.SetNamespace(fluxNamespace)
			u.SetName(obj.name)
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fluxmeta.ReconcileRequestAnnotation, requestedAt)
			Expect(h.Shoot.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))).To(Succeed(), "%s %s", obj.gvk.Kind, obj.name)
		}
		Eventually(func(g Gomega) {
			for _, obj := range fleetFluxObjects {
				u, err := shootObject(ctx, h, obj.gvk, fluxNamespace, obj.name)
				g.Expect(err).NotTo(HaveOccurred())
				what := obj.gvk.Kind + " " + obj.name
				g.Expect(nestedString(u, "status", "lastHandledReconcileAt")).To(Equal(requestedAt), "%s handled the request", what)
				observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				g.Expect(observed).To(Equal(u.GetGeneration()), "%s observed its generation", what)
				ready := readyConditionOf(g, ctx, h, obj.gvk, fluxNamespace, obj.name)
				g.Expect(ready["status"]).To(Equal("True"), "Ready condition of %s: %v", what, ready)
			}
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		Expect(h.Controllers()).To(Equal(newerProcesses), "no controller restarted while reconciling\n%s", logs())

		By("checking that nothing was deleted or re-created")
		Expect(uidsOf(ctx, h)).To(Equal(uids))

		By("selecting Flux " + semver.MajorMinor(older) + " again")
		Expect(h.Checkpoint(ctx)).To(Succeed())
		setProjectConfig(ctx, sandbox.ProjectNamespace(project), fluxVersionConfig(semver.MajorMinor(older)))
		lastErr, err := h.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		// The message docs/usage/versions.md and docs/operations/upgrades.md quote.
		Expect(lastErr.Description).To(ContainSubstring(fmt.Sprintf(
			"flux.version: selects Flux %s, but the shoot runs %s (providerStatus.fluxVersion); downgrading Flux to an older minor is not supported", older, newer)))
		Expect(lastErr.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))

		By("checking that the newer release stays")
		Consistently(func(g Gomega) {
			g.Expect(h.Controllers()).To(Equal(newerProcesses))
			status, err := h.ProviderStatus(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status.FluxVersion).To(Equal(newer))
			g.Expect(servedVersions(shootFluxCRDs(ctx, h))).To(Equal(delivered))
		}).Should(Succeed(), logs)
		expectRunning(ctx, h, logs, newer)
		Expect(uidsOf(ctx, h)).To(Equal(uids))
	})
})
