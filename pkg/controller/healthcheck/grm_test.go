// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"time"

	healthutils "github.com/gardener/gardener/pkg/resourcemanager/controller/health/utils"
	testutils "github.com/gardener/gardener/pkg/utils/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
)

// gardenlet's care controller turns SystemComponentsHealthy false for an unhealthy class-less
// ManagedResource, and gardener-resource-manager judges an MR by the objects in it. A broken user
// repository shows up only in the status of the bootstrap objects; this pins that the resource
// manager does not judge those kinds, so the bootstrap MR stays healthy while BootstrapReady is
// False.
var _ = Describe("gardener-resource-manager's view of the bootstrap objects", func() {
	for _, mode := range []fluxapi.BootstrapMode{fluxapi.BootstrapModeKluctl, fluxapi.BootstrapModeFlux} {
		It("does not judge the health of the "+string(mode)+" bootstrap objects, even when they fail", func() {
			cfg := &fluxapi.FluxConfig{
				Flux:   fluxapi.Flux{Namespace: "flux-system"},
				Kluctl: fluxapi.Kluctl{Enabled: true, Namespace: "kluctl-system"},
				Source: &fluxapi.Source{URL: "ssh://git@example.com/repo", Ref: fluxapi.GitRef{Branch: "main"}, Path: "."},
				Bootstrap: fluxapi.Bootstrap{
					Mode:   mode,
					Kluctl: fluxapi.KluctlBootstrap{Interval: metav1.Duration{Duration: 5 * time.Minute}},
					Flux:   fluxapi.FluxBootstrap{Path: ".", Interval: metav1.Duration{Duration: 10 * time.Minute}},
				},
			}
			data, err := bootstrap.Data(bootstrap.Values{Config: cfg, URL: cfg.Source.URL})
			Expect(err).NotTo(HaveOccurred())
			docs, err := testutils.ExtractManifestsFromManagedResourceData(data)
			Expect(err).NotTo(HaveOccurred())
			Expect(docs).NotTo(BeEmpty())

			for _, doc := range docs {
				obj := &unstructured.Unstructured{}
				Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed())
				Expect(unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
					"type": "Ready", "status": "False", "reason": "PrepareFailed", "message": "failed to clone",
				}}, "status", "conditions")).To(Succeed())

				checked, err := healthutils.CheckHealth(obj)
				Expect(err).NotTo(HaveOccurred(), "%s %s is judged unhealthy", obj.GetKind(), obj.GetName())
				Expect(checked).To(BeFalse(), "%s %s is health-checked by the resource manager", obj.GetKind(), obj.GetName())
			}
		})
	}
})
