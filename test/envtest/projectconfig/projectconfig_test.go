// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package projectconfig_test

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

var _ = Describe("The project ConfigMap watches", func() {
	It("enqueue the shoot-flux Extensions of all shoots of a project whose ConfigMap changes, and nothing of another project", func() {
		foo, bar := newProject(), newProject()
		fooConfig := foo.configMap(map[string]string{"repositoryUrl": "https://git.example.com/org/foo.git"})
		barConfig := bar.configMap(map[string]string{"repositoryUrl": "https://git.example.com/org/bar.git"})
		// Built from the current data: the start enqueues none of them.
		fooA, fooB := foo.shoot("a", fluxconfig.ConfigMapHash(fooConfig)), foo.shoot("b", fluxconfig.ConfigMapHash(fooConfig))
		barA := bar.shoot("a", fluxconfig.ConfigMapHash(barConfig))
		rec := startController()

		By("another ConfigMap of the project changes")
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: foo.namespace}, Data: map[string]string{"repositoryUrl": "x"}}
		Expect(api.Client.Create(ctx, other)).To(Succeed())
		Consistently(rec.Reconciled).WithTimeout(3*window).ShouldNot(ContainElement(fooA), "only ConfigMaps flux-config are watched")

		By("the project's ConfigMap changes")
		fooConfig.Data["repositoryUrl"] = "https://git.example.com/org/foo-moved.git"
		Expect(api.Client.Update(ctx, fooConfig)).To(Succeed())
		Eventually(rec.Reconciled).WithTimeout(timeout).Should(ContainElements(fooA, fooB))
		// The lookup that enqueued them found all there is.
		Consistently(rec.Reconciled).WithTimeout(3*window).ShouldNot(ContainElement(BeElementOf(barA, foo.otherExtension("a"))),
			"neither another project's shoots nor Extensions of another type")
	})

	It("enqueue the project's Extensions when its ConfigMap is deleted, and those of a shoot created while running", func() {
		foo := newProject()
		fooConfig := foo.configMap(map[string]string{"repositoryUrl": "https://git.example.com/org/foo.git"})
		fooA := foo.shoot("a", fluxconfig.ConfigMapHash(fooConfig))
		rec := startController()
		fooB := foo.shoot("b", fluxconfig.ConfigMapHash(fooConfig))

		Expect(api.Client.Delete(ctx, fooConfig)).To(Succeed())
		Eventually(rec.Reconciled).WithTimeout(timeout).Should(ContainElements(fooA, fooB))
	})

	It("enqueue at the start only the Extensions built from other ConfigMap data than the current", func() {
		foo := newProject()
		fooConfig := foo.configMap(map[string]string{"repositoryUrl": "https://git.example.com/org/foo.git"})
		current := foo.shoot("current", fluxconfig.ConfigMapHash(fooConfig))
		old := foo.shoot("old", fluxconfig.ConfigMapHash(&corev1.ConfigMap{Data: map[string]string{"repositoryUrl": "https://git.example.com/org/old.git"}}))
		unknown := foo.shoot("unknown", outdated)
		rec := startController()

		Eventually(rec.Reconciled).WithTimeout(timeout).Should(ContainElements(old, unknown))
		Consistently(rec.Reconciled).WithTimeout(3*window).ShouldNot(ContainElement(current), "built from the current data")
	})

	It("enqueue at the start the Extensions whose project ConfigMap was deleted while the extension was down", func() {
		foo := newProject()
		// Built from a ConfigMap that no longer exists.
		deleted := foo.shoot("deleted", "3f1c")
		// Never built from one: nothing changed for it.
		never := foo.shoot("never", outdated)
		rec := startController()

		Eventually(rec.Reconciled).WithTimeout(timeout).Should(ContainElement(deleted))
		Consistently(rec.Reconciled).WithTimeout(3 * window).ShouldNot(ContainElement(never))
	})
})

// outdated is the recorded hash of an Extension without providerStatus.
const outdated = "-"

// projects counts the projects of the suite, for unique names.
var projects atomic.Int32

// project is a project of the garden, with its shoots in the seed.
type project struct {
	name, namespace string
}

// newProject creates a project namespace in the garden.
func newProject() *project {
	GinkgoHelper()
	name := fmt.Sprintf("p%d", projects.Add(1))
	p := &project{name: name, namespace: "garden-" + name}
	Expect(api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.namespace}})).To(Succeed())
	return p
}

// configMap creates the project's ConfigMap flux-config.
func (p *project) configMap(data map[string]string) *corev1.ConfigMap {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: p.namespace}, Data: data}
	Expect(api.Client.Create(ctx, cm)).To(Succeed())
	return cm
}

// seedNamespace is the seed namespace of the project's shoot.
func (p *project) seedNamespace(shoot string) string {
	return "shoot--" + p.name + "--" + shoot
}

// shoot creates a shoot of the project in the seed as gardenlet does (seed namespace, Cluster)
// with a shoot-flux Extension, whose providerStatus records the ConfigMap hash (outdated: no
// providerStatus), and an Extension of another type. It returns the shoot-flux Extension's key.
func (p *project) shoot(name, recordedHash string) string {
	GinkgoHelper()
	namespace := p.seedNamespace(name)
	Expect(api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	raw := func(o any) runtime.RawExtension {
		b, err := json.Marshal(o)
		Expect(err).NotTo(HaveOccurred())
		return runtime.RawExtension{Raw: b}
	}
	shoot := &gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.namespace},
		Spec:       gardencorev1beta1.ShootSpec{Extensions: []gardencorev1beta1.Extension{{Type: constants.ExtensionType}}},
	}
	Expect(api.Client.Create(ctx, &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			Shoot:        raw(shoot),
			CloudProfile: raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"}),
			Seed:         ptr.To(raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"})),
		},
	})).To(Succeed())

	for _, typ := range []string{constants.ExtensionType, "other"} {
		ex := &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: typ, Namespace: namespace},
			Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: typ}},
		}
		Expect(api.Client.Create(ctx, ex)).To(Succeed())
		if typ != constants.ExtensionType || recordedHash == outdated {
			continue
		}
		status, err := helper.EncodeStatus(&fluxv1alpha1.FluxStatus{ProjectConfigHash: recordedHash})
		Expect(err).NotTo(HaveOccurred())
		ex.Status.ProviderStatus = status
		Expect(api.Client.Status().Update(ctx, ex)).To(Succeed())
	}
	return namespace + "/" + constants.ExtensionType
}

// otherExtension returns the key of the Extension of another type of the project's shoot.
func (p *project) otherExtension(shoot string) string {
	return p.seedNamespace(shoot) + "/other"
}
