// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	kluctlcontroller "github.com/kluctl/kluctl/v2/install/controller"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/modfile"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

var _ = Describe("RenderKluctl", func() {
	var r *renderer

	BeforeEach(func() {
		r = newRenderer(fluximagevector.ImageVector())
	})

	render := func(opts KluctlOptions) []byte {
		GinkgoHelper()
		data, err := r.renderKluctl(opts)
		Expect(err).NotTo(HaveOccurred())
		return data
	}

	It("renders the CRD, RBAC and a hardened deployment into the namespace", func() {
		objects := parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "gitops"}))
		Expect(objects[0].GetKind()).To(Equal("Namespace"))
		Expect(objects[0].GetName()).To(Equal("gitops"))

		crds := objectsOfKind(objects, "CustomResourceDefinition")
		Expect(crds).To(HaveKey("kluctldeployments.gitops.kluctl.io"))
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(crds["kluctldeployments.gitops.kluctl.io"].Object, crd)).To(Succeed())
		Expect(crd.Spec.Versions).To(ContainElement(And(
			HaveField("Name", "v1beta1"), HaveField("Served", true), HaveField("Storage", true))))

		Expect(objectsOfKind(objects, "ServiceAccount")).To(HaveKey("kluctl-controller"))
		for _, obj := range objects {
			switch obj.GetKind() {
			case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding":
				Expect(obj.GetNamespace()).To(BeEmpty(), "%s %s", obj.GetKind(), obj.GetName())
			default:
				Expect(obj.GetNamespace()).To(Equal("gitops"), "%s %s", obj.GetKind(), obj.GetName())
			}
		}

		bindings := objectsOfKind(objects, "ClusterRoleBinding")
		Expect(bindings).To(HaveKey("kluctl-controller-cluster-admin"))
		binding := &rbacv1.ClusterRoleBinding{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(bindings["kluctl-controller-cluster-admin"].Object, binding)).To(Succeed())
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}))
		Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kluctl-controller", Namespace: "gitops"}))

		roleBindings := objectsOfKind(objects, "RoleBinding")
		Expect(roleBindings).To(HaveKey("kluctl-controller-leader-election-rolebinding"))
		roleBinding := &rbacv1.RoleBinding{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(roleBindings["kluctl-controller-leader-election-rolebinding"].Object, roleBinding)).To(Succeed())
		Expect(roleBinding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kluctl-controller", Namespace: "gitops"}))

		deploys := deployments(objects)
		Expect(deploys).To(HaveLen(1))
		deployment := deploys["kluctl-controller"]
		Expect(deployment.Namespace).To(Equal("gitops"))
		spec := deployment.Spec.Template.Spec
		Expect(spec.ServiceAccountName).To(Equal("kluctl-controller"))
		Expect(spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(spec.Containers).To(HaveLen(1))
		container := spec.Containers[0]

		image, err := r.imageVector.FindImage(fluximagevector.KluctlController, gardenerimagevector.TargetVersion(newestKluctl))
		Expect(err).NotTo(HaveOccurred())
		Expect(container.Image).To(Equal(image.String()))
		Expect(append(container.Command, container.Args...)).To(Equal([]string{"tini", "--", "kluctl", "controller", "run", "--leader-elect"}))
		Expect(container.LivenessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8081)}))
		Expect(container.ReadinessProbe.HTTPGet).To(Equal(&corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}))
		Expect(container.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("256Mi")))
		Expect(container.Resources.Limits).To(HaveKeyWithValue(corev1.ResourceMemory, resource.MustParse("1Gi")))
		Expect(container.SecurityContext).To(Equal(&corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}))
		Expect(container.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"}))
		Expect(spec.Volumes).To(ContainElement(corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
		Expect(container.Env).To(ContainElement(corev1.EnvVar{Name: "HOME", Value: "/tmp"}))
		Expect(deployment.Spec.Template.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/default-container", container.Name))
		Expect(container.Env).NotTo(ContainElement(HaveField("Name", EnvDisableStrictHostKeyChecking)))

		By("bringing its own known_hosts file, which kluctl's git client needs whatever the image ships")
		Expect(container.Env).To(ContainElement(corev1.EnvVar{Name: "SSH_KNOWN_HOSTS", Value: "/etc/shoot-flux/ssh/ssh_known_hosts"}))
		Expect(container.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "ssh-known-hosts", MountPath: "/etc/shoot-flux/ssh", ReadOnly: true}))
		Expect(spec.Volumes).To(ContainElement(corev1.Volume{Name: "ssh-known-hosts", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kluctl-ssh-known-hosts"}},
		}}))
		configMaps := objectsOfKind(objects, "ConfigMap")
		Expect(configMaps).To(HaveKey("kluctl-ssh-known-hosts"))
		Expect(configMaps["kluctl-ssh-known-hosts"].Object).To(HaveKeyWithValue("data", HaveKeyWithValue("ssh_known_hosts", "")))
	})

	It("keeps the CRD and the namespace when the extension is disabled", func() {
		expectKeptOnDisable(parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "gitops"})))
	})

	It("lets the controller skip host key checking only when asked to", func() {
		objects := parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "gitops", DisableStrictHostKeyChecking: true}))
		container := deployments(objects)["kluctl-controller"].Spec.Template.Spec.Containers[0]
		Expect(container.Env).To(ContainElement(corev1.EnvVar{Name: EnvDisableStrictHostKeyChecking, Value: "true"}))
		secure := parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "gitops"}))
		Expect(deployments(secure)["kluctl-controller"].Spec.Template.Spec.Containers[0].Env).NotTo(ContainElement(HaveField("Name", EnvDisableStrictHostKeyChecking)))
	})

	It("moves the image to the override registry and follows IMAGEVECTOR_OVERWRITE", func() {
		setImageVectorOverwrite(`images:
- name: kluctl-controller
  repository: registry.example.com/kluctl/kluctl
  targetVersion: "= ` + strings.TrimPrefix(newestKluctl, "v") + `"
`)
		vector, err := fluximagevector.Load()
		Expect(err).NotTo(HaveOccurred())
		r = newRenderer(vector)

		deployment := deployments(parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system"})))["kluctl-controller"]
		Expect(containerImages(deployment)).To(ConsistOf("registry.example.com/kluctl/kluctl:" + newestKluctl))

		deployment = deployments(parseObjects(render(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system", Registry: "my.mirror"})))["kluctl-controller"]
		Expect(containerImages(deployment)).To(ConsistOf("my.mirror/kluctl/kluctl:" + newestKluctl))
	})

	It("returns the cached bytes for the same options", func() {
		first := render(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system"})
		second := render(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system"})
		Expect(&second[0]).To(BeIdenticalTo(&first[0]))
		Expect(render(KluctlOptions{Version: newestKluctl, Namespace: "other"})).NotTo(Equal(first))
	})

	// Tenants choose namespaces freely; memory must not grow with every new one.
	It("keeps only the most recently used renders", func() {
		const maxEntries = 8
		r = &renderer{imageVector: fluximagevector.ImageVector(), cache: rendercache.New(maxEntries, rendercache.DefaultMaxBytes)}
		first := render(KluctlOptions{Version: newestKluctl, Namespace: "tenant-0"})
		for i := 1; i <= maxEntries+10; i++ {
			render(KluctlOptions{Version: newestKluctl, Namespace: fmt.Sprintf("tenant-%d", i)})
			Expect(r.cache.Len()).To(BeNumerically("<=", maxEntries))
		}
		recent := fmt.Sprintf("tenant-%d", maxEntries+10)
		again := render(KluctlOptions{Version: newestKluctl, Namespace: recent})
		Expect(&again[0]).To(BeIdenticalTo(&render(KluctlOptions{Version: newestKluctl, Namespace: recent})[0]))
		evicted := render(KluctlOptions{Version: newestKluctl, Namespace: "tenant-0"})
		Expect(evicted).To(Equal(first), "a dropped render is rendered again, the same")
		Expect(&evicted[0]).NotTo(BeIdenticalTo(&first[0]))
	})

	It("keeps no more bytes than the cache's bound", func() {
		size := int64(len(render(KluctlOptions{Version: newestKluctl, Namespace: "tenant-0"})))
		r = &renderer{imageVector: fluximagevector.ImageVector(), cache: rendercache.New(rendercache.DefaultMaxEntries, 3*size+size/2)}
		for i := range 10 {
			render(KluctlOptions{Version: newestKluctl, Namespace: fmt.Sprintf("tenant-%d", i)})
			Expect(r.cache.Bytes()).To(BeNumerically("<=", 3*size+size/2))
		}
		Expect(r.cache.Len()).To(Equal(3))
	})

	It("rejects unsupported versions, listing the supported ones", func() {
		_, err := r.renderKluctl(KluctlOptions{Version: "v2.0.0", Namespace: "kluctl-system"})
		Expect(err).To(MatchError(`unsupported kluctl version "v2.0.0", supported: ` + strings.Join(KluctlVersions(), ", ")))
	})

	It("embeds the controller project of the kluctl module the extension is built with unchanged", func() {
		// Test binaries carry no dependency versions, so go.mod tells which module is compiled in.
		goMod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
		Expect(err).NotTo(HaveOccurred())
		mod, err := modfile.ParseLax("go.mod", goMod, nil)
		Expect(err).NotTo(HaveOccurred())
		var version string
		for _, req := range mod.Require {
			if req.Mod.Path == "github.com/kluctl/kluctl/v2" {
				version = req.Mod.Version
			}
		}
		Expect(KluctlVersions()).To(ContainElement(version))

		for _, name := range []string{"crd.yaml", "manager.yaml", "rbac.yaml"} {
			upstream, err := fs.ReadFile(kluctlcontroller.Project, path.Join("controller", name))
			Expect(err).NotTo(HaveOccurred())
			ours, err := embedded.ReadFile(path.Join("kluctl", version, name))
			Expect(err).NotTo(HaveOccurred())
			// The generator only prepends its comment lines.
			Expect(bytes.HasSuffix(ours, upstream)).To(BeTrue(), name)
			Expect(strings.Split(strings.TrimSpace(string(ours[:len(ours)-len(upstream)])), "\n")).To(HaveEach(HavePrefix("# ")), name)
		}
	})
})
