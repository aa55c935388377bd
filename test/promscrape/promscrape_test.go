// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package promscrape_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/promscrape"
)

func TestPromScrape(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Prometheus Scrape Emulation Suite")
}

var _ = Describe("Scrape", func() {
	target := func(pod, exposition string) promscrape.Target {
		return promscrape.Target{Labels: map[string]string{"__address__": "10.0.0.1:8080", "__meta_kubernetes_pod_name": pod}, Exposition: []byte(exposition)}
	}
	spec := func() monitoringv1alpha1.ScrapeConfigSpec {
		return monitoringv1alpha1.ScrapeConfigSpec{
			RelabelConfigs: []monitoringv1.RelabelConfig{
				{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, Action: "keep", Regex: "app-.*"},
				{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
			},
			MetricRelabelConfigs: []monitoringv1.RelabelConfig{{Action: "labelkeep", Regex: "__name__|pod|instance|le|kept"}},
		}
	}

	It("relabels targets and samples, expands histograms and keeps only the kept labels", func() {
		result, err := promscrape.Scrape(spec(), []promscrape.Target{
			target("app-1", "# TYPE h histogram\nh_bucket{le=\"1\",kept=\"a\",dropped=\"b\"} 1\nh_bucket{le=\"+Inf\",kept=\"a\",dropped=\"b\"} 1\nh_sum{kept=\"a\",dropped=\"b\"} 1\nh_count{kept=\"a\",dropped=\"b\"} 1\n"),
			target("other", "m 1\n"),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.DroppedTargets).To(Equal(1))
		Expect(result.Series).To(ConsistOf(
			map[string]string{"__name__": "h_bucket", "le": "1", "kept": "a", "pod": "app-1", "instance": "10.0.0.1:8080"},
			map[string]string{"__name__": "h_bucket", "le": "+Inf", "kept": "a", "pod": "app-1", "instance": "10.0.0.1:8080"},
			map[string]string{"__name__": "h_sum", "kept": "a", "pod": "app-1", "instance": "10.0.0.1:8080"},
			map[string]string{"__name__": "h_count", "kept": "a", "pod": "app-1", "instance": "10.0.0.1:8080"},
		))
	})

	It("fails a target above the sample, label or value length limit, and every target above the target limit", func() {
		s := spec()
		s.SampleLimit, s.LabelLimit, s.LabelValueLengthLimit = new(int64(2)), new(int64(4)), new(int64(13))
		result, err := promscrape.Scrape(s, []promscrape.Target{
			target("app-ok", "m{kept=\"a\"} 1\n"),
			target("app-many", "m{kept=\"a\"} 1\nm{kept=\"b\"} 1\nm{kept=\"c\"} 1\n"),
			target("app-long", "m{kept=\"abcdefghijklmnop\"} 1\n"),
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Series).To(HaveLen(1))
		Expect(result.Failures).To(ConsistOf(ContainSubstring("3 samples exceed the sample limit 2"), ContainSubstring("label value length limit 13")))

		s.LabelLimit = new(int64(3))
		result, err = promscrape.Scrape(s, []promscrape.Target{target("app-ok", "m{kept=\"a\"} 1\n")})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Failures).To(ConsistOf(ContainSubstring("more than the label limit 3")))

		s.TargetLimit = new(int64(1))
		result, err = promscrape.Scrape(s, []promscrape.Target{target("app-1", "m 1\n"), target("app-2", "m 1\n")})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Series).To(BeEmpty())
		Expect(result.Up).To(HaveLen(2))
		Expect(result.Failures).To(ConsistOf(ContainSubstring("2 targets exceed the target limit 1")))
	})

	It("refuses an action it does not know", func() {
		_, _, err := promscrape.Relabel(map[string]string{"a": "b"}, []monitoringv1.RelabelConfig{{Action: "hashmod"}})
		Expect(err).To(MatchError(ContainSubstring("hashmod")))
	})
})
