// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("the shoot's monitoring", func() {
		scrapeConfigs := func() []string {
			list := &monitoringv1alpha1.ScrapeConfigList{}
			Expect(seed.List(ctx, list, client.InNamespace(seedNamespace))).To(Succeed())
			var names []string
			for _, sc := range list.Items {
				names = append(names, sc.Name)
			}
			return names
		}
		ruleExists := func() bool {
			err := seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, &monitoringv1.PrometheusRule{})
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			return err == nil
		}

		It("adds the delivered controllers and the bootstrap to the shoot's Prometheus and removes them on disable", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kluctl-controller"))
			rule := &monitoringv1.PrometheusRule{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, rule)).To(Succeed())
			var alerts []string
			for _, r := range rule.Spec.Groups[0].Rules {
				alerts = append(alerts, r.Alert)
			}
			Expect(alerts).To(ContainElement(monitoring.AlertDeploymentFailing))
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: monitoring.DashboardConfigMapName}, &corev1.ConfigMap{})).To(Succeed())

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(scrapeConfigs()).To(BeEmpty())
			Expect(ruleExists()).To(BeFalse())
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: monitoring.DashboardConfigMapName}, &corev1.ConfigMap{})).To(BeNotFoundError())
		})

		It("keeps the controller alerts only in bootstrap mode none", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			ex.Spec.ProviderConfig = providerConfig(`{"bootstrap":{"mode":"none"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			rule := &monitoringv1.PrometheusRule{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, rule)).To(Succeed())
			for _, r := range rule.Spec.Groups[0].Rules {
				Expect(r.Alert).To(Or(BeEmpty(), Equal(monitoring.AlertControllerDown)))
			}
		})

		It("removes them when the project turns them off, and the shoot owner can turn them on again only within the operator's switch", func() {
			cm := legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})
			build([]client.Object{cm})
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeTrue())

			cm.Data["config.yaml"] = "monitoring:\n  shoot:\n    enabled: false\n"
			Expect(garden.Update(ctx, cm)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(BeEmpty())
			Expect(ruleExists()).To(BeFalse())
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(rec.reset()).To(BeEmpty(), "a shoot without monitoring costs no writes")

			ex.Spec.ProviderConfig = providerConfig(`{"monitoring":{"shoot":{"enabled":true}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeTrue())

			cfg.Monitoring.Shoot.Enabled = false
			act.config = cfg
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeFalse())
		})

		It("keeps them while the shoot is hibernated, like the controllers", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			cluster := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, cluster)).To(Succeed())
			cluster.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, cluster)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(HaveLen(2))
			Expect(ruleExists()).To(BeTrue())
		})
	})
})
