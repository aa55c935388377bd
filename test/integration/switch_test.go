// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// What stackit's extension (v0.27) leaves in a shoot: Flux applied directly, without a
// ManagedResource; the source and the Kustomization flux-system/flux-system from its templates;
// the credentials of source.secretResourceName synced as the Secret the template names; its
// ConfigMap shoot-info with the SHOOT_INFO_* keys; both labelled as its own.
const (
	stackitName        = "flux-system"
	stackitSecretName  = "flux-system"
	stackitCredentials = "git-credentials"
	stackitChild       = "apps"
	stackitChildTarget = "apps"
	// The Kustomization template's patch sets this label of the repository's ConfigMap to the
	// variable its postBuild.substitute defines.
	stackitPatchedLabel  = "patched"
	stackitVariable      = "GREETING"
	stackitVariableValue = "hello"
	stackitManagedBy     = "gardener-extension-shoot-flux"
	stackitShootInfoName = "SHOOT_INFO_NAME"
)

// stackitRelease is what a release of stackit's extension installed in a shoot.
type stackitRelease struct {
	// fluxVersion labels the controllers as flux2's install manifests of that release did; empty
	// keeps the embedded release's label.
	fluxVersion string
	// crds replace the embedded release's CRDs of the same name (files of test/storedversions).
	crds []string
	// components are the Flux components the release installed and stackit's providerConfig
	// lists (flux.components); nil are source- and kustomize-controller.
	components []string
	// stopped runs no controller before the switch: the embedded release's controllers, which
	// stand in for the release's, cannot serve its older CRDs (their versions are gone).
	stopped bool
}

var (
	// stackitV027 is v0.27: Flux v2.9.2, whose objects and names every v2.9 release shares.
	stackitV027 = stackitRelease{}
	// stackitV018 is v0.12-v0.18: Flux v2.4.0, whose OCIRepository CRD stores v1beta2, with
	// helm-controller, whose HelmRelease CRD stores v2beta2 (a shoot whose Flux dates from v2.2 or
	// before, when v2beta2 was the storage version): versions the embedded releases' CRDs no
	// longer have.
	stackitV018 = stackitRelease{
		fluxVersion: "v2.4.0", crds: []string{storedVersionsCRD, helmReleasesCRD}, stopped: true,
		components: []string{"source-controller", "kustomize-controller", "helm-controller"},
	}
)

const (
	// storedVersionsCRD is the OCIRepository CRD of source-controller/api v1.4.1 (Flux v2.4).
	storedVersionsCRD = "../storedversions/testdata/ocirepositories-v1.4.1.yaml"
	// helmReleasesCRD is the v2beta2 HelmRelease CRD of helm-controller/api v1.1.0 (Flux v2.4).
	helmReleasesCRD = "../storedversions/testdata/helmreleases-v1.1.0.yaml"
)

// fluxComponents are the Flux components the release installed.
func (r stackitRelease) fluxComponents() []string {
	if r.components == nil {
		return []string{"source-controller", "kustomize-controller"}
	}
	return r.components
}

var _ = Describe("Switching a shoot from stackit's extension", func() {
	It("takes over a v0.18 shoot (Flux v2.4, OCIRepositories stored at v1beta2, HelmReleases at v2beta2) with every object kept, migrated and reconciling", Label(labelDeployed), func(ctx SpecContext) {
		const (
			project      = "stackit18"
			objects      = 5
			helmReleases = 2
		)
		older := schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1beta2", Kind: "OCIRepository"}
		olderHelmRelease := schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2beta2", Kind: "HelmRelease"}
		var ociUIDs, helmUIDs map[string]types.UID
		h, logs, _ := switchStackitShoot(ctx, project, stackitV018, func(shoot client.Client) {
			By("creating the owner's OCIRepositories, stored at v1beta2")
			ociUIDs = map[string]types.UID{}
			for i := range objects {
				repo := unstructuredObject(older)
				repo.SetNamespace(stackitChildTarget)
				repo.SetName(fmt.Sprintf("app-%02d", i))
				Expect(unstructured.SetNestedMap(repo.Object, map[string]any{"url": "oci://registry.example.com/app", "interval": "5m"}, "spec")).To(Succeed())
				Eventually(func() error { return shoot.Create(ctx, repo) }).WithContext(ctx).WithTimeout(reconcileTimeout).Should(Succeed(), "the CRD is served")
				ociUIDs[repo.GetName()] = repo.GetUID()
			}
			By("creating the owner's HelmReleases, stored at v2beta2")
			helmUIDs = map[string]types.UID{}
			for i := range helmReleases {
				release := unstructuredObject(olderHelmRelease)
				release.SetNamespace(stackitChildTarget)
				release.SetName(fmt.Sprintf("release-%02d", i))
				Expect(unstructured.SetNestedMap(release.Object, map[string]any{
					"interval": "5m",
					"chart": map[string]any{"spec": map[string]any{
						"chart": "podinfo", "version": "6.x",
						"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo", "namespace": fluxNamespace},
					}},
					"values": map[string]any{"replicaCount": int64(2)},
				}, "spec")).To(Succeed())
				Eventually(func() error { return shoot.Create(ctx, release) }).WithContext(ctx).WithTimeout(reconcileTimeout).Should(Succeed(), "the CRD is served")
				helmUIDs[release.GetName()] = release.GetUID()
			}
		})
		shoot := h.Shoot.Client

		By("checking that the OCIRepositories were migrated off v1beta2, each the same object")
		expectOnlyServedStoredVersions(ctx, shoot, "ocirepositories.source.toolkit.fluxcd.io")
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.StoredVersions).NotTo(BeNil())
		Expect(status.StoredVersions.Migrated).To(ContainElement(And(HaveField("Kind", "OCIRepository"), HaveField("From", []string{"v1beta2"}), HaveField("Objects", BeEquivalentTo(objects)))))
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepositoryList"})
		Expect(shoot.List(ctx, list, client.InNamespace(stackitChildTarget))).To(Succeed())
		got := map[string]types.UID{}
		for _, repo := range list.Items {
			got[repo.GetName()] = repo.GetUID()
		}
		Expect(got).To(Equal(ociUIDs))

		By("checking that the HelmReleases were migrated off v2beta2, each the same object with its values")
		expectOnlyServedStoredVersions(ctx, shoot, "helmreleases.helm.toolkit.fluxcd.io")
		Expect(status.StoredVersions.Migrated).To(ContainElement(fluxv1alpha1.MigratedKind{
			CRD: "helmreleases.helm.toolkit.fluxcd.io", Kind: "HelmRelease", From: []string{"v2beta2"}, To: "v2", Objects: helmReleases,
		}))
		helmList := &unstructured.UnstructuredList{}
		helmList.SetGroupVersionKind(schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmReleaseList"})
		Expect(shoot.List(ctx, helmList, client.InNamespace(stackitChildTarget))).To(Succeed())
		got = map[string]types.UID{}
		for _, release := range helmList.Items {
			got[release.GetName()] = release.GetUID()
			replicas, _, _ := unstructured.NestedInt64(release.Object, "spec", "values", "replicaCount")
			Expect(replicas).To(BeEquivalentTo(2), release.GetName())
		}
		Expect(got).To(Equal(helmUIDs))

		By("checking that the extension's controllers replaced the stopped ones and reconcile the bootstrap and the child Kustomization")
		expectAvailable(ctx, h, logs, stackitV018.components...)
		requestReconcile(ctx, shoot, stackitChild)
		expectStackitObjectsReady(ctx, h, logs)
		By("checking that the extension's helm-controller handles the migrated HelmReleases")
		Eventually(func(g Gomega) {
			for name := range helmUIDs {
				readyConditionOf(g, ctx, h, helmReleaseGVK, stackitChildTarget, name)
			}
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		shootInfo := &corev1.ConfigMap{}
		Expect(get(ctx, shoot, shootInfo, fluxNamespace, constants.ShootInfoConfigMapName)).To(Succeed())
		Expect(shootInfo.Data).To(HaveKeyWithValue(stackitShootInfoName, "switched"))
		Expect(get(ctx, shoot, &corev1.Secret{}, fluxNamespace, stackitSecretName)).To(Succeed(), "stackit's synced Secret stays")
	})

	It("takes over a v0.27 shoot (Flux v2.9, git) with every object kept and the repository's Kustomizations still reconciling", Label(labelDeployed), func(ctx SpecContext) {
		h, logs, _ := switchStackitShoot(ctx, "stackit", stackitV027, nil)
		shoot := h.Shoot.Client

		By("checking that every object is the one stackit's extension left, now applied by the resource manager")
		for _, gvk := range []schema.GroupVersionKind{gitRepositoryGVK, kustomizationGVK} {
			obj, err := shootObject(ctx, h, gvk, fluxNamespace, stackitName)
			Expect(err).NotTo(HaveOccurred())
			Expect(obj.GetAnnotations()).To(HaveKey("resources.gardener.cloud/origin"), "%s %s is managed by the bootstrap ManagedResource", gvk.Kind, stackitName)
		}
		shootInfo := &corev1.ConfigMap{}
		Expect(get(ctx, shoot, shootInfo, fluxNamespace, constants.ShootInfoConfigMapName)).To(Succeed())
		Expect(shootInfo.Data).To(HaveKeyWithValue(stackitShootInfoName, "switched"))
		Expect(shootInfo.Data).To(HaveKeyWithValue("SHOOT_INFO_TECHNICAL_ID", "shoot--stackit--switched"))
		Expect(shootInfo.Data).To(HaveKeyWithValue("SHOOT_NAME", "switched"))
		Expect(get(ctx, shoot, &corev1.Secret{}, fluxNamespace, stackitSecretName)).To(Succeed(), "stackit's synced Secret stays")
		for _, crd := range []string{"gitrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"} {
			expectOnlyServedStoredVersions(ctx, shoot, crd)
		}
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.BootstrapName).To(Equal(stackitName))
		Expect(status.Management).To(Equal("handover"))
		Expect(status.NativeProviderConfig).To(ContainSubstring("name: " + stackitName))
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		Expect(mr.Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), "installed once, then left to the repository, as stackit's extension did")

		By("asking the child Kustomization to reconcile again")
		requestReconcile(ctx, shoot, stackitChild)
		Eventually(func(g Gomega) {
			ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, stackitChild)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(ks, "status", "lastHandledReconcileAt")).To(Equal(ks.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]))
			g.Expect(readyConditionOf(g, ctx, h, kustomizationGVK, fluxNamespace, stackitChild)).To(HaveKeyWithValue("status", "True"))
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)

		By("checking that kustomize-controller applied the template's patch and substitution, carried into bootstrap.flux")
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(get(ctx, shoot, cm, gitserver.ConfigMapNamespace, gitserver.ConfigMapName)).To(Succeed())
			g.Expect(cm.Labels).To(HaveKeyWithValue(stackitPatchedLabel, stackitVariableValue))
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)

		By("removing the condition stackit's extension set")
		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Status.Conditions = append(ex.Status.Conditions, gardencorev1beta1.Condition{
			Type: adoption.ConditionFluxBootstrapped, Status: gardencorev1beta1.ConditionTrue, Reason: "BootstrapSuccessful",
			LastTransitionTime: metav1.Now(), LastUpdateTime: metav1.Now(),
		})
		Expect(sb.Seed.Client.Status().Patch(ctx, ex, patch)).To(Succeed())
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		Eventually(func(g Gomega) {
			ex, err := h.Extension(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ex.Status.Conditions).NotTo(ContainElement(HaveField("Type", adoption.ConditionFluxBootstrapped)))
		}).WithTimeout(reconcileTimeout).Should(Succeed())
	})
})

var _ = Describe("Disabling the extension on a shoot switched from stackit's extension", func() {
	It("keeps the flux-system objects, the controllers and the repository's Kustomizations as they are", Label(labelDeployed), func(ctx SpecContext) {
		h, logs, before := switchStackitShoot(ctx, "stackitoff", stackitV027, nil)
		shoot := h.Shoot.Client

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		AddReportEntry("disable of a switched shoot", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))
		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			_, err := h.ManagedResource(ctx, name)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ManagedResource %s: %v", name, err)
		}

		By("checking that every object stackit's extension and the repository left is still the same")
		Expect(stackitUIDs(ctx, shoot, stackitV027)).To(Equal(before))
		shootInfo := &corev1.ConfigMap{}
		Expect(get(ctx, shoot, shootInfo, fluxNamespace, constants.ShootInfoConfigMapName)).To(Succeed())
		Expect(shootInfo.Data).To(HaveKeyWithValue(stackitShootInfoName, "switched"))
		expectAvailable(ctx, h, logs, "source-controller", "kustomize-controller")

		By("asking the child Kustomization to reconcile again")
		requestReconcile(ctx, shoot, stackitChild)
		Eventually(func(g Gomega) {
			ks, err := shootObject(ctx, h, kustomizationGVK, fluxNamespace, stackitChild)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nestedString(ks, "status", "lastHandledReconcileAt")).To(Equal(ks.GetAnnotations()["reconcile.fluxcd.io/requestedAt"]))
			g.Expect(readyConditionOf(g, ctx, h, kustomizationGVK, fluxNamespace, stackitChild)).To(HaveKeyWithValue("status", "True"))
			g.Expect(readyConditionOf(g, ctx, h, gitRepositoryGVK, fluxNamespace, stackitName)).To(HaveKeyWithValue("status", "True"))
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		Expect(stackitUIDs(ctx, shoot, stackitV027)).To(Equal(before))
	})
})

// switchStackitShoot sets a shoot up in a new project as a release of stackit's extension leaves it,
// with a child Kustomization of the repository's that references the bootstrap source and what
// owner adds, then enables this extension with stackit's providerConfig and waits for its
// reconcile to succeed. It returns the UIDs of what was there before the switch, unchanged by it.
func switchStackitShoot(ctx context.Context, project string, release stackitRelease, owner func(client.Client)) (*sandbox.ShootHandle, func() string, map[string]types.UID) {
	GinkgoHelper()
	projectNamespace := newProject(ctx, project)
	key, err := sshkey.Generate(sshkey.AlgorithmED25519, "stackit")
	Expect(err).NotTo(HaveOccurred())
	Expect(git.AddAuthorizedKey(key.AuthorizedKey)).To(Succeed())
	credentials := map[string][]byte{constants.SecretKeyIdentity: key.PrivateKey, constants.SecretKeyKnownHosts: []byte(git.KnownHostsLine())}
	Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: stackitCredentials}, Data: credentials})).To(Succeed())

	h := createShoot(ctx, sandbox.ShootSpec{
		Project:        project,
		Name:           "switched",
		RunControllers: true,
		DeferExtension: true,
		Resources: []gardencorev1beta1.NamedResourceReference{{Name: stackitCredentials, ResourceRef: autoscalingv1.CrossVersionObjectReference{
			APIVersion: "v1", Kind: "Secret", Name: stackitCredentials,
		}}},
		ProviderConfig: stackitProviderConfig(git.URL(repoName), release.fluxComponents()...),
	})
	logs := func() string { return "controller logs:\n" + h.ControllerLogs() }
	shoot := h.Shoot.Client

	By("installing Flux and the bootstrap objects as stackit's extension did")
	installFluxDirectly(ctx, shoot, release.fluxComponents(), release)
	if !release.stopped {
		expectAvailable(ctx, h, logs, release.fluxComponents()...)
	}
	Expect(shoot.Create(ctx, &corev1.Secret{ObjectMeta: stackitMeta(stackitSecretName), Data: credentials})).To(Succeed())
	Expect(shoot.Create(ctx, &corev1.ConfigMap{ObjectMeta: stackitMeta(constants.ShootInfoConfigMapName), Data: map[string]string{
		stackitShootInfoName: "switched", "SHOOT_INFO_TECHNICAL_ID": "shoot--stackit--switched",
	}})).To(Succeed())
	Expect(shoot.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stackitChildTarget}})).To(Succeed())
	createFlux(ctx, shoot, gitRepositoryGVK, stackitName, map[string]any{
		"url": git.URL(repoName), "ref": map[string]any{"branch": gitserver.Branch}, "interval": "1m", "secretRef": map[string]any{"name": stackitSecretName},
	})
	createFlux(ctx, shoot, kustomizationGVK, stackitName, map[string]any{
		"path": "./configmap", "prune": false, "interval": "1m", "sourceRef": map[string]any{"kind": "GitRepository", "name": stackitName},
	})
	// A child Kustomization of the repository's, which references the bootstrap source by name.
	createFlux(ctx, shoot, kustomizationGVK, stackitChild, map[string]any{
		"path": "./configmap", "prune": true, "interval": "1m", "targetNamespace": stackitChildTarget,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": stackitName},
	})
	if owner != nil {
		owner(shoot)
	}
	if !release.stopped {
		expectStackitObjectsReady(ctx, h, logs)
	}
	before := stackitUIDs(ctx, shoot, release)

	By("enabling this extension on the shoot with stackit's providerConfig")
	Expect(h.CreateExtension(ctx)).To(Succeed())
	_, err = h.WaitSucceeded(ctx, reconcileTimeout)
	Expect(err).NotTo(HaveOccurred(), logs)

	Expect(stackitUIDs(ctx, shoot, release)).To(Equal(before))
	return h, logs, before
}

// expectStackitObjectsReady waits until the flux-system source and Kustomization and the child
// Kustomization are ready.
func expectStackitObjectsReady(ctx context.Context, h *sandbox.ShootHandle, logs func() string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, o := range []struct {
			gvk  schema.GroupVersionKind
			name string
		}{{gitRepositoryGVK, stackitName}, {kustomizationGVK, stackitName}, {kustomizationGVK, stackitChild}} {
			g.Expect(readyConditionOf(g, ctx, h, o.gvk, fluxNamespace, o.name)).To(HaveKeyWithValue("status", "True"), "%s %s", o.gvk.Kind, o.name)
		}
	}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
}

// stackitProviderConfig is a providerConfig of stackit's v0.27 shape for the git repository url
// and the Flux components.
func stackitProviderConfig(url string, components ...string) []byte {
	return mustJSON(map[string]any{
		"apiVersion": "flux.extensions.gardener.cloud/v1alpha1",
		"kind":       "FluxConfig",
		"flux":       map[string]any{"components": components},
		"source": map[string]any{
			"template": map[string]any{
				"apiVersion": "source.toolkit.fluxcd.io/v1",
				"kind":       "GitRepository",
				"metadata":   map[string]any{"name": stackitName, "namespace": fluxNamespace},
				"spec": map[string]any{
					"url": url, "ref": map[string]any{"branch": gitserver.Branch}, "interval": "1m", "secretRef": map[string]any{"name": stackitSecretName},
				},
			},
			"secretResourceName": stackitCredentials,
		},
		"kustomization": map[string]any{
			"template": map[string]any{
				"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
				"kind":       "Kustomization",
				"metadata":   map[string]any{"name": stackitName, "namespace": fluxNamespace},
				"spec": map[string]any{
					"path": "./configmap", "interval": "1m", "sourceRef": map[string]any{"kind": "GitRepository", "name": stackitName},
					// Carried into bootstrap.flux: the patch brings a variable the substitution fills.
					"patches": []any{map[string]any{
						"patch":  fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels:\n    %s: ${%s}\n", gitserver.ConfigMapName, stackitPatchedLabel, stackitVariable),
						"target": map[string]any{"kind": "ConfigMap"},
					}},
					"postBuild": map[string]any{"substitute": map[string]any{stackitVariable: stackitVariableValue}},
				},
			},
		},
	})
}

func stackitMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: fluxNamespace, Name: name, Labels: map[string]string{constants.LabelManagedBy: stackitManagedBy}}
}

// installFluxDirectly applies the embedded Flux release's install manifests into the shoot as
// stackit's extension did (`flux install --export`, applied with a client): no ManagedResource.
// The newest embedded release stands in for the release's, whose controllers the module proxy
// cannot build here; the objects and their names are those of every release since v2.0. The
// release's older CRDs replace the embedded ones.
func installFluxDirectly(ctx context.Context, shoot client.Client, components []string, release stackitRelease) {
	GinkgoHelper()
	stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: manifests.NewestFluxVersion(), Components: components, Namespace: fluxNamespace})
	Expect(err).NotTo(HaveOccurred())
	olderCRDs := map[string]*unstructured.Unstructured{}
	for _, file := range release.crds {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		crd := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &crd.Object)).To(Succeed())
		olderCRDs[crd.GetName()] = crd
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
		}
		if len(obj.Object) == 0 {
			continue
		}
		if crd, ok := olderCRDs[obj.GetName()]; ok && obj.GetKind() == "CustomResourceDefinition" {
			obj = crd
		}
		if obj.GetKind() == "Deployment" {
			if release.fluxVersion != "" {
				labels := obj.GetLabels()
				labels["app.kubernetes.io/version"] = release.fluxVersion
				obj.SetLabels(labels)
			}
			if release.stopped {
				Expect(unstructured.SetNestedField(obj.Object, int64(0), "spec", "replicas")).To(Succeed())
			}
		}
		Eventually(func() error { return shoot.Create(ctx, obj) }).WithContext(ctx).WithTimeout(reconcileTimeout).Should(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
	}
}

// createFlux creates a Flux object of kind gvk in Flux's namespace, labelled as stackit's
// extension's, once its CRD is served.
func createFlux(ctx context.Context, shoot client.Client, gvk schema.GroupVersionKind, name string, spec map[string]any) {
	GinkgoHelper()
	obj := unstructuredObject(gvk)
	obj.SetNamespace(fluxNamespace)
	obj.SetName(name)
	Expect(unstructured.SetNestedMap(obj.Object, spec, "spec")).To(Succeed())
	Eventually(func() error { return shoot.Create(ctx, obj) }).WithContext(ctx).WithTimeout(reconcileTimeout).Should(Succeed())
}

// stackitUIDs returns the UIDs of what stackit's extension and the repository left in the shoot;
// the objects a stopped release's controllers never applied are not there.
func stackitUIDs(ctx context.Context, shoot client.Client, release stackitRelease) map[string]types.UID {
	GinkgoHelper()
	uids := map[string]types.UID{}
	objects := []struct {
		gvk             schema.GroupVersionKind
		namespace, name string
	}{
		{corev1.SchemeGroupVersion.WithKind("Namespace"), "", fluxNamespace},
		{apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), "", "gitrepositories.source.toolkit.fluxcd.io"},
		{apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), "", "kustomizations.kustomize.toolkit.fluxcd.io"},
		{gitRepositoryGVK, fluxNamespace, stackitName},
		{kustomizationGVK, fluxNamespace, stackitName},
		{kustomizationGVK, fluxNamespace, stackitChild},
		{corev1.SchemeGroupVersion.WithKind("Secret"), fluxNamespace, stackitSecretName},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), fluxNamespace, constants.ShootInfoConfigMapName},
	}
	for _, component := range release.fluxComponents() {
		objects = append(objects, struct {
			gvk             schema.GroupVersionKind
			namespace, name string
		}{adoption.DeploymentKind, fluxNamespace, component})
	}
	if !release.stopped {
		objects = append(objects, []struct {
			gvk             schema.GroupVersionKind
			namespace, name string
		}{
			{corev1.SchemeGroupVersion.WithKind("ConfigMap"), gitserver.ConfigMapNamespace, gitserver.ConfigMapName},
			{corev1.SchemeGroupVersion.WithKind("ConfigMap"), stackitChildTarget, gitserver.ConfigMapName},
		}...)
	}
	for _, crd := range release.crds {
		data, err := os.ReadFile(crd)
		Expect(err).NotTo(HaveOccurred())
		meta := &metav1.PartialObjectMetadata{}
		Expect(yaml.Unmarshal(data, meta)).To(Succeed())
		objects = append(objects, struct {
			gvk             schema.GroupVersionKind
			namespace, name string
		}{apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), "", meta.Name})
	}
	for _, o := range objects {
		obj := unstructuredObject(o.gvk)
		Expect(get(ctx, shoot, obj, o.namespace, o.name)).To(Succeed(), "%s %s/%s", o.gvk.Kind, o.namespace, o.name)
		uids[o.gvk.Kind+" "+o.namespace+"/"+o.name] = obj.GetUID()
	}
	return uids
}

// expectOnlyServedStoredVersions checks that a CRD stores no version it does not serve.
func expectOnlyServedStoredVersions(ctx context.Context, shoot client.Client, name string) {
	GinkgoHelper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(get(ctx, shoot, crd, "", name)).To(Succeed())
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		served[v.Name] = v.Served
	}
	for _, v := range crd.Status.StoredVersions {
		Expect(served).To(HaveKeyWithValue(v, true), "CRD %s stores %s", name, v)
	}
}

// requestReconcile asks kustomize-controller to reconcile a Kustomization of Flux's namespace now.
func requestReconcile(ctx context.Context, shoot client.Client, name string) {
	GinkgoHelper()
	ks := unstructuredObject(kustomizationGVK)
	Expect(get(ctx, shoot, ks, fluxNamespace, name)).To(Succeed())
	patch := client.MergeFrom(ks.DeepCopy())
	annotations := ks.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["reconcile.fluxcd.io/requestedAt"] = time.Now().UTC().Format(time.RFC3339Nano)
	ks.SetAnnotations(annotations)
	Expect(shoot.Patch(ctx, ks, patch)).To(Succeed())
}
