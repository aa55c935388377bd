// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

var _ = Describe("Controller settings", func() {
	operator := func() Defaults {
		d := defaults
		d.Controllers = map[string]v1alpha1.ControllerSettings{
			"defaults": {
				PriorityClassName: ptr.To("operator-class"),
				NodeSelector:      map[string]string{"pool": "system"},
			},
			"source-controller": {
				Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			},
		}
		return d
	}

	It("applies the defaults to every controller and merges the layers per key and field", func() {
		cm := configMap(map[string]string{"config.yaml": `
controllers:
  defaults:
    concurrent: 8
  kluctl-controller:
    tolerations: [{key: dedicated, operator: Exists}]
`})
		cfg, err := Resolve(operator(), supported, sshkey.DefaultKnownHostsLimits(), cm, raw(`{"controllers":{"source-controller":{"concurrent":2,"resources":{"requests":{"cpu":"200m"}}},"defaults":{"nodeSelector":{"pool":"gitops"}}}}`))
		Expect(err).NotTo(HaveOccurred())

		Expect(cfg.Controllers).To(HaveLen(5), "every controller gets the defaults")
		Expect(cfg.Controllers).NotTo(HaveKey("defaults"))
		Expect(cfg.Controllers["source-controller"]).To(Equal(flux.ControllerSettings{
			// The providerConfig's resources replace the operator's as a whole.
			Resources:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
			NodeSelector:      map[string]string{"pool": "gitops"},
			PriorityClassName: "operator-class",
			Concurrent:        ptr.To[int32](2),
		}))
		Expect(cfg.Controllers["kluctl-controller"]).To(Equal(flux.ControllerSettings{
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			NodeSelector:      map[string]string{"pool": "gitops"},
			PriorityClassName: "operator-class",
			Concurrent:        ptr.To[int32](8),
		}))
	})

	It("has no settings without any layer setting them", func() {
		cfg, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers).To(BeNil())
	})

	It("sets only the controllers named when there are no defaults", func() {
		cfg, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(`{"controllers":{"helm-controller":{"concurrent":6}}}`))
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Controllers).To(Equal(map[string]flux.ControllerSettings{"helm-controller": {Concurrent: ptr.To[int32](6)}}))
	})

	It("names the layer and the field as written", func() {
		_, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), configMap(map[string]string{"config.yaml": `{"controllers":{"defaults":{"priorityClassName":"Not_A_Name"}}}`}), raw(`{"controllers":{
			"source-controller":{"concurrent":0,"resources":{"requests":{"memory":"2Gi","nvidia.com/gpu":"1"},"limits":{"memory":"1Gi"}}},
			"kluctl-controller":{"tolerations":[{"key":"a","operator":"Gt","value":"1"},{"operator":"Exists","value":"x","effect":"NoRun"}],"nodeSelector":{"bad key!":"x"}},
			"image-automation-controller":{},
			"helm-controller":{"concurrent":1000,"priorityClassName":""}}}`))
		Expect(problems(err)).To(ConsistOf(
			`ConfigMap garden-foo/flux-config: config.yaml: controllers.defaults.priorityClassName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`Extension providerConfig: controllers.source-controller.concurrent: Invalid value: 0: must be between 1 and 100`,
			`Extension providerConfig: controllers.source-controller.resources.requests.nvidia.com/gpu: Unsupported value: "nvidia.com/gpu": supported values: "cpu", "memory", "ephemeral-storage"`,
			`Extension providerConfig: controllers.source-controller.resources.requests.memory: Invalid value: "2Gi": must be less than or equal to the limit 1Gi`,
			`Extension providerConfig: controllers.kluctl-controller.tolerations[0].operator: Unsupported value: "Gt": supported values: "Exists", "Equal"`,
			`Extension providerConfig: controllers.kluctl-controller.tolerations[1].value: Invalid value: "x": must be empty when operator is Exists`,
			`Extension providerConfig: controllers.kluctl-controller.tolerations[1].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
			`Extension providerConfig: controllers.kluctl-controller.nodeSelector: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`Extension providerConfig: controllers.image-automation-controller: Unsupported value: "image-automation-controller": supported values: "defaults", "source-controller", "kustomize-controller", "helm-controller", "notification-controller", "kluctl-controller"`,
			`Extension providerConfig: controllers.helm-controller.concurrent: Invalid value: 1000: must be between 1 and 100`,
			`Extension providerConfig: controllers.helm-controller.priorityClassName: Required value: must not be empty if set`,
		))
	})

	It("names the field of a quantity that does not parse", func() {
		_, err := Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, raw(`{"controllers":{"defaults":{"resources":{"limits":{"memory":"lots"}}}}}`))
		Expect(err).To(MatchError(`Extension providerConfig: controllers.defaults.resources.limits.memory: Invalid value: "lots": must be a quantity, e.g. 100m or 1Gi`))
	})

	It("names the operator's configuration for its settings", func() {
		d := defaults
		d.Controllers = map[string]v1alpha1.ControllerSettings{"defaults": {Concurrent: ptr.To[int32](-1)}}
		_, err := Resolve(d, supported, sshkey.DefaultKnownHostsLimits(), nil, nil)
		Expect(err).To(MatchError(`controller configuration: controllers.defaults.concurrent: Invalid value: -1: must be between 1 and 100`))
	})
})
