// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"strings"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

var _ = Describe("Tuning", func() {
	var (
		r        *renderer
		settings flux.ControllerSettings
	)

	BeforeEach(func() {
		r = newRenderer(fluximagevector.ImageVector())
		settings = flux.ControllerSettings{
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gitops", Effect: corev1.TaintEffectNoSchedule}},
			NodeSelector:      map[string]string{"worker.gardener.cloud/pool": "system"},
			PriorityClassName: "system-cluster-critical",
			Concurrent:        ptr.To[int32](10),
		}
	})

	renderFlux := func(tuning Tuning) (map[string]*appsv1.Deployment, []byte) {
		GinkgoHelper()
		data, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: []string{SourceController, KustomizeController}, Namespace: "flux-system", Tuning: tuning})
		Expect(err).NotTo(HaveOccurred())
		return deployments(parseObjects(data)), data
	}

	expectTuned := func(d *appsv1.Deployment, flag string) {
		GinkgoHelper()
		spec := d.Spec.Template.Spec
		Expect(spec.Containers).To(HaveLen(1))
		Expect(spec.Containers[0].Resources).To(Equal(*settings.Resources), "the resources replace upstream's as a whole")
		Expect(spec.Tolerations).To(Equal(settings.Tolerations))
		Expect(spec.NodeSelector).To(Equal(map[string]string{"kubernetes.io/os": "linux", "worker.gardener.cloud/pool": "system"}), "the node selector adds to upstream's")
		Expect(spec.PriorityClassName).To(Equal("system-cluster-critical"))
		Expect(spec.Containers[0].Args).To(ContainElement(flag + "=10"))
		Expect(spec.Containers[0].Args).To(HaveEach(Not(HavePrefix(flag+"=4"))), "the flag is replaced, not repeated")
	}

	It("sets the settings of the controller named by the key and leaves the others as rendered", func() {
		untuned, _ := renderFlux(Tuning{})
		tuned, _ := renderFlux(Tuning{Controllers: map[string]flux.ControllerSettings{SourceController: settings}})

		expectTuned(tuned[SourceController], "--concurrent")
		Expect(tuned[KustomizeController]).To(Equal(untuned[KustomizeController]))

		By("keeping everything else of the tuned Deployment as rendered")
		changed := tuned[SourceController].DeepCopy()
		changed.Spec.Template.Spec = untuned[SourceController].Spec.Template.Spec
		Expect(changed).To(Equal(untuned[SourceController]))
		Expect(tuned[SourceController].Spec.Template.Spec.Containers[0].Image).To(Equal(untuned[SourceController].Spec.Template.Spec.Containers[0].Image))
		Expect(tuned[SourceController].Spec.Template.Spec.Containers[0].VolumeMounts).To(Equal(untuned[SourceController].Spec.Template.Spec.Containers[0].VolumeMounts))
	})

	It("passes a concurrency to Flux once, replacing an earlier value", func() {
		Expect(setFlag([]string{"--concurrent=4", "--log-level=info", "--concurrent", "6"}, "--concurrent", "10")).
			To(Equal([]string{"--log-level=info", "--concurrent=10"}))
	})

	It("tunes the kluctl controller with its own concurrency flag", func() {
		data, err := r.renderKluctl(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system", Tuning: Tuning{Controllers: map[string]flux.ControllerSettings{KluctlComponent: settings}}})
		Expect(err).NotTo(HaveOccurred())
		d := deployments(parseObjects(data))[KluctlComponent]
		expectTuned(d, "--concurrency")
		Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--leader-elect"))
	})

	It("delivers the image pull secret into the namespace and names it in every pod", func() {
		pull := []byte(`{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`)
		tuned, data := renderFlux(Tuning{ImagePullSecret: pull})
		for name, d := range tuned {
			Expect(d.Spec.Template.Spec.ImagePullSecrets).To(ConsistOf(corev1.LocalObjectReference{Name: constants.ImagePullSecretName}), name)
		}
		secrets := objectsOfKind(parseObjects(data), "Secret")
		Expect(secrets).To(HaveKey(constants.ImagePullSecretName))
		secret := &corev1.Secret{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(secrets[constants.ImagePullSecretName].Object, secret)).To(Succeed())
		Expect(secret.Namespace).To(Equal("flux-system"))
		Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
		Expect(secret.Data).To(Equal(map[string][]byte{corev1.DockerConfigJsonKey: pull}))
	})

	It("shares the untuned render and does not modify it", func() {
		opts := FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"}
		before, err := r.renderFlux(opts)
		Expect(err).NotTo(HaveOccurred())
		snapshot := string(before)
		opts.Tuning = Tuning{Controllers: map[string]flux.ControllerSettings{SourceController: settings}}
		tuned, err := r.renderFlux(opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(tuned)).NotTo(Equal(snapshot))
		Expect(string(before)).To(Equal(snapshot))
		again, err := r.renderFlux(opts)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(Equal(tuned))
	})

	// A tuned render is as large as the base (every CRD again): cached per distinct setting, 200
	// tenants' settings filled the whole cache with copies of the same CRDs.
	It("keeps only the base render in the cache, however many distinct settings are rendered", func() {
		opts := FluxOptions{Version: newestFlux, Components: []string{SourceController}, Namespace: "flux-system"}
		_, err := r.renderFlux(opts)
		Expect(err).NotTo(HaveOccurred())
		entries, size := r.cache.Len(), r.cache.Bytes()
		for i := range 5 {
			s := settings
			s.NodeSelector = map[string]string{"pool": strings.Repeat("x", i+1)}
			opts.Tuning = Tuning{Controllers: map[string]flux.ControllerSettings{SourceController: s}}
			_, err := r.renderFlux(opts)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(r.cache.Len()).To(Equal(entries))
		Expect(r.cache.Bytes()).To(Equal(size))
	})
})
