package manifests

import (
	"bytes"
	"testing"

	"github.com/andybalholm/brotli"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

// BenchmarkRenderFlux measures uncached rendering and reports how large the output is once
// compressed the way gardener stores ManagedResource secrets (brotli, default quality). The
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

			var compressed bytes.Buffer
			w := brotli.NewWriter(&compressed)
			if _, err := w.Write(out); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(out)), "yaml-bytes")
			b.ReportMetric(float64(compressed.Len()), "brotli-bytes")
		})
	}
}
