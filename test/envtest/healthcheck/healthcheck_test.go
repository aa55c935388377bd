// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"encoding/json"
	"strings"
	"time"

	extensionshealthcheck "github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	kubernetesutils "github.com/gardener/gardener/pkg/utils/kubernetes"
	"github.com/gardener/gardener/pkg/utils/secrets"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
)

const (
	projectNamespace = "garden-foo"
	// kluctlNamespace is where kluctl.namespace put the KluctlDeployment: not the default, so that
	// the check finds it only through the bootstrap ManagedResource's status.
	kluctlNamespace = "gitops"
	fluxNamespace   = "flux-system"
	repository      = "https://git.example.com/org/fleet.git"

	firstCommit = "3f2d1c0b9a8e7f6d5c4b3a291807f6e5d4c3b2a1"
	fixCommit   = "8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5"
	laterCommit = "c0ffee0123456789abcdef0123456789abcdef01"
)

// shootAccessSecrets are the Secrets of a seed namespace through which gardener's extension library
// reaches the shoot: gardener-internal, gardener if that is missing.
var shootAccessSecrets = []string{v1beta1constants.SecretNameGardener, v1beta1constants.SecretNameGardenerInternal}

// The specs are ordered: one shoot's KluctlDeployment goes from not yet reconciled through failed
// to fixed, then its ManagedResources turn unhealthy.
var _ = Describe("The health check of a shoot in mode kluctl", Ordered, func() {
	const seedNamespace = "shoot--foo--kluctl"
	kluctlDeployment := bootstrapObject(bootstrap.KluctlDeploymentGVK, kluctlNamespace, map[string]any{
		"interval": "5m",
		"source":   map[string]any{"git": map[string]any{"url": repository}},
	})

	BeforeAll(func() {
		setUpShoot(seedNamespace, kluctlDeployment)
		Expect(shoot.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kluctlNamespace}})).To(Succeed())
		Expect(shoot.Client.Create(ctx, kluctlDeployment.DeepCopy())).To(Succeed())
		createExtension(seedNamespace, fluxv1alpha1.BootstrapModeKluctl)
	})

	It("reports BootstrapReady Progressing while the KluctlDeployment gardener-resource-manager applied has no readiness yet", func() {
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(And(
			HaveField("Status", gardencorev1beta1.ConditionProgressing),
			HaveField("Reason", extensionshealthcheck.ReasonProgressing),
			HaveField("Message", ContainSubstring("KluctlDeployment gitops/shoot-flux-bootstrap has not reported readiness yet")),
		))
	})

	It("reports BootstrapReady True once the KluctlDeployment is Ready, and records the commit it deployed", func() {
		setStatus(kluctlDeployment, kluctlStatus(ready("True", "ReconciliationSucceeded", "deploy: ok"), firstCommit, ""))
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(healthy())
		Eventually(lastAppliedRevision(seedNamespace)).WithTimeout(timeout).Should(Equal(firstCommit))
	})

	It("reports BootstrapReady False naming the KluctlDeployment, its commit and kluctl's error when it fails", func() {
		setStatus(kluctlDeployment, kluctlStatus(ready("False", "PrepareFailed", "prepare failed"), firstCommit,
			"failed to clone "+repository+": authentication required"))
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(And(
			HaveField("Status", gardencorev1beta1.ConditionFalse),
			HaveField("Reason", extensionshealthcheck.ReasonUnsuccessful),
			HaveField("Message", ContainSubstring("KluctlDeployment gitops/shoot-flux-bootstrap (last deployed commit "+firstCommit+
				") is not ready (PrepareFailed): failed to clone "+repository+": authentication required")),
		))
	})

	It("turns BootstrapReady True again once the KluctlDeployment deployed a fixed commit", func() {
		setStatus(kluctlDeployment, kluctlStatus(ready("True", "ReconciliationSucceeded", "deploy: ok"), fixCommit, ""))
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(healthy())
		Eventually(lastAppliedRevision(seedNamespace)).WithTimeout(timeout).Should(Equal(fixCommit))
	})

	It("leaves an unhealthy controllers ManagedResource to gardenlet's care controller (SystemComponentsHealthy)", func() {
		setManagedResourceStatus(seedNamespace, constants.ManagedResourceControllers, nil,
			mrCondition(resourcesv1alpha1.ResourcesApplied, gardencorev1beta1.ConditionTrue, "ApplySucceeded", "All resources are applied."),
			mrCondition(resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionFalse, "DeploymentUnhealthy",
				`Deployment "kluctl-system/kluctl-controller" is unhealthy: condition "Available" has false status`),
			mrCondition(resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionFalse, "ResourcesRolledOut", "All resources are rolled out."),
		)
		Eventually(func(g Gomega) []gardencorev1beta1.Condition {
			mr := &resourcesv1alpha1.ManagedResource{}
			g.Expect(healthCheckCache.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			return mr.Status.Conditions
		}).WithTimeout(timeout).Should(ContainElement(And(
			HaveField("Type", resourcesv1alpha1.ResourcesHealthy), HaveField("Status", gardencorev1beta1.ConditionFalse))),
			"the health check sees the unhealthy ManagedResource")

		// A new commit tells when a check ran after that: the reporter records it some seconds
		// after the check wrote its condition (healthcheck.RevisionReportDelay).
		setStatus(kluctlDeployment, kluctlStatus(ready("True", "ReconciliationSucceeded", "deploy: ok"), laterCommit, ""))
		Eventually(lastAppliedRevision(seedNamespace)).WithTimeout(timeout).Should(Equal(laterCommit))
		Expect(bootstrapReady(seedNamespace)(Default)).To(healthy())
	})

	It("reports BootstrapReady False while the bootstrap ManagedResource cannot apply a deleted KluctlDeployment, True once it is back", func() {
		setManagedResourceStatus(seedNamespace, constants.ManagedResourceBootstrap, []*unstructured.Unstructured{kluctlDeployment},
			mrCondition(resourcesv1alpha1.ResourcesApplied, gardencorev1beta1.ConditionFalse, "ApplyFailed",
				`Could not apply all new resources: error creating object "gitops/shoot-flux-bootstrap": admission webhook denied the request`),
			mrCondition(resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionFalse, "ResourcesUnhealthy", "Resources could not be applied."),
		)
		Expect(shoot.Client.Delete(ctx, kluctlDeployment.DeepCopy())).To(Succeed())
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(And(
			HaveField("Status", gardencorev1beta1.ConditionFalse),
			HaveField("Reason", extensionshealthcheck.ReasonUnsuccessful),
			HaveField("Message", ContainSubstring("KluctlDeployment shoot-flux-bootstrap not found in the shoot (namespace gitops)")),
		))

		By("gardener-resource-manager applies it again and kluctl deploys")
		Expect(shoot.Client.Create(ctx, kluctlDeployment.DeepCopy())).To(Succeed())
		setStatus(kluctlDeployment, kluctlStatus(ready("True", "ReconciliationSucceeded", "deploy: ok"), laterCommit, ""))
		setManagedResourceStatus(seedNamespace, constants.ManagedResourceBootstrap, []*unstructured.Unstructured{kluctlDeployment}, healthyMRConditions()...)
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(healthy())
	})
})

var _ = Describe("The health check of a shoot in mode flux", Ordered, func() {
	const (
		seedNamespace   = "shoot--foo--flux"
		fetchedRevision = "main@sha1:" + fixCommit
	)
	gitRepository := bootstrapObject(bootstrap.GitRepositoryGVK, fluxNamespace, map[string]any{"interval": "1m", "url": repository})
	kustomization := bootstrapObject(bootstrap.KustomizationGVK, fluxNamespace, map[string]any{
		"interval":  "10m",
		"prune":     true,
		"sourceRef": map[string]any{"kind": bootstrap.GitRepositoryGVK.Kind, "name": constants.BootstrapName},
	})

	BeforeAll(func() {
		setUpShoot(seedNamespace, gitRepository, kustomization)
		Expect(shoot.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNamespace}})).To(Succeed())
		Expect(shoot.Client.Create(ctx, gitRepository.DeepCopy())).To(Succeed())
		Expect(shoot.Client.Create(ctx, kustomization.DeepCopy())).To(Succeed())
		setStatus(gitRepository, map[string]any{
			"conditions": []any{ready("True", "Succeeded", "stored artifact for revision '"+fetchedRevision+"'")},
			"artifact": map[string]any{
				"revision":       fetchedRevision,
				"digest":         "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
				"lastUpdateTime": metav1.Now().UTC().Format(time.RFC3339),
				"path":           "gitrepository/flux-system/shoot-flux-bootstrap/" + fixCommit + ".tar.gz",
				"url":            "http://source-controller.flux-system.svc/gitrepository/flux-system/shoot-flux-bootstrap/" + fixCommit + ".tar.gz",
			},
		})
		createExtension(seedNamespace, fluxv1alpha1.BootstrapModeFlux)
	})

	It("reports BootstrapReady False naming the Kustomization when it fails to apply the Ready GitRepository's revision", func() {
		setStatus(kustomization, map[string]any{
			"conditions":          []any{ready("False", "BuildFailed", "kustomize build failed: accumulating resources from 'apps': no such file")},
			"lastAppliedRevision": "main@sha1:" + firstCommit,
		})
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(And(
			HaveField("Status", gardencorev1beta1.ConditionFalse),
			HaveField("Reason", extensionshealthcheck.ReasonUnsuccessful),
			HaveField("Message", ContainSubstring("Kustomization flux-system/shoot-flux-bootstrap (last applied revision main@sha1:"+firstCommit+
				") is not ready (BuildFailed): kustomize build failed: accumulating resources from 'apps': no such file")),
		))
	})

	It("turns BootstrapReady True once the Kustomization applied the revision, and records it", func() {
		setStatus(kustomization, map[string]any{
			"conditions":          []any{ready("True", "ReconciliationSucceeded", "Applied revision: "+fetchedRevision)},
			"lastAppliedRevision": fetchedRevision,
		})
		Eventually(bootstrapReady(seedNamespace)).WithTimeout(timeout).Should(healthy())
		Eventually(lastAppliedRevision(seedNamespace)).WithTimeout(timeout).Should(Equal(fetchedRevision))
	})
})

// setUpShoot sets a shoot up in the seed as gardenlet and gardener-resource-manager do: its
// namespace, the shoot access Secrets with their tokens, the Cluster, and the ManagedResources,
// applied and healthy, the bootstrap one listing objects.
func setUpShoot(seedNamespace string, objects ...*unstructured.Unstructured) {
	GinkgoHelper()
	Expect(seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   seedNamespace,
		Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleShoot},
	}})).To(Succeed())

	// gardenlet writes a kubeconfig without a token; the token requestor adds the token.
	for _, name := range shootAccessSecrets {
		kubeconfig := kubernetesutils.NewKubeconfig(seedNamespace,
			clientcmdv1.Cluster{Server: shoot.Config.Host, CertificateAuthorityData: shoot.Config.CAData},
			clientcmdv1.AuthInfo{})
		Expect(gardenerutils.NewShootAccessSecret(name, seedNamespace).WithNameOverride(name).WithKubeconfig(kubeconfig).Reconcile(ctx, seed.Client)).To(Succeed())
		Eventually(func(g Gomega) {
			secret := &corev1.Secret{}
			g.Expect(seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, secret)).To(Succeed())
			cfg, err := clientcmd.Load(secret.Data[secrets.DataKeyKubeconfig])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.AuthInfos).To(HaveEach(HaveField("Token", Not(BeEmpty()))))
		}).WithTimeout(timeout).Should(Succeed(), "the token requestor adds the token to %s", name)
	}

	cluster := &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: seedNamespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			Shoot: raw(&gardencorev1beta1.Shoot{
				TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
				ObjectMeta: metav1.ObjectMeta{Name: strings.TrimPrefix(seedNamespace, "shoot--foo--"), Namespace: projectNamespace},
				Spec: gardencorev1beta1.ShootSpec{
					Kubernetes: gardencorev1beta1.Kubernetes{Version: "1.35.1"},
					Extensions: []gardencorev1beta1.Extension{{Type: constants.ExtensionType}},
				},
			}),
			CloudProfile: raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"}),
			Seed:         ptr.To(raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"})),
		},
	}
	Expect(seed.Client.Create(ctx, cluster)).To(Succeed())
	// The check reads the Cluster from its cache, for the shoot's hibernation.
	Eventually(func() error {
		return healthCheckCache.Get(ctx, client.ObjectKeyFromObject(cluster), &extensionsv1alpha1.Cluster{})
	}).WithTimeout(timeout).Should(Succeed())

	for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
		Expect(seed.Client.Create(ctx, &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: seedNamespace},
			Spec:       resourcesv1alpha1.ManagedResourceSpec{SecretRefs: []corev1.LocalObjectReference{{Name: name}}},
		})).To(Succeed())
	}
	setManagedResourceStatus(seedNamespace, constants.ManagedResourceControllers, nil, healthyMRConditions()...)
	setManagedResourceStatus(seedNamespace, constants.ManagedResourceBootstrap, objects, healthyMRConditions()...)
}

// createExtension creates the shoot's Extension with the providerStatus of a reconcile that
// deployed the bootstrap in mode.
func createExtension(seedNamespace string, mode fluxv1alpha1.BootstrapMode) {
	GinkgoHelper()
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: constants.ExtensionType, Namespace: seedNamespace},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ExtensionType}},
	}
	Expect(seed.Client.Create(ctx, ex)).To(Succeed())
	status, err := helper.EncodeStatus(&fluxv1alpha1.FluxStatus{Repository: repository, BootstrapMode: string(mode)})
	Expect(err).NotTo(HaveOccurred())
	// A merge patch without resourceVersion: the health check may already write the conditions.
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = status
	Expect(seed.Client.Status().Patch(ctx, ex, patch)).To(Succeed())
}

// bootstrapReady returns a function reading the Extension's condition BootstrapReady.
func bootstrapReady(seedNamespace string) func(Gomega) gardencorev1beta1.Condition {
	return func(g Gomega) gardencorev1beta1.Condition {
		ex := &extensionsv1alpha1.Extension{}
		g.Expect(seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ExtensionType}, ex)).To(Succeed())
		c := v1beta1helper.GetCondition(ex.Status.Conditions, healthcheck.ConditionTypeBootstrapReady)
		g.Expect(c).NotTo(BeNil(), "condition %s", healthcheck.ConditionTypeBootstrapReady)
		return *c
	}
}

func healthy() OmegaMatcher {
	return And(
		HaveField("Status", gardencorev1beta1.ConditionTrue),
		HaveField("Reason", extensionshealthcheck.ReasonSuccessful),
	)
}

// lastAppliedRevision returns a function reading the Extension's providerStatus.lastAppliedRevision.
func lastAppliedRevision(seedNamespace string) func(Gomega) string {
	return func(g Gomega) string {
		ex := &extensionsv1alpha1.Extension{}
		g.Expect(seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ExtensionType}, ex)).To(Succeed())
		status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).NotTo(BeNil())
		return status.LastAppliedRevision
	}
}

// bootstrapObject returns the bootstrap object of kind gvk in namespace of the shoot.
func bootstrapObject(gvk schema.GroupVersionKind, namespace string, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(constants.BootstrapName)
	return obj
}

// setStatus writes the status of a bootstrap object in the shoot, as kluctl or Flux does.
func setStatus(obj *unstructured.Unstructured, status map[string]any) {
	GinkgoHelper()
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(obj.GroupVersionKind())
	Expect(shoot.Client.Get(ctx, client.ObjectKeyFromObject(obj), current)).To(Succeed())
	current.Object["status"] = status
	Expect(shoot.Client.Status().Update(ctx, current)).To(Succeed())
}

// ready is the Ready condition as kluctl and Flux write it.
func ready(status, reason, message string) map[string]any {
	return map[string]any{
		"type":               "Ready",
		"status":             status,
		"reason":             reason,
		"message":            message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}
}

// kluctlStatus is a KluctlDeployment's status with its Ready condition, the commit of the last
// deploy and, if not empty, the error of the last prepare.
func kluctlStatus(ready map[string]any, commit, prepareError string) map[string]any {
	status := map[string]any{
		"conditions":       []any{ready},
		"lastDeployResult": map[string]any{"gitInfo": map[string]any{"url": repository, "commit": commit}},
	}
	if prepareError != "" {
		status["lastPrepareError"] = prepareError
	}
	return status
}

// setManagedResourceStatus writes a ManagedResource's status as gardener-resource-manager does:
// its conditions and the objects it applied.
func setManagedResourceStatus(seedNamespace, name string, objects []*unstructured.Unstructured, conditions ...gardencorev1beta1.Condition) {
	GinkgoHelper()
	mr := &resourcesv1alpha1.ManagedResource{}
	Expect(seed.Client.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
	mr.Status.ObservedGeneration = mr.Generation
	mr.Status.Conditions = conditions
	mr.Status.Resources = nil
	for _, obj := range objects {
		mr.Status.Resources = append(mr.Status.Resources, resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{
			APIVersion: obj.GetAPIVersion(),
			Kind:       obj.GetKind(),
			Namespace:  obj.GetNamespace(),
			Name:       obj.GetName(),
		}})
	}
	Expect(seed.Client.Status().Update(ctx, mr)).To(Succeed())
}

func healthyMRConditions() []gardencorev1beta1.Condition {
	return []gardencorev1beta1.Condition{
		mrCondition(resourcesv1alpha1.ResourcesApplied, gardencorev1beta1.ConditionTrue, "ApplySucceeded", "All resources are applied."),
		mrCondition(resourcesv1alpha1.ResourcesHealthy, gardencorev1beta1.ConditionTrue, "ResourcesHealthy", "All resources are healthy."),
		mrCondition(resourcesv1alpha1.ResourcesProgressing, gardencorev1beta1.ConditionFalse, "ResourcesRolledOut", "All resources are rolled out."),
	}
}

func mrCondition(t gardencorev1beta1.ConditionType, status gardencorev1beta1.ConditionStatus, reason, message string) gardencorev1beta1.Condition {
	now := metav1.Now()
	return gardencorev1beta1.Condition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now, LastUpdateTime: now}
}

func raw(o any) runtime.RawExtension {
	GinkgoHelper()
	b, err := json.Marshal(o)
	Expect(err).NotTo(HaveOccurred())
	return runtime.RawExtension{Raw: b}
}
