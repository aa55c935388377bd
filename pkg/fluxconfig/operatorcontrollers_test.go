// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

var _ = Describe("OperatorControllers", func() {
	settings := config.ControllerSettings{
		Resources:         &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		NodeSelector:      map[string]string{"pool": "gitops"},
		PriorityClassName: ptr.To("system-cluster-critical"),
		Concurrent:        ptr.To[int32](8),
	}

	It("hands every field over as the lowest layer", func() {
		Expect(OperatorControllers(nil)).To(BeNil())
		Expect(OperatorControllers(map[string]config.ControllerSettings{"defaults": settings})).To(Equal(map[string]v1alpha1.ControllerSettings{"defaults": {
			Resources:         settings.Resources,
			Tolerations:       settings.Tolerations,
			NodeSelector:      settings.NodeSelector,
			PriorityClassName: settings.PriorityClassName,
			Concurrent:        settings.Concurrent,
		}}))
	})

	It("serializes the operator's settings like the FluxConfig's", func() {
		operator, err := json.Marshal(configv1alpha1.ControllerSettings(settings))
		Expect(err).NotTo(HaveOccurred())
		shoot, err := json.Marshal(v1alpha1.ControllerSettings(settings))
		Expect(err).NotTo(HaveOccurred())
		Expect(operator).To(MatchJSON(shoot))
		Expect(string(operator)).To(ContainSubstring(`"priorityClassName":"system-cluster-critical"`))
	})
})
