// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"testing"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
)

// BenchmarkRenderFlux measures uncached rendering and reports how large the output is once
// compressed as the controllers ManagedResource stores it (managedresource.Data). The
// default set (source-controller plus kluctl) should stay below 150 KiB.
func BenchmarkRenderFlux(b *testing.B) {
	for _, bc := range []struct {
		name       string
		components []string
		kluctl     bool
	}{
		{name: "default+kluctl", components: []string{SourceController}, kluctl: true},
		{name: "all+kluctl", components: fluxComponents, kluctl: true},
		{name: "all", components: fluxComponents},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var out []byte
			for b.Loop() {
				r := newRenderer(fluximagevector.ImageVector())
				flux, err := r.renderFlux(FluxOptions{Version: newestFlux, Components: bc.components, Namespace: "flux-system"})
				if err != nil {
					b.Fatal(err)
				}
				out = flux
				if bc.kluctl {
					kluctl, err := r.renderKluctl(KluctlOptions{Version: newestKluctl, Namespace: "kluctl-system"})
					if err != nil {
						b.Fatal(err)
					}
					out = append(append(append([]byte{}, flux...), "---\n"...), kluctl...)
				}
			}

			// As the controllers ManagedResource stores it.
			data, err := managedresource.Data(map[string][]byte{"manifests.yaml": out})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(out)), "yaml-bytes")
			b.ReportMetric(float64(len(data[resourcesv1alpha1.CompressedDataKey])), "brotli-bytes")
		})
	}
}
