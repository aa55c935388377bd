// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package promrules_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gardenertest "github.com/gardener/gardener/pkg/component/test"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/promscrape"
)

// scrapeConfig returns the ScrapeConfig of component of a shoot.
func scrapeConfig(values monitoring.Values, component string) *monitoringv1alpha1.ScrapeConfig {
	GinkgoHelper()
	scrapeConfigs, err := monitoring.ScrapeConfigs(shootNamespace, values)
	Expect(err).NotTo(HaveOccurred())
	for _, sc := range scrapeConfigs {
		if sc.Name == "shoot-flux-"+component {
			return sc
		}
	}
	Fail("no ScrapeConfig of " + component)
	return nil
}

// podTarget is a pod of component's Deployment, or a pod named like it (promscrape.PodTarget).
func podTarget(component, namespace, pod string, exposition []byte) promscrape.Target {
	GinkgoHelper()
	endpoint, err := manifests.ControllerMetricsEndpoint(component)
	Expect(err).NotTo(HaveOccurred())
	return promscrape.PodTarget(namespace, pod, endpoint.Container, endpoint.Port, exposition)
}

func readSample(file string) []byte {
	GinkgoHelper()
	data, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// allReconcilers adds to a sample the controller_runtime_reconcile_* lines of every other
// reconciler of the component, as a controller that reconciles every kind it serves exports them
// (the samples hold the reconcilers that reconciled anything).
func allReconcilers(sample []byte, component string) []byte {
	GinkgoHelper()
	endpoint, err := manifests.ControllerMetricsEndpoint(component)
	Expect(err).NotTo(HaveOccurred())
	var recorded string
	var lines, extra []string
	for _, line := range strings.Split(string(sample), "\n") {
		lines = append(lines, line)
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") && !strings.HasPrefix(line, "controller_runtime_reconcile_errors_total{") {
			continue
		}
		start := strings.Index(line, `controller="`) + len(`controller="`)
		recorded = line[start : start+strings.Index(line[start:], `"`)]
		for _, r := range endpoint.Reconcilers {
			if r != recorded {
				extra = append(extra, strings.Replace(line, `controller="`+recorded+`"`, `controller="`+r+`"`, 1))
			}
		}
	}
	Expect(recorded).NotTo(BeEmpty(), "the sample has no reconcile series")
	// Lines of a family stay together: append the copies behind the family's last line.
	out := strings.Join(lines, "\n")
	for _, family := range []string{"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total"} {
		var own []string
		for _, e := range extra {
			if strings.HasPrefix(e, family+"{") {
				own = append(own, e)
			}
		}
		last := strings.LastIndex(out, "\n"+family+"{")
		end := last + 1 + strings.Index(out[last+1:], "\n")
		out = out[:end] + "\n" + strings.Join(own, "\n") + out[end:]
	}
	return []byte(out)
}

// crafted is promscrape.Crafted over the kept metrics, naming the bootstrap object.
func crafted(n int, bootstrapNamespace string) []byte {
	return promscrape.Crafted(n, monitoring.KeptMetrics, constants.BootstrapName, bootstrapNamespace)
}

var _ = Describe("The bounds of the shoots' Prometheus", func() {
	components := []struct {
		values    monitoring.Values
		component string
	}{
		{kluctlShoot, fluxapi.ComponentSourceController},
		{kluctlShoot, fluxapi.ComponentKluctlController},
		{fluxShoot, fluxapi.ComponentSourceController},
		{fluxShoot, fluxapi.ComponentKustomizeController},
	}

	It("let every recorded sample through with headroom, with all reconcilers of each controller reporting", func() {
		for _, c := range components {
			sc := scrapeConfig(c.values, c.component)
			files, err := filepath.Glob("samples/" + c.component + ".*.prom")
			Expect(err).NotTo(HaveOccurred())
			Expect(files).NotTo(BeEmpty())
			for _, file := range files {
				namespace := sc.Spec.KubernetesSDConfigs[0].Namespaces.Names[0]
				result, err := promscrape.Scrape(sc.Spec, []promscrape.Target{
					podTarget(c.component, namespace, c.component+"-6d8f7b9c5d-x2k4p", allReconcilers(readSample(file), c.component)),
				})
				Expect(err).NotTo(HaveOccurred())
				Expect(result.Failures).To(BeEmpty(), file)
				GinkgoWriter.Printf("%s of a %s shoot, %s with all reconcilers: %d samples kept (limit %d)\n",
					c.component, c.values.Bootstrap.Mode, filepath.Base(file), len(result.Series), monitoring.SampleLimit)
				// Twice the samples would still pass: a new release's few more series cut no
				// controller's monitoring.
				Expect(2*len(result.Series)).To(BeNumerically("<=", monitoring.SampleLimit), file)
				for _, s := range result.Series {
					Expect(len(s)).To(BeNumerically("<=", monitoring.LabelLimit), "%v", s)
				}
			}
		}
	})

	It("keep the series a shoot owner's pods craft within MaxPods × SampleLimit per controller and drop every tenant-chosen controller", func() {
		for _, c := range components {
			sc := scrapeConfig(c.values, c.component)
			endpoint, err := manifests.ControllerMetricsEndpoint(c.component)
			Expect(err).NotTo(HaveOccurred())
			namespace := sc.Spec.KubernetesSDConfigs[0].Namespaces.Names[0]
			real := podTarget(c.component, namespace, c.component+"-6d8f7b9c5d-x2k4p", readSample("samples/"+c.component+".healthy.prom"))
			bound := endpoint.MaxPods * monitoring.SampleLimit

			By(c.component + ": a pod named like the controller serving 10,000 crafted series stores none of them")
			flood := podTarget(c.component, namespace, c.component+"-tenant", crafted(10000, c.values.Bootstrap.Namespace))
			result, err := promscrape.Scrape(sc.Spec, []promscrape.Target{real, flood})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Failures).To(ConsistOf(ContainSubstring(c.component + "-tenant")))
			Expect(len(result.Series)).To(BeNumerically("<=", bound))
			Expect(result.Up).To(ContainElement(1), "the real controller is still scraped")

			By(c.component + ": a pod serving 10,000 series the relabelling keeps fails its scrape on the sample limit")
			many := &strings.Builder{}
			fmt.Fprintln(many, "# TYPE gotk_reconcile_condition gauge")
			for i := range 10000 {
				fmt.Fprintf(many, "gotk_reconcile_condition{name=%q,namespace=%q,kind=\"K%d\",status=\"True\",type=\"Ready\"} 1\n", constants.BootstrapName, c.values.Bootstrap.Namespace, i)
			}
			result, err = promscrape.Scrape(sc.Spec, []promscrape.Target{real, podTarget(c.component, namespace, c.component+"-tenant", []byte(many.String()))})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Failures).To(ConsistOf(ContainSubstring("10000 samples exceed the sample limit")))
			Expect(len(result.Series)).To(BeNumerically("<=", bound))

			By(c.component + ": under the sample limit, crafted controllers, extra labels and long values store nothing new")
			small := podTarget(c.component, namespace, c.component+"-tenant", crafted(80, c.values.Bootstrap.Namespace))
			result, err = promscrape.Scrape(sc.Spec, []promscrape.Target{real, small})
			Expect(err).NotTo(HaveOccurred())
			Expect(len(result.Series)).To(BeNumerically("<=", bound))
			for _, s := range result.Series {
				Expect(s["controller"]).To(Or(BeEmpty(), BeElementOf(endpoint.Reconcilers)), "%v", s)
				for label := range s {
					Expect(label).NotTo(HavePrefix("extra_"))
				}
				for _, v := range s {
					Expect(len(v)).To(BeNumerically("<=", monitoring.LabelValueLengthLimit))
				}
			}

			By(c.component + ": more pods than the Deployment runs at once fail the whole job")
			targets := []promscrape.Target{real}
			for i := range 1000 {
				targets = append(targets, podTarget(c.component, namespace, fmt.Sprintf("%s-tenant-%d", c.component, i), crafted(40, c.values.Bootstrap.Namespace)))
			}
			result, err = promscrape.Scrape(sc.Spec, targets)
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Series).To(BeEmpty())
			Expect(result.Failures).To(ConsistOf(ContainSubstring("exceed the target limit")))
		}
	})

	It("record at most one series per reconciler of a delivered controller, whatever controller values the shoot's pods export", func() {
		for _, values := range []monitoring.Values{kluctlShoot, fluxShoot} {
			rule := shootRule("shoot-bounds", values)
			var inputs []string
			want := 0
			for _, c := range values.Controllers {
				endpoint, err := manifests.ControllerMetricsEndpoint(c.Component)
				Expect(err).NotTo(HaveOccurred())
				want += len(endpoint.Reconcilers)
				job := monitoring.JobName(c.Component)
				// Every real reconciler, and 1,000 tenant-chosen values per job, including the
				// reconcilers of the other controllers.
				values := append([]string{}, endpoint.Reconcilers...)
				for i := range 1000 {
					values = append(values, fmt.Sprintf("tenant-%d", i))
				}
				values = append(values, "kustomization", "kluctl-controller", "gitrepository")
				seen := map[string]bool{}
				for _, v := range values {
					if seen[v] {
						continue
					}
					seen[v] = true
					for _, metric := range []string{`controller_runtime_reconcile_errors_total{job=%q, controller=%q}`, `controller_runtime_reconcile_total{job=%q, controller=%q, result="success"}`} {
						inputs = append(inputs, fmt.Sprintf("  - series: '"+metric+"'\n    values: '0+1x30'", job, v))
					}
				}
			}
			dir := GinkgoT().TempDir()
			ruleFile, err := filepath.Abs(filepath.Join("testdata", rule.Name+".prometheusrule.yaml"))
			Expect(err).NotTo(HaveOccurred())
			test := filepath.Join(dir, "bounds.test.yaml")
			Expect(os.WriteFile(test, fmt.Appendf(nil, `rule_files:
- %s
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
%s
  promql_expr_test:
  - expr: count(%s)
    eval_time: 20m
    exp_samples:
    - value: %d
  - expr: count(%s)
    eval_time: 20m
    exp_samples:
    - value: %d
`, ruleFile, strings.Join(inputs, "\n"), monitoring.RecordErrors, want, monitoring.RecordSuccesses, want), 0o600)).To(Succeed())
			gardenertest.PrometheusRule(rule, test)
		}
	})
})
