// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"os"
	"path/filepath"

	seedidentity "github.com/gardener/gardener/pkg/admissioncontroller/gardenletidentity/seed"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// gardenRBACFile holds everything an operator applies to the garden for the extension.
const gardenRBACFile = sandbox.GardenRBACFile

// exampleGardenAccess is the extension's access to the garden as gardener sets it up, with
// example/garden-rbac.yaml applied.
type exampleGardenAccess struct {
	// garden is the extension's garden client, built from the generic kubeconfig like the
	// extension builds it.
	garden client.WithWatch
	// objects are the applied objects of gardenRBACFile.
	objects []*unstructured.Unstructured
	// clusterRole is the ClusterRole among them.
	clusterRole *rbacv1.ClusterRole
}

// grantExampleGardenAccess runs the chain from the chart's garden access Secret to the extension's
// permissions in the garden with gardener's own controllers, against the one API server of the suite
// that plays seed and garden: it applies example/garden-rbac.yaml, gardenlet's token requestor
// creates the ServiceAccount and its token, gardener-controller-manager's extension ClusterRole
// reconciler binds the ClusterRole to it, and the extension's kubeconfig loader reads the token like
// from gardenlet's generic kubeconfig. Call it in BeforeAll; the objects are removed after the
// container.
func grantExampleGardenAccess(ctx SpecContext) *exampleGardenAccess {
	GinkgoHelper()
	access := &exampleGardenAccess{objects: exampleObjects(gardenRBACFile)}
	extensionNS := createNamespace(ctx, "extension-shoot-flux")
	// The seed's garden namespace outlives a container: envtest runs no namespace controller.
	seedNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sandbox.GardenAccessNamespace}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, seedNS))).To(Succeed())

	for _, o := range access.objects {
		obj := o.DeepCopy()
		Expect(k8s.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, obj)).To(Succeed()) })
	}
	access.clusterRole = typed[rbacv1.ClusterRole](find(access.objects, "ClusterRole", "gardener.cloud:extension:shoot-flux"))

	accessSecret := typed[corev1.Secret](find(mustRender(extensionNS, gardenletValues()), "Secret", "garden-access-shoot-flux"))
	Expect(k8s.Create(ctx, accessSecret)).To(Succeed())

	// gardenlet's token requestor and gardener-controller-manager's extension ClusterRole
	// reconciler, with the one API server as seed and garden.
	token, _, err := sandbox.GrantGardenAccess(ctx, k8s, k8s, client.ObjectKeyFromObject(accessSecret), []string{access.clusterRole.Name})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: access.clusterRole.Name}}))).To(Succeed())
	})

	// The generic kubeconfig gardenlet writes: server and CA of the garden, the token as file
	// next to it (the projected volume of the chart).
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "token"), token, 0o600)).To(Succeed())
	kubeconfig, err := sandbox.GenericGardenKubeconfig(restCfg, filepath.Join(dir, "token"))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "kubeconfig"), kubeconfig, 0o600)).To(Succeed())
	cfg, err := fluxcmd.RESTConfigFromKubeconfig(filepath.Join(dir, "kubeconfig"))
	Expect(err).NotTo(HaveOccurred())
	access.garden, err = client.NewWithWatch(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return access
}

// The identity the chart's garden access Secret leads to. What it may do is the permission matrix
// in garden_rbac_test.go.
var _ = Describe("dedicated garden access", Ordered, func() {
	const seedNamespace = sandbox.GardenAccessNamespace

	var access *exampleGardenAccess

	BeforeAll(func(ctx SpecContext) {
		access = grantExampleGardenAccess(ctx)
	})

	It("binds the example ClusterRole to the ServiceAccount the chart asks for", func(ctx SpecContext) {
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, sa)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: access.clusterRole.Name}, binding)).To(Succeed())
		Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: seedNamespace}))
	})

	It("is not the seed identity that gardener's SeedRestriction admission confines", func(ctx SpecContext) {
		review := &authenticationv1.SelfSubjectReview{}
		Expect(access.garden.Create(ctx, review)).To(Succeed())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + seedNamespace + ":shoot-flux"))
		_, isSeed, _ := seedidentity.FromAuthenticationV1UserInfo(review.Status.UserInfo)
		Expect(isSeed).To(BeFalse())
	})
})
