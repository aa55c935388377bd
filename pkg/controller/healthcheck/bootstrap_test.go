// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
)

var _ = Describe("Bootstrap health check", func() {
	var (
		ctx     = context.Background()
		request = types.NamespacedName{Namespace: "shoot--foo--bar", Name: "shoot-flux"}
	)

	extension := func(status *fluxv1alpha1.FluxStatus) *extensionsv1alpha1.Extension {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: request.Name, Namespace: request.Namespace}}
		if status != nil {
			raw, err := json.Marshal(status)
			Expect(err).NotTo(HaveOccurred())
			ex.Status.ProviderStatus = &runtime.RawExtension{Raw: raw}
		}
		return ex
	}

	bootstrapObject := func(apiVersion, kind, namespace string, conditions ...map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion(apiVersion)
		obj.SetKind(kind)
		obj.SetName(constants.BootstrapName)
		obj.SetNamespace(namespace)
		obj.SetLabels(map[string]string{constants.LabelManagedBy: constants.ExtensionName})
		if len(conditions) > 0 {
			list := make([]any, 0, len(conditions))
			for _, c := range conditions {
				list = append(list, c)
			}
			Expect(unstructured.SetNestedSlice(obj.Object, list, "status", "conditions")).To(Succeed())
		}
		return obj
	}

	ready := func(status, reason, message string) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message}
	}

	check := func(ex *extensionsv1alpha1.Extension, shootObjs ...client.Object) (gardencorev1beta1.ConditionStatus, string) {
		seed := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(ex).Build()
		shoot := fake.NewClientBuilder().WithObjects(shootObjs...).Build()
		result, _, err := CheckBootstrapState(ctx, seed, shoot, request)
		Expect(err).NotTo(HaveOccurred())
		return result.Status, result.Detail
	}

	newRevision := func(ex *extensionsv1alpha1.Extension, shootObjs ...client.Object) string {
		seed := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(ex).Build()
		shoot := fake.NewClientBuilder().WithObjects(shootObjs...).Build()
		_, rev, err := CheckBootstrapState(ctx, seed, shoot, request)
		Expect(err).NotTo(HaveOccurred())
		return rev
	}

	// shootWithoutList is a shoot whose objects can be read by name only: the check must not list
	// what the shoot's admin may have created in any number.
	shootWithoutList := func(objs ...client.Object) client.Client {
		return fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return errors.New("the health check listed objects of the shoot")
			},
		}).Build()
	}

	// appliedTo is the bootstrap ManagedResource as gardener-resource-manager records the objects
	// it applied.
	appliedTo := func(refs ...resourcesv1alpha1.ObjectReference) *resourcesv1alpha1.ManagedResource {
		return &resourcesv1alpha1.ManagedResource{
			ObjectMeta: metav1.ObjectMeta{Namespace: request.Namespace, Name: constants.ManagedResourceBootstrap},
			Status:     resourcesv1alpha1.ManagedResourceStatus{Resources: refs},
		}
	}
	ref := func(apiVersion, kind, namespace string) resourcesv1alpha1.ObjectReference {
		return resourcesv1alpha1.ObjectReference{ObjectReference: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: constants.BootstrapName}}
	}

	kluctlStatus := &fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"}
	fluxStatus := &fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "flux"}

	It("is true when nothing is bootstrapped", func() {
		status, _ := check(extension(&fluxv1alpha1.FluxStatus{BootstrapMode: "none"}))
		Expect(status).To(Equal(gardencorev1beta1.ConditionTrue))
		status, detail := check(extension(nil))
		Expect(status).To(Equal(gardencorev1beta1.ConditionTrue))
		Expect(detail).To(Equal("no bootstrap configured"))
	})

	It("reports a missing KluctlDeployment", func() {
		status, detail := check(extension(kluctlStatus))
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(ContainSubstring("KluctlDeployment shoot-flux-bootstrap not found"))
	})

	It("is progressing until the kluctl controller reports", func() {
		status, _ := check(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system"))
		Expect(status).To(Equal(gardencorev1beta1.ConditionProgressing))
	})

	It("surfaces a failing user repository", func() {
		status, detail := check(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system",
			ready("False", "PrepareFailed", "failed to clone git source: authentication required")))
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(Equal("KluctlDeployment kluctl-system/shoot-flux-bootstrap is not ready (PrepareFailed): failed to clone git source: authentication required"))
	})

	// The status fields below are shaped as kluctl v2.28.2 writes them (api/v1beta1
	// KluctlDeploymentStatus, pkg/types/result CommandResultSummary and DeploymentError).
	It("reports errors of the last kluctl deployment as kluctl writes them", func() {
		obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", ready("True", "Success", "deployed"))
		Expect(unstructured.SetNestedField(obj.Object, map[string]any{
			"id":              "0b5e0f4e",
			"renderedObjects": int64(3),
			"appliedObjects":  int64(1),
			"errors": []any{
				map[string]any{
					"ref":     map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "apps", "name": "web"},
					"message": `Deployment.apps "web" is invalid: spec.template.spec.containers: Required value`,
				},
				map[string]any{
					"ref":     map[string]any{"version": "v1", "kind": "Namespace", "name": "apps"},
					"message": "admission webhook denied the request",
				},
			},
			"warnings":     []any{},
			"totalChanges": int64(1),
		}, "status", "lastDeployResult")).To(Succeed())
		status, detail := check(extension(kluctlStatus), obj)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(Equal(`KluctlDeployment kluctl-system/shoot-flux-bootstrap: last deployment had 2 error(s): Deployment apps/web: Deployment.apps "web" is invalid: spec.template.spec.containers: Required value; Namespace apps: admission webhook denied the request`))
	})

	It("ignores a deploy result without errors", func() {
		obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", ready("True", "Success", "deployed"))
		Expect(unstructured.SetNestedField(obj.Object, map[string]any{"errors": nil, "warnings": []any{}, "totalChanges": int64(0)}, "status", "lastDeployResult")).To(Succeed())
		Expect(check(extension(kluctlStatus), obj)).To(Equal(gardencorev1beta1.ConditionTrue))
	})

	It("is progressing, not false, while kluctl deploys", func() {
		status, detail := check(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system",
			ready("Unknown", "Progressing", "Performing deploy")))
		Expect(status).To(Equal(gardencorev1beta1.ConditionProgressing))
		Expect(detail).To(ContainSubstring("Performing deploy"))
	})

	It("names the cause kluctl keeps in lastPrepareError", func() {
		obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system",
			ready("False", "PrepareFailed", "prepare failed. Check status.lastPrepareError for details"))
		Expect(unstructured.SetNestedField(obj.Object, "a target must be explicitly selected when targets are defined in the Kluctl project", "status", "lastPrepareError")).To(Succeed())
		status, detail := check(extension(kluctlStatus), obj)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(Equal("KluctlDeployment kluctl-system/shoot-flux-bootstrap is not ready (PrepareFailed): a target must be explicitly selected when targets are defined in the Kluctl project"))
	})

	It("shortens long causes", func() {
		status, detail := check(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system",
			ready("False", "PrepareFailed", strings.Repeat("x", 2000))))
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(len(detail)).To(BeNumerically("<=", 400))
		Expect(detail).To(HaveSuffix("..."))
	})

	It("is true for a ready KluctlDeployment", func() {
		Expect(check(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", ready("True", "Success", "")))).
			To(Equal(gardencorev1beta1.ConditionTrue))
	})

	It("names the commit of the last kluctl deployment while the bootstrap is not ready", func() {
		const commit = "0123456789abcdef0123456789abcdef01234567"
		obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system",
			ready("False", "PrepareFailed", strings.Repeat("x", 2000)))
		Expect(unstructured.SetNestedField(obj.Object, map[string]any{
			"gitInfo": map[string]any{"url": "ssh://git@example.com/repo", "ref": map[string]any{"branch": "main"}, "subDir": "", "commit": commit, "dirty": false},
			"errors":  []any{},
		}, "status", "lastDeployResult")).To(Succeed())
		status, detail := check(extension(kluctlStatus), obj)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(HavePrefix("KluctlDeployment kluctl-system/shoot-flux-bootstrap (last deployed commit "+commit+") is not ready (PrepareFailed): xxx"),
			"the revision survives the shortening of a long cause")
	})

	It("names the revisions Flux fetched and applied while the bootstrap is not ready", func() {
		repo := bootstrapObject("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", ready("False", "GitOperationFailed", "authentication required"))
		Expect(unstructured.SetNestedField(repo.Object, "main@sha1:1111111111111111111111111111111111111111", "status", "artifact", "revision")).To(Succeed())
		ks := bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("False", "BuildFailed", "kustomization.yaml not found"))
		Expect(unstructured.SetNestedField(ks.Object, "main@sha1:0000000000000000000000000000000000000000", "status", "lastAppliedRevision")).To(Succeed())

		_, detail := check(extension(fluxStatus), repo, ks)
		Expect(detail).To(Equal("GitRepository flux-system/shoot-flux-bootstrap (last fetched revision main@sha1:1111111111111111111111111111111111111111) is not ready (GitOperationFailed): authentication required"))

		repo = bootstrapObject("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", ready("True", "Succeeded", ""))
		_, detail = check(extension(fluxStatus), repo, ks)
		Expect(detail).To(Equal("Kustomization flux-system/shoot-flux-bootstrap (last applied revision main@sha1:0000000000000000000000000000000000000000) is not ready (BuildFailed): kustomization.yaml not found"))
	})

	It("checks GitRepository and Kustomization in flux mode", func() {
		repo := bootstrapObject("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", ready("True", "Succeeded", ""))
		ks := bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("False", "BuildFailed", "kustomization.yaml not found"))
		status, detail := check(extension(fluxStatus), repo, ks)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(ContainSubstring("Kustomization flux-system/shoot-flux-bootstrap is not ready (BuildFailed)"))

		ks = bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("True", "ReconciliationSucceeded", ""))
		Expect(check(extension(fluxStatus), repo, ks)).To(Equal(gardencorev1beta1.ConditionTrue))
	})

	It("checks the OCIRepository instead of a GitRepository for an OCI source", func() {
		ociStatus := &fluxv1alpha1.FluxStatus{Repository: "oci://ghcr.io/org/fleet", BootstrapMode: "flux"}
		repo := bootstrapObject("source.toolkit.fluxcd.io/v1", "OCIRepository", "flux-system", ready("False", "OCIArtifactPullFailed", "401 Unauthorized"))
		Expect(unstructured.SetNestedField(repo.Object, "v1@sha256:1111111111111111111111111111111111111111111111111111111111111111", "status", "artifact", "revision")).To(Succeed())
		ks := bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("True", "ReconciliationSucceeded", ""))
		status, detail := check(extension(ociStatus), repo, ks)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(Equal("OCIRepository flux-system/shoot-flux-bootstrap (last fetched revision v1@sha256:1111111111111111111111111111111111111111111111111111111111111111) is not ready (OCIArtifactPullFailed): 401 Unauthorized"))

		status, detail = check(extension(ociStatus), ks)
		Expect(status).To(Equal(gardencorev1beta1.ConditionFalse))
		Expect(detail).To(Equal("OCIRepository shoot-flux-bootstrap not found in the shoot (namespace flux-system)"))
	})

	Describe("reading the bootstrap objects", func() {
		It("reads them by name where the resource manager applied them, listing nothing", func() {
			ex := extension(kluctlStatus)
			seed := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(ex, appliedTo(
				ref("v1", "Secret", "gitops"),
				ref("kluctl.io/v1", "KluctlDeployment", "decoy"),
				ref("gitops.kluctl.io/v1beta1", "KluctlDeployment", "gitops"),
			)).Build()
			shoot := shootWithoutList(
				bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "gitops", ready("False", "PrepareFailed", "in gitops")),
				bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", ready("True", "Success", "")),
			)
			result, _, err := CheckBootstrapState(ctx, seed, shoot, request)
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Detail).To(Equal("KluctlDeployment gitops/shoot-flux-bootstrap is not ready (PrepareFailed): in gitops"))
		})

		It("reads them in the mode's default namespace before the resource manager applied them", func() {
			seed := fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(extension(fluxStatus), appliedTo()).Build()
			shoot := shootWithoutList(
				bootstrapObject("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", ready("True", "Succeeded", "")),
				bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("True", "ReconciliationSucceeded", "")),
			)
			result, _, err := CheckBootstrapState(ctx, seed, shoot, request)
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Status).To(Equal(gardencorev1beta1.ConditionTrue))
		})
	})

	It("cuts a long revision, marked, before it reaches the Extension status", func() {
		long := strings.Repeat("ü", 1000)
		obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", ready("False", "PrepareFailed", "cause"))
		Expect(unstructured.SetNestedField(obj.Object, long, "status", "lastDeployResult", "gitInfo", "commit")).To(Succeed())

		rev := newRevision(extension(kluctlStatus), obj)
		Expect(len(rev)).To(BeNumerically("<=", MaxRevisionLength))
		Expect(len(rev)).To(BeNumerically(">", MaxRevisionLength-10))
		Expect(rev).To(HavePrefix("üü"))
		Expect(rev).To(HaveSuffix("...(cut)"))
		Expect(utf8.ValidString(rev)).To(BeTrue())

		_, detail := check(extension(kluctlStatus), obj)
		Expect(detail).To(Equal("KluctlDeployment kluctl-system/shoot-flux-bootstrap (last deployed commit " + rev + ") is not ready (PrepareFailed): cause"))
	})

	Describe("the applied revision", func() {
		const (
			commit  = "0123456789abcdef0123456789abcdef01234567"
			applied = "main@sha1:" + commit
		)

		kluctlDeployed := func(conditions ...map[string]any) *unstructured.Unstructured {
			obj := bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system", conditions...)
			Expect(unstructured.SetNestedField(obj.Object, commit, "status", "lastDeployResult", "gitInfo", "commit")).To(Succeed())
			return obj
		}
		fluxApplied := func() (*unstructured.Unstructured, *unstructured.Unstructured) {
			repo := bootstrapObject("source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", ready("False", "GitOperationFailed", "authentication required"))
			Expect(unstructured.SetNestedField(repo.Object, "main@sha1:1111111111111111111111111111111111111111", "status", "artifact", "revision")).To(Succeed())
			ks := bootstrapObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", ready("True", "ReconciliationSucceeded", ""))
			Expect(unstructured.SetNestedField(ks.Object, applied, "status", "lastAppliedRevision")).To(Succeed())
			return repo, ks
		}

		It("is the commit of kluctl's last deployment, also while the bootstrap is not ready", func() {
			Expect(newRevision(extension(kluctlStatus), kluctlDeployed(ready("True", "Success", "")))).To(Equal(commit))
			Expect(newRevision(extension(kluctlStatus), kluctlDeployed(ready("False", "PrepareFailed", "x")))).To(Equal(commit))
		})

		It("is what the Kustomization applied, not what the GitRepository fetched", func() {
			repo, ks := fluxApplied()
			Expect(newRevision(extension(fluxStatus), repo, ks)).To(Equal(applied))
		})

		It("is not reported again once the providerStatus records it", func() {
			recorded := fluxStatus.DeepCopy()
			recorded.LastAppliedRevision = applied
			repo, ks := fluxApplied()
			Expect(newRevision(extension(recorded), repo, ks)).To(BeEmpty())
		})

		It("is not reported before the controller reports one, nor without a bootstrap", func() {
			Expect(newRevision(extension(kluctlStatus), bootstrapObject("gitops.kluctl.io/v1beta1", "KluctlDeployment", "kluctl-system"))).To(BeEmpty())
			Expect(newRevision(extension(&fluxv1alpha1.FluxStatus{BootstrapMode: "kluctl"}), kluctlDeployed())).To(BeEmpty())
		})
	})
})
