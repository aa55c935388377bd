// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

var _ = Describe("ValidateControllerSettings", func() {
	validate := func(s flux.ControllerSettings) []string {
		var out []string
		for _, err := range ValidateControllerSettings(s, field.NewPath("controllers", "defaults")) {
			out = append(out, err.Error())
		}
		return out
	}

	It("accepts complete settings", func() {
		Expect(validate(flux.ControllerSettings{
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
			},
			Tolerations: []corev1.Toleration{
				{Operator: corev1.TolerationOpExists},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				{Key: "dedicated", Value: "gitops", Effect: corev1.TaintEffectNoSchedule},
			},
			NodeSelector:      map[string]string{"worker.gardener.cloud/pool": "system"},
			PriorityClassName: "system-cluster-critical",
			Concurrent:        ptr.To[int32](MaxConcurrent),
		})).To(BeEmpty())
	})

	It("rejects what the API server would refuse, naming the field", func() {
		Expect(validate(flux.ControllerSettings{
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")},
				Claims:   []corev1.ResourceClaim{{Name: "gpu"}},
			},
			Tolerations: []corev1.Toleration{
				{Operator: corev1.TolerationOpEqual, Value: "x"},
				{Key: "a", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](5)},
				{Key: "-bad-", Operator: corev1.TolerationOpExists},
			},
			Concurrent: ptr.To[int32](0),
		})).To(ConsistOf(
			`controllers.defaults.resources.claims: Forbidden: resource claims are not supported for the controllers`,
			`controllers.defaults.resources.requests.cpu: Invalid value: "-1": must not be negative`,
			`controllers.defaults.tolerations[0].operator: Invalid value: "Equal": must be Exists when key is empty, which matches all taints`,
			`controllers.defaults.tolerations[1].tolerationSeconds: Invalid value: 5: may only be set with effect NoExecute`,
			ContainSubstring(`controllers.defaults.tolerations[2].key: Invalid value: "-bad-": name part must consist of alphanumeric characters`),
			`controllers.defaults.concurrent: Invalid value: 0: must be between 1 and 100`,
		))
	})
})
