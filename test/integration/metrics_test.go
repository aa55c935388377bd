// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"net/http"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics/shoots"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// scrape is one read of the running extension's /metrics.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics reads /metrics of the running extension, the deployed binary with
// SHOOT_FLUX_DEPLOYED=true.
func scrapeMetrics(ctx context.Context) (scrape, error) {
	url, err := sb.ExtensionMetricsURL()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// sum adds up the series of a metric whose labels include the given ones.
func (s scrape) sum(name string, labels map[string]string) float64 {
	var total float64
	family, ok := s[name]
	if !ok {
		return 0
	}
series:
	for _, m := range family.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue series
			}
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

var _ = Describe("Metrics", Label(labelDeployed), func() {
	It("tell a good shoot, a configuration error and a host the policy refuses apart", func(ctx SpecContext) {
		before, err := scrapeMetrics(ctx)
		Expect(err).NotTo(HaveOccurred())

		By("one good shoot: a private repository with a generated deploy key and a scanned host key")
		goodNamespace := newProject(ctx, "mgood")
		setProjectConfig(ctx, goodNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		good := createShootSucceeded(ctx, sandbox.ShootSpec{Project: "mgood", Name: "one"})

		By("one configuration error")
		badNamespace := newProject(ctx, "mbad")
		setProjectConfig(ctx, badNamespace, legacyConfig(publicURL, "main", "public"))
		bad := createShoot(ctx, sandbox.ShootSpec{Project: "mbad", Name: "one", ProviderConfig: []byte(`{"source":{"url":"ftp://git.example.com/fleet.git"}}`)})
		lastErr, err := bad.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring("source.url"))

		By("one repository host the host policy refuses")
		refusedNamespace := newProject(ctx, "mrefused")
		setProjectConfig(ctx, refusedNamespace, legacyConfig("ssh://git@169.254.169.254:22/fleet", "main", "private"))
		refused := createShoot(ctx, sandbox.ShootSpec{Project: "mrefused", Name: "one"})
		lastErr, err = refused.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring(deploykey.ScanFailedMessage))

		goodEx, err := good.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		goodStatus, err := good.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())

		Eventually(func(g Gomega) {
			after, err := scrapeMetrics(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			delta := func(name string, labels map[string]string) float64 {
				return after.sum(name, labels) - before.sum(name, labels)
			}
			// Failed reconciles are retried, so errors count at least once; keys and scans of
			// hosts with a stored key happen once.
			g.Expect(delta("shoot_flux_operations_total", map[string]string{"phase": metrics.PhaseReconcile})).To(BeNumerically(">=", 3))
			g.Expect(delta("shoot_flux_reconcile_errors_total", map[string]string{"phase": metrics.PhaseReconcile, "class": metrics.ClassConfiguration})).To(BeNumerically(">=", 1))
			g.Expect(delta("shoot_flux_reconcile_errors_total", map[string]string{"phase": metrics.PhaseReconcile, "class": metrics.ClassInfrastructure})).To(BeNumerically(">=", 1), "the refused host")
			g.Expect(delta("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanOK})).To(Equal(1.0), "the suite's git server, scanned once")
			g.Expect(delta("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanRefusedByPolicy})).To(BeNumerically(">=", 1))
			g.Expect(delta("shoot_flux_host_key_scans_total", map[string]string{"result": metrics.ScanUnreachable})).To(BeZero())
			g.Expect(delta("shoot_flux_deploy_keys_generated_total", nil)).To(Equal(2.0), "the good and the refused shoot's project")
			g.Expect(delta("shoot_flux_deploy_keys_rotated_total", nil)).To(BeZero())
			for _, mr := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
				g.Expect(delta("shoot_flux_managed_resource_writes_total", map[string]string{"managed_resource": mr, "kind": "ManagedResource", "verb": "create"})).To(Equal(1.0), "only the good shoot deploys %s", mr)
				g.Expect(delta("shoot_flux_managed_resource_writes_total", map[string]string{"managed_resource": mr, "kind": "Secret", "verb": "create"})).To(BeNumerically(">=", 1), mr)
			}

			// The gauges tell what the Extensions in the seed tell.
			list := &extensionsv1alpha1.ExtensionList{}
			g.Expect(sb.Seed.Client.List(ctx, list)).To(Succeed())
			var extensions, withVersion float64
			for _, ex := range list.Items {
				if ex.Spec.Type != constants.ExtensionType {
					continue
				}
				extensions++
				if ex.Status.ProviderStatus != nil {
					withVersion++
				}
			}
			g.Expect(after.sum("shoot_flux_shoots", nil)).To(Equal(extensions))
			g.Expect(after.sum("shoot_flux_shoots_by_version", nil)).To(Equal(withVersion))
			state := "Unknown"
			if c := v1beta1helper.GetCondition(goodEx.Status.Conditions, healthcheck.ConditionTypeBootstrapReady); c != nil {
				state = string(c.Status)
			}
			g.Expect(after.sum("shoot_flux_shoots", map[string]string{"state": state, "mode": goodStatus.BootstrapMode})).To(BeNumerically(">=", 1))
			g.Expect(after.sum("shoot_flux_shoots", map[string]string{"mode": shoots.LabelUnknown})).To(BeNumerically(">=", 2), "the two shoots that never succeeded")
			kluctlVersion := goodStatus.KluctlVersion
			if kluctlVersion == "" {
				kluctlVersion = shoots.LabelNone
			}
			g.Expect(after.sum("shoot_flux_shoots_by_version", map[string]string{"flux_version": goodStatus.FluxVersion, "kluctl_version": kluctlVersion, "management": "continuous"})).To(BeNumerically(">=", 1))
			for _, name := range metrics.Names() {
				if name == "shoot_flux_heartbeat_renew_timestamp_seconds" && !sb.Deployed() {
					// Only the binary runs the heartbeat controller.
					continue
				}
				g.Expect(after).To(HaveKey(name), "every metric is exported")
				g.Expect(after[name].GetHelp()).NotTo(BeEmpty(), name)
			}
			if sb.Deployed() {
				renewed := after.sum("shoot_flux_heartbeat_renew_timestamp_seconds", nil)
				g.Expect(time.Since(time.Unix(int64(renewed), 0))).To(BeNumerically("<", 2*time.Minute), "the heartbeat Lease is renewed")
			}
		}).WithTimeout(healthTimeout).Should(Succeed())
	})
})
