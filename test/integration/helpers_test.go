// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	fluxNamespace   = "flux-system"
	kluctlNamespace = "kluctl-system"
	fluxVersion     = "v2.9.5"
)

var (
	kluctlDeploymentGVK = bootstrap.KluctlDeploymentGVK
	gitRepositoryGVK    = bootstrap.GitRepositoryGVK
	kustomizationGVK    = bootstrap.KustomizationGVK
)

// newProject creates a project and returns its garden namespace.
func newProject(ctx context.Context, name string) string {
	GinkgoHelper()
	ns, err := sb.CreateProject(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// setProjectConfig creates or replaces the data of the project ConfigMap flux-config.
func setProjectConfig(ctx context.Context, projectNamespace string, data map[string]string) {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: constants.ProjectConfigMapName}}
	err := sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)
	if apierrors.IsNotFound(err) {
		cm.Data = data
		Expect(sb.Garden.Client.Create(ctx, cm)).To(Succeed())
		return
	}
	Expect(err).NotTo(HaveOccurred())
	cm.Data = data
	Expect(sb.Garden.Client.Update(ctx, cm)).To(Succeed())
}

// legacyConfig is the ConfigMap data of the original extension's format.
func legacyConfig(url, branch, repoType string) map[string]string {
	return map[string]string{
		constants.ConfigMapKeyFluxVersion:      strings.TrimPrefix(fluxVersion, "v"),
		constants.ConfigMapKeyRepositoryURL:    url,
		constants.ConfigMapKeyRepositoryBranch: branch,
		constants.ConfigMapKeyRepositoryType:   repoType,
	}
}

// createShoot creates a shoot that is stopped when the scenario ends.
func createShoot(ctx context.Context, spec sandbox.ShootSpec) *sandbox.ShootHandle {
	GinkgoHelper()
	h, err := sb.CreateShoot(ctx, spec)
	if h != nil {
		DeferCleanup(func(ctx SpecContext) error { return h.Stop(ctx) })
	}
	Expect(err).NotTo(HaveOccurred())
	return h
}

// createShootSucceeded creates a shoot and waits for the first successful reconcile.
func createShootSucceeded(ctx context.Context, spec sandbox.ShootSpec) *sandbox.ShootHandle {
	GinkgoHelper()
	h := createShoot(ctx, spec)
	_, err := h.WaitSucceeded(ctx, reconcileTimeout)
	Expect(err).NotTo(HaveOccurred())
	return h
}

func mustJSON(v any) []byte {
	GinkgoHelper()
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// get reads an object from a cluster; NotFound is returned as error.
func get(ctx context.Context, c client.Client, obj client.Object, namespace, name string) error {
	return c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
}

// unstructuredObject returns an empty unstructured object of a kind.
func unstructuredObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// shootObject reads an object of a kind from the shoot.
func shootObject(ctx context.Context, h *sandbox.ShootHandle, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	u := unstructuredObject(gvk)
	if err := get(ctx, h.Shoot.Client, u, namespace, name); err != nil {
		return nil, err
	}
	return u, nil
}

// expectControllers checks that the Flux source-controller and, unless without kluctl, the kluctl
// controller with their namespaces and CRDs landed in the shoot.
func expectControllers(ctx context.Context, h *sandbox.ShootHandle, withKluctl bool) {
	GinkgoHelper()
	c := h.Shoot.Client
	Eventually(func(g Gomega) {
		g.Expect(get(ctx, c, &corev1.Namespace{}, "", fluxNamespace)).To(Succeed())
		g.Expect(get(ctx, c, &appsv1.Deployment{}, fluxNamespace, "source-controller")).To(Succeed())
		g.Expect(get(ctx, c, &apiextensionsv1.CustomResourceDefinition{}, "", "gitrepositories.source.toolkit.fluxcd.io")).To(Succeed())
		if withKluctl {
			g.Expect(get(ctx, c, &corev1.Namespace{}, "", kluctlNamespace)).To(Succeed())
			g.Expect(get(ctx, c, &appsv1.Deployment{}, kluctlNamespace, "kluctl-controller")).To(Succeed())
			g.Expect(get(ctx, c, &apiextensionsv1.CustomResourceDefinition{}, "", "kluctldeployments.gitops.kluctl.io")).To(Succeed())
		}
	}).WithTimeout(shootTimeout).Should(Succeed())
}

// kluctlDeployment reads the bootstrap KluctlDeployment from the shoot.
func kluctlDeployment(ctx context.Context, h *sandbox.ShootHandle) (*unstructured.Unstructured, error) {
	return shootObject(ctx, h, kluctlDeploymentGVK, kluctlNamespace, constants.BootstrapName)
}

// nestedString reads a string field of an unstructured object; missing fields are "".
func nestedString(u *unstructured.Unstructured, fields ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, fields...)
	return v
}

// credentials reads the git credentials Secret from a shoot namespace.
func credentials(ctx context.Context, h *sandbox.ShootHandle, namespace string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := get(ctx, h.Shoot.Client, s, namespace, constants.GitCredentialsSecretName); err != nil {
		return nil, err
	}
	return s, nil
}

// keyPair is one key pair of a project's deploy key Secret.
type keyPair struct {
	Name       string
	Identity   []byte
	Pub        string
	Repository string
}

// deployKeys reads the project's deploy key Secret and returns it (nil if there is none) with its
// key pairs, sorted by name.
func deployKeys(ctx context.Context, projectNamespace string) (*corev1.Secret, []keyPair) {
	GinkgoHelper()
	secret := &corev1.Secret{}
	if err := get(ctx, sb.Garden.Client, secret, projectNamespace, constants.DeployKeysSecretName); err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading the deploy key Secret: %v", err)
		return nil, nil
	}
	var pairs []keyPair
	for key, identity := range secret.Data {
		name, ok := strings.CutSuffix(key, "."+constants.SecretKeyIdentity)
		if !ok {
			continue
		}
		_, pub := deploykey.DataKeys(name)
		pairs = append(pairs, keyPair{Name: name, Identity: identity, Pub: string(secret.Data[pub]), Repository: string(secret.Data[name+".repository"])})
	}
	slices.SortFunc(pairs, func(a, b keyPair) int { return strings.Compare(a.Name, b.Name) })
	return secret, pairs
}

// rotateDeployKey asks the extension for a new key pair of the shoot's deploy key and waits for
// the reconcile.
func rotateDeployKey(ctx context.Context, h *sandbox.ShootHandle, name string) {
	GinkgoHelper()
	key, _ := deployKeys(ctx, h.ProjectNamespace)
	patch := client.MergeFrom(key.DeepCopy())
	metav1.SetMetaDataAnnotation(&key.ObjectMeta, constants.AnnotationRotate, name)
	Expect(sb.Garden.Client.Patch(ctx, key, patch)).To(Succeed())
	Expect(h.TriggerReconcile(ctx)).To(Succeed())
	_, err := h.WaitSucceeded(ctx, reconcileTimeout)
	Expect(err).NotTo(HaveOccurred())
}

// mrSnapshot is what must not change about a ManagedResource while the extension rejects a bad
// configuration: its spec with the Secret references (the Secret names carry a hash of the data)
// and its generation.
type mrSnapshot struct {
	Generation int64
	Spec       resourcesv1alpha1.ManagedResourceSpec
}

func snapshotManagedResources(ctx context.Context, h *sandbox.ShootHandle) map[string]mrSnapshot {
	GinkgoHelper()
	out := map[string]mrSnapshot{}
	for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
		mr, err := h.ManagedResource(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		out[name] = mrSnapshot{Generation: mr.Generation, Spec: mr.Spec}
	}
	return out
}

// expectConfigurationRejected waits for the reconcile to fail with a configuration error naming
// field, and checks that the ManagedResources of the last good configuration stay as they are.
func expectConfigurationRejected(ctx context.Context, h *sandbox.ShootHandle, good map[string]mrSnapshot, field string) {
	GinkgoHelper()
	lastErr, err := h.WaitError(ctx, errorTimeout)
	Expect(err).NotTo(HaveOccurred())
	Expect(lastErr.Description).To(ContainSubstring(field))
	Expect(lastErr.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))
	Consistently(func() map[string]mrSnapshot { return snapshotManagedResources(ctx, h) }).Should(Equal(good))
}

// appliedManagedResource succeeds if gardener-resource-manager applied the current generation.
func appliedManagedResource(ctx context.Context, h *sandbox.ShootHandle, name string) error {
	mr, err := h.ManagedResource(ctx, name)
	if err != nil {
		return err
	}
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied {
			if c.Status == gardencorev1beta1.ConditionTrue && mr.Status.ObservedGeneration == mr.Generation {
				return nil
			}
			return fmt.Errorf("managed resource %s not applied: %s: %s", name, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("managed resource %s has no %s condition", name, resourcesv1alpha1.ResourcesApplied)
}

// lastOperation returns the type and state of the Extension's last operation.
func lastOperation(ex *extensionsv1alpha1.Extension) string {
	if ex.Status.LastOperation == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s", ex.Status.LastOperation.Type, ex.Status.LastOperation.State)
}

// restartExtension restarts the in-process extension with some settings replaced until the
// scenario ends.
func restartExtension(ctx context.Context, settings sandbox.ExtensionSettings) {
	GinkgoHelper()
	Expect(sb.StopExtension()).To(Succeed())
	DeferCleanup(func(ctx SpecContext) error {
		if err := sb.StopExtension(); err != nil {
			return err
		}
		return sb.StartExtension(ctx)
	})
	Expect(sb.StartExtensionWith(ctx, settings)).To(Succeed())
}

// expectMigrateAndRestoreKeep migrates the shoot's Extension and restores it, as a control plane
// migration does, and checks that the objects (their UIDs as uids reports them) and the controller
// processes of the shoot stay as they were throughout: nothing is deleted, re-created or restarted.
func expectMigrateAndRestoreKeep[T any](ctx context.Context, h *sandbox.ShootHandle, uids func() T, logs func() string) {
	GinkgoHelper()
	before, processes := uids(), h.Controllers()

	By("migrating")
	Expect(h.Migrate(ctx, reconcileTimeout)).To(Succeed(), logs)
	for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
		_, err := h.ManagedResource(ctx, name)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "managed resource %s should be released, got %v", name, err)
	}
	Expect(uids()).To(Equal(before))

	By("restoring")
	Expect(h.Restore(ctx)).To(Succeed())
	_, err := h.WaitRestored(ctx, reconcileTimeout)
	Expect(err).NotTo(HaveOccurred(), logs)
	Expect(uids()).To(Equal(before), "the restored ManagedResources adopt the objects")
	Expect(h.Controllers()).To(Equal(processes), "no controller was stopped, replaced or restarted\n%s", logs())
}
