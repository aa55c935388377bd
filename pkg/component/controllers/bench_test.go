// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package controllers_test

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// BenchmarkDataDistinctSettings renders the controllers data for 200 distinct controller settings
// of ~100 KB each, as tenants can choose them, and reports the live heap afterwards: it must stay
// within the render cache's bound (rendercache.DefaultMaxBytes) instead of growing with the number
// of settings, as the unbounded cache of earlier releases did (31 MiB for this input). Only the
// compressed data is cached per setting (3.4 MiB for this input), not the tuned manifests.
func BenchmarkDataDistinctSettings(b *testing.B) {
	const settings = 200
	before := liveHeap()
	for b.Loop() {
		for i := range settings {
			v := Values{
				Flux:   manifests.FluxOptions{Version: manifests.FluxVersions()[0], Components: []string{manifests.SourceController}, Namespace: "flux-system"},
				Kluctl: &manifests.KluctlOptions{Version: manifests.KluctlVersions()[0], Namespace: "kluctl-system"},
			}
			v.Flux.Tuning.Controllers = map[string]flux.ControllerSettings{manifests.SourceController: {
				NodeSelector: map[string]string{"tenant": fmt.Sprint(i), "padding": strings.Repeat("x", 100_000)},
			}}
			if _, err := Data(v); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(int64(liveHeap())-int64(before))/(1<<20), "live-heap-growth-MiB")
	b.ReportMetric(float64(rendercache.Shared.Bytes())/(1<<20), "cache-MiB")
	b.ReportMetric(float64(rendercache.Shared.Len()), "cache-entries")
}

func liveHeap() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
