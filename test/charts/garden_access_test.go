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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// The chain from the chart's garden access Secret to the extension's permissions in the garden,
// run with gardener's own controllers against one API server that plays seed and garden:
// gardenlet's token requestor creates the ServiceAccount and its token, gardener-controller-manager's
// extension ClusterRole reconciler binds example/garden-rbac.yaml to it, and the extension's
// kubeconfig loader reads the token like from gardenlet's generic kubeconfig.
var _ = Describe("dedicated garden access", Ordered, func() {
	const seedNamespace = sandbox.GardenAccessNamespace

	var (
		garden      client.Client
		clusterRole *rbacv1.ClusterRole
		projectNS   string
	)

	BeforeAll(func(ctx SpecContext) {
		extensionNS := createNamespace(ctx, "extension-shoot-flux")
		projectNS = createNamespace(ctx, "garden-local")
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}})).To(Succeed())

		objs := exampleObjects("example/garden-rbac.yaml")
		clusterRole = typed[rbacv1.ClusterRole](objs[0])
		Expect(k8s.Create(ctx, clusterRole)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8s.Delete(ctx, clusterRole)).To(Succeed()) })

		accessSecret := typed[corev1.Secret](find(mustRender(extensionNS, gardenletValues()), "Secret", "garden-access-shoot-flux"))
		Expect(k8s.Create(ctx, accessSecret)).To(Succeed())

		// gardenlet's token requestor and gardener-controller-manager's extension ClusterRole
		// reconciler, with the one API server as seed and garden.
		token, _, err := sandbox.GrantGardenAccess(ctx, k8s, k8s, client.ObjectKeyFromObject(accessSecret), []string{clusterRole.Name})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole.Name}}))).To(Succeed())
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
		garden, err = client.New(cfg, client.Options{})
		Expect(err).NotTo(HaveOccurred())
	})

	It("binds the example ClusterRole to the ServiceAccount the chart asks for", func(ctx SpecContext) {
		sa := &corev1.ServiceAccount{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, sa)).To(Succeed())
		binding := &rbacv1.ClusterRoleBinding{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: clusterRole.Name}, binding)).To(Succeed())
		Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: seedNamespace}))
	})

	It("is not the seed identity that gardener's SeedRestriction admission confines", func(ctx SpecContext) {
		review := &authenticationv1.SelfSubjectReview{}
		Expect(garden.Create(ctx, review)).To(Succeed())
		Expect(review.Status.UserInfo.Username).To(Equal("system:serviceaccount:" + seedNamespace + ":shoot-flux"))
		_, isSeed, _ := seedidentity.FromAuthenticationV1UserInfo(review.Status.UserInfo)
		Expect(isSeed).To(BeFalse())
	})

	It("keeps deploy key Secrets in project namespaces", func(ctx SpecContext) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: constants.DeployKeysSecretName, Namespace: projectNS}}
		Expect(garden.Create(ctx, secret)).To(Succeed())
		Expect(garden.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		secret.Annotations = map[string]string{constants.AnnotationRotate: "true"}
		Expect(garden.Update(ctx, secret)).To(Succeed())
		Expect(garden.Delete(ctx, secret)).To(Succeed())
	})

	It("reads the project ConfigMaps flux-config across namespaces, no other ConfigMap, and changes none", func(ctx SpecContext) {
		byName := client.MatchingFields{"metadata.name": constants.ProjectConfigMapName}
		Expect(garden.List(ctx, &corev1.ConfigMapList{}, byName)).To(Succeed())
		Expect(garden.List(ctx, &corev1.ConfigMapList{}, byName, client.InNamespace(projectNS))).To(Succeed())
		Expect(garden.List(ctx, &corev1.ConfigMapList{})).To(Satisfy(apierrors.IsForbidden))
		Expect(garden.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(projectNS))).To(Satisfy(apierrors.IsForbidden))

		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cloud-settings", Namespace: projectNS}}
		Expect(k8s.Create(ctx, other)).To(Succeed())
		Expect(garden.Get(ctx, client.ObjectKeyFromObject(other), &corev1.ConfigMap{})).To(Satisfy(apierrors.IsForbidden))

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: projectNS}}
		Expect(garden.Create(ctx, cm)).To(Satisfy(apierrors.IsForbidden))
		Expect(k8s.Create(ctx, cm)).To(Succeed())
		Expect(garden.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
		cm.Data = map[string]string{"repositoryUrl": "https://example.com/x.git"}
		Expect(garden.Update(ctx, cm)).To(Satisfy(apierrors.IsForbidden))
	})

	It("does not patch deploy key Secrets", func(ctx SpecContext) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: constants.DeployKeysSecretName, Namespace: projectNS}}
		Expect(garden.Create(ctx, secret)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(garden.Delete(ctx, secret))).To(Succeed()) })
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Annotations = map[string]string{constants.AnnotationRotate: "true"}
		Expect(garden.Patch(ctx, secret, patch)).To(Satisfy(apierrors.IsForbidden))
	})

	It("cannot list Secrets", func(ctx SpecContext) {
		Expect(garden.List(ctx, &corev1.SecretList{}, client.InNamespace(projectNS))).To(Satisfy(apierrors.IsForbidden))
	})
})
