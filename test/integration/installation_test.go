// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// installTimeout bounds the wait for gardener's controllers to install, report or remove an
// installation: gardener-controller-manager, gardenlet, the seed's resource manager and the
// kubelet stand-in each act on the previous one's change.
var installTimeout = 2 * time.Minute

// condition returns the condition of a type, or an empty one.
func condition(conditions []gardencorev1beta1.Condition, t gardencorev1beta1.ConditionType) gardencorev1beta1.Condition {
	if c := v1beta1helper.GetCondition(conditions, t); c != nil {
		return *c
	}
	return gardencorev1beta1.Condition{Type: t}
}

// publishedDeployment returns a copy of shoot-flux's ControllerDeployment as publishing wrote it
// and the sandbox configured it, named name.
func publishedDeployment(ctx context.Context, name string) *gardencorev1.ControllerDeployment {
	GinkgoHelper()
	published := &gardencorev1.ControllerDeployment{}
	Expect(sb.Garden.Client.Get(ctx, client.ObjectKey{Name: sandbox.RegistrationName}, published)).To(Succeed())
	Expect(published.Helm).NotTo(BeNil())
	Expect(published.Helm.OCIRepository).NotTo(BeNil(), "publishing names the pushed chart")
	return &gardencorev1.ControllerDeployment{
		ObjectMeta:             metav1.ObjectMeta{Name: name},
		Helm:                   published.Helm.DeepCopy(),
		InjectGardenKubeconfig: published.InjectGardenKubeconfig,
	}
}

// registerDeployment registers a ControllerDeployment for an Extension type of its own (its name)
// with a deployment policy, and removes both again when the scenario ends, as an operator would:
// the registration first, whose installation gardener-controller-manager then deletes.
func registerDeployment(ctx context.Context, deployment *gardencorev1.ControllerDeployment, policy gardencorev1beta1.ControllerDeploymentPolicy) *gardencorev1beta1.ControllerRegistration {
	GinkgoHelper()
	Expect(sb.Garden.Client.Create(ctx, deployment)).To(Succeed())
	registration := &gardencorev1beta1.ControllerRegistration{
		ObjectMeta: metav1.ObjectMeta{Name: deployment.Name},
		Spec: gardencorev1beta1.ControllerRegistrationSpec{
			Resources: []gardencorev1beta1.ControllerResource{{Kind: "Extension", Type: deployment.Name}},
			Deployment: &gardencorev1beta1.ControllerRegistrationDeployment{
				Policy:         ptr.To(policy),
				DeploymentRefs: []gardencorev1beta1.DeploymentRef{{Name: deployment.Name}},
			},
		},
	}
	Expect(sb.Garden.Client.Create(ctx, registration)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(sb.Garden.Client.Delete(ctx, registration))).To(Succeed())
		Eventually(func() error {
			return sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(registration), &gardencorev1beta1.ControllerRegistration{})
		}).WithTimeout(installTimeout).Should(Satisfy(apierrors.IsNotFound), "gardener-controller-manager deletes the installation, then the registration's finalizer goes")
		Expect(client.IgnoreNotFound(sb.Garden.Client.Delete(ctx, deployment))).To(Succeed())
	})
	return registration
}

var _ = Describe("Installation", Label(labelDeployed, labelLandscape), func() {
	It("is installed from the published chart and reported by gardenlet where an operator looks", func(ctx SpecContext) {
		projectNamespace := newProject(ctx, "install")
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		createShootSucceeded(ctx, sandbox.ShootSpec{Project: "install", Name: "one", SharedControlPlane: true})

		var ci *gardencorev1beta1.ControllerInstallation
		Eventually(func(g Gomega) {
			var err error
			ci, err = sb.ControllerInstallation(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			for _, t := range []gardencorev1beta1.ConditionType{
				gardencorev1beta1.ControllerInstallationValid,
				gardencorev1beta1.ControllerInstallationInstalled,
				gardencorev1beta1.ControllerInstallationHealthy,
				gardencorev1beta1.ControllerInstallationRequired,
			} {
				g.Expect(condition(ci.Status.Conditions, t).Status).To(Equal(gardencorev1beta1.ConditionTrue), "%s: %s", t, sandbox.FormatConditions(ci.Status.Conditions))
			}
			g.Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationProgressing).Status).To(Equal(gardencorev1beta1.ConditionFalse))
		}).WithTimeout(installTimeout).Should(Succeed())
		AddReportEntry("ControllerInstallation "+ci.Name, sandbox.FormatConditions(ci.Status.Conditions))
		Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationValid).Reason).To(Equal("RegistrationValid"))
		Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationRequired).Message).To(ContainSubstring("Extension/shoot-flux"))

		By("checking that the extension runs the published image from gardenlet's rendering")
		published := &gardencorev1.ControllerDeployment{}
		Expect(sb.Garden.Client.Get(ctx, client.ObjectKey{Name: sandbox.RegistrationName}, published)).To(Succeed())
		values := map[string]any{}
		Expect(json.Unmarshal(published.Helm.Values.Raw, &values)).To(Succeed())
		image, ok := values["image"].(map[string]any)
		Expect(ok).To(BeTrue(), "publishing writes the image into the values")
		namespace := gardenerutils.NamespaceNameForControllerInstallation(ci)
		d := &appsv1.Deployment{}
		Expect(sb.Seed.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "gardener-extension-shoot-flux"}, d)).To(Succeed())
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image["repository"].(string) + "@" + image["tag"].(string)))
		Expect(d.Labels).To(HaveKey(resourcesv1alpha1.ManagedBy), "gardener-resource-manager applied it")
		Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
	})

	DescribeTable("reports a registration it cannot install on the ControllerInstallation and installs nothing",
		func(ctx SpecContext, name string, mutate func(*gardencorev1.ControllerDeployment), reason, message string) {
			deployment := publishedDeployment(ctx, name)
			mutate(deployment)
			registerDeployment(ctx, deployment, gardencorev1beta1.ControllerDeploymentPolicyAlways)

			var ci *gardencorev1beta1.ControllerInstallation
			Eventually(func(g Gomega) {
				var err error
				ci, err = sb.ControllerInstallationOf(ctx, name)
				g.Expect(err).NotTo(HaveOccurred())
				valid := condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationValid)
				g.Expect(valid.Status).To(Equal(gardencorev1beta1.ConditionFalse), sandbox.FormatConditions(ci.Status.Conditions))
				g.Expect(valid.Reason).To(Equal(reason))
				g.Expect(valid.Message).To(ContainSubstring(message))
			}).WithTimeout(installTimeout).Should(Succeed())
			AddReportEntry("ControllerInstallation "+ci.Name, sandbox.FormatConditions(ci.Status.Conditions))
			Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationInstalled).Status).NotTo(Equal(gardencorev1beta1.ConditionTrue))
			Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationHealthy).Status).NotTo(Equal(gardencorev1beta1.ConditionTrue))
			err := sb.Seed.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.GardenNamespace, Name: gardenerutils.ManagedResourceNameForControllerInstallation(ci)}, &resourcesv1alpha1.ManagedResource{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "gardenlet writes no ManagedResource for it, got %v", err)
		},
		Entry("a chart digest that is not in the registry", "sf-nochart", func(d *gardencorev1.ControllerDeployment) {
			ref := ptr.Deref(d.Helm.OCIRepository.Ref, "")
			repository, _, found := strings.Cut(ref, "@")
			Expect(found).To(BeTrue(), "publishing pins the chart by digest: %s", ref)
			d.Helm.OCIRepository.Ref = ptr.To(repository + "@sha256:" + strings.Repeat("0", 64))
		}, "OCIChartCannotBePulled", "chart pulling process failed"),
		Entry("values the chart rejects", "sf-badvalues", func(d *gardencorev1.ControllerDeployment) {
			values := map[string]any{}
			Expect(json.Unmarshal(d.Helm.Values.Raw, &values)).To(Succeed())
			values["gardenAccess"] = map[string]any{"dedicatedServiceAccount": map[string]any{"enabled": true, "name": "extension-shoot-flux"}}
			d.Helm.Values = &apiextensionsv1.JSON{Raw: mustJSON(values)}
		}, "ChartCannotBeRendered", "must not start with"),
		Entry("no garden kubeconfig for the dedicated garden access", "sf-nokubeconfig", func(d *gardencorev1.ControllerDeployment) {
			d.InjectGardenKubeconfig = ptr.To(false)
		}, "ChartCannotBeRendered", "needs injectGardenKubeconfig: true"),
	)

	// The sandbox's own registration has policy Always (see sandbox.publishExtension): the extension
	// must run before any shoot, and every shoot of the shared suite needs it. So gardener's
	// on-demand lifecycle is shown with a registration of its own, of a chart with one ConfigMap:
	// a second installation of the extension's chart would share its cluster-scoped objects
	// (ClusterRole, ClusterRoleBinding) with the running one and take them along on its removal.
	// The removal of the extension's own installation is the next scenario's.
	It("is installed while a shoot of the seed lists it and removed from the seed when none does", func(ctx SpecContext) {
		const extensionType = "sf-ondemand"
		registerDeployment(ctx, &gardencorev1.ControllerDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: extensionType},
			Helm:       &gardencorev1.HelmControllerDeployment{RawChart: configMapChart(extensionType)},
		}, gardencorev1beta1.ControllerDeploymentPolicyOnDemand)

		By("creating a shoot that lists the registration's type")
		projectNamespace := newProject(ctx, "ondemand")
		shoot, err := sandbox.NewShoot(projectNamespace, "one", nil)
		Expect(err).NotTo(HaveOccurred())
		shoot.Spec.Extensions = []gardencorev1beta1.Extension{{Type: extensionType}}
		Expect(sb.Garden.Client.Create(ctx, shoot)).To(Succeed())
		var ci *gardencorev1beta1.ControllerInstallation
		Eventually(func(g Gomega) {
			var err error
			ci, err = sb.ControllerInstallationOf(ctx, extensionType)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(condition(ci.Status.Conditions, gardencorev1beta1.ControllerInstallationInstalled).Status).To(Equal(gardencorev1beta1.ConditionTrue), sandbox.FormatConditions(ci.Status.Conditions))
		}).WithTimeout(installTimeout).Should(Succeed())
		AddReportEntry("ControllerInstallation "+ci.Name, sandbox.FormatConditions(ci.Status.Conditions))
		namespace := gardenerutils.NamespaceNameForControllerInstallation(ci)
		installed := []client.Object{
			&resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.GardenNamespace, Name: gardenerutils.ManagedResourceNameForControllerInstallation(ci)}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: extensionType}},
		}
		for _, obj := range installed {
			Eventually(func() error {
				return sb.Seed.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			}).WithTimeout(installTimeout).Should(Succeed(), "%T %s, applied by gardener-resource-manager", obj, client.ObjectKeyFromObject(obj))
		}

		By("removing the type from the shoot: no shoot of the seed needs the registration any more")
		start := time.Now()
		patch := client.MergeFrom(shoot.DeepCopy())
		shoot.Spec.Extensions = nil
		Expect(sb.Garden.Client.Patch(ctx, shoot, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			err := sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(ci), &gardencorev1beta1.ControllerInstallation{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ControllerInstallation %s: %v", ci.Name, err)
		}).WithTimeout(installTimeout).Should(Succeed())
		AddReportEntry("removal once no shoot needs it", time.Since(start).Round(time.Millisecond).String())
		for _, obj := range append(installed, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}) {
			Eventually(func() error {
				return sb.Seed.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			}).WithTimeout(installTimeout).Should(Satisfy(apierrors.IsNotFound), "%T %s must be gone from the seed", obj, client.ObjectKeyFromObject(obj))
		}
	})

	It("removes the extension from the seed when its installation is deleted, and installs it again for the next shoot", func(ctx SpecContext) {
		projectNamespace := newProject(ctx, "reinstall")
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		createShootSucceeded(ctx, sandbox.ShootSpec{Project: "reinstall", Name: "one", SharedControlPlane: true})
		old, err := sb.ControllerInstallation(ctx)
		Expect(err).NotTo(HaveOccurred())
		oldNamespace := gardenerutils.NamespaceNameForControllerInstallation(old)

		By("deleting the ControllerInstallation, as an operator does to take the extension off the seed")
		start := time.Now()
		Expect(sb.Garden.Client.Delete(ctx, old)).To(Succeed())
		Eventually(func(g Gomega) {
			err := sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(old), &gardencorev1beta1.ControllerInstallation{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ControllerInstallation %s: %v", old.Name, err)
		}).WithTimeout(installTimeout).Should(Succeed())
		AddReportEntry("removal", time.Since(start).Round(time.Millisecond).String())
		for _, obj := range []client.Object{
			&resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.GardenNamespace, Name: gardenerutils.ManagedResourceNameForControllerInstallation(old)}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: oldNamespace, Name: "gardener-extension-shoot-flux"}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: oldNamespace}},
		} {
			err := sb.Seed.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s must be gone from the seed, got %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		pods := &corev1.PodList{}
		Expect(sb.Seed.Client.List(ctx, pods, client.InNamespace(oldNamespace))).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
		Expect(sb.Garden.Client.Get(ctx, client.ObjectKey{Namespace: sandbox.GardenAccessNamespace, Name: "shoot-flux"}, &corev1.ServiceAccount{})).To(Succeed(),
			"gardenlet leaves the dedicated garden ServiceAccount behind (docs/operations/garden-access.md); the next installation uses it again")
		// gardener-resource-manager deletes the chart's objects in no particular order: the removed
		// extension may lose its roles before its pod ends, and then its requests are refused.
		// Those are the removal's, not a permission the chart lacks.
		denied, err := sb.DeniedRequests()
		Expect(err).NotTo(HaveOccurred())
		for _, d := range denied {
			Expect(d).To(ContainSubstring("system:serviceaccount:"+oldNamespace+":"), "only the removed installation's identity may be refused")
		}
		AddReportEntry("requests of the removed installation refused during the removal", strings.Join(denied, "\n"))

		By("creating the next shoot, whose reconcile waits for the installation as gardenlet's does")
		start = time.Now()
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: "reinstall", Name: "two", SharedControlPlane: true})
		AddReportEntry("reinstallation and first reconcile", time.Since(start).Round(time.Millisecond).String())
		current, err := sb.ControllerInstallation(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(current.Name).NotTo(Equal(old.Name))
		Expect(v1beta1helper.IsControllerInstallationSuccessful(*current)).To(BeTrue(), sandbox.FormatConditions(current.Status.Conditions))
		namespace, err := sb.ExtensionNamespace(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(namespace).To(Equal(gardenerutils.NamespaceNameForControllerInstallation(current)))

		By("reconciling the shoots with the extension of the new installation")
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
	})
})

// configMapChart is a Helm chart, packaged as a ControllerDeployment's rawChart, whose only object
// is a ConfigMap of the name in the release's namespace.
func configMapChart(name string) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for file, content := range map[string]string{
		name + "/Chart.yaml":               "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		name + "/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: {{ .Release.Namespace }}\ndata:\n  installed: \"true\"\n",
	} {
		Expect(tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})).To(Succeed())
		_, err := tw.Write([]byte(content))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}
