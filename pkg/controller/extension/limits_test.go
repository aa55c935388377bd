// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// The limits of tenant inputs, re-checked on every reconcile: an input over a limit is a
// configuration problem that names the field and keeps the last good deployment.
var _ = Describe("Actuator limits", func() {
	var (
		ctx    context.Context
		rec    *recorder
		seed   client.Client
		garden client.Client
		act    *actuator
		ex     *extensionsv1alpha1.Extension
	)

	// build starts with a good deployment of a public repository with two additional Secrets of
	// 1000 bytes of data each (4 bytes of keys included), with the given limits.
	build := func(tune func(*config.Limits)) {
		ctx = context.Background()
		rec = &recorder{}
		DeferCleanup(func(interval time.Duration) { managedresource.PollInterval = interval }, managedresource.PollInterval)
		managedresource.PollInterval = 5 * time.Millisecond

		defaults, err := loader.Defaults()
		Expect(err).NotTo(HaveOccurred())
		cfg := *defaults
		cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 5 * time.Second}
		tune(&cfg.Limits)

		theShoot := shoot()
		theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{
			{Name: "a", ResourceRef: autoscalingRef("a")},
			{Name: "b", ResourceRef: autoscalingRef("b")},
		}
		ex = &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "shoot-flux", Namespace: seedNamespace},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{
				Type:           constants.ExtensionType,
				ProviderConfig: providerConfig(`{"additionalSecretResources":[{"name":"a"}]}`),
			}},
		}
		secret := func(name string) *corev1.Secret {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-" + name, Namespace: seedNamespace},
				Data: map[string][]byte{"data": []byte(strings.Repeat("x", 996))}}
		}
		seed = newSeedClient(rec, clusterObject(theShoot), ex, secret("a"), secret("b"))
		garden = fake.NewClientBuilder().WithObjects(legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})).Build()
		act = NewActuator(seed, seed, garden, events.NewFakeRecorder(100), cfg, nil).(*actuator)
	}

	reconcile := func() error {
		ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		return act.Reconcile(ctx, logr.Discard(), ex)
	}

	// expectKept reconciles after change and expects the error and no write at all.
	expectKept := func(change func(), message string) {
		ExpectWithOffset(1, reconcile()).To(Succeed())
		before := [2][]string{managedResourceObjects(seed, constants.ManagedResourceControllers), managedResourceObjects(seed, constants.ManagedResourceBootstrap)}
		statusBefore := string(ex.Status.ProviderStatus.Raw)
		change()
		rec.reset()

		err := reconcile()
		ExpectWithOffset(1, err).To(MatchError(message))
		ExpectWithOffset(1, v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
		ExpectWithOffset(1, rec.reset()).To(BeEmpty(), "nothing is written")
		ExpectWithOffset(1, managedResourceObjects(seed, constants.ManagedResourceControllers)).To(Equal(before[0]))
		ExpectWithOffset(1, managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(before[1]))
		ExpectWithOffset(1, string(ex.Status.ProviderStatus.Raw)).To(Equal(statusBefore))
	}

	setProviderConfig := func(raw string) func() {
		return func() {
			ex.Spec.ProviderConfig = providerConfig(raw)
			ExpectWithOffset(2, seed.Update(ctx, ex)).To(Succeed())
		}
	}

	It("refuses additional Secrets whose data sum exceeds the limit, naming the entry", func() {
		build(func(l *config.Limits) { l.AdditionalSecretResourcesMaxBytes = 1999 })
		expectKept(setProviderConfig(`{"additionalSecretResources":[{"name":"a"},{"name":"b"}]}`),
			"additionalSecretResources[1].name: Too long: with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has 2000 bytes, more than the operator's limit of 1999 bytes (limits.additionalSecretResourcesMaxBytes)")
	})

	It("counts the decryption Secret against the same limit, naming the field that brings it over", func() {
		build(func(l *config.Limits) { l.AdditionalSecretResourcesMaxBytes = 1999 })
		expectKept(setProviderConfig(`{"bootstrap":{"kluctl":{"decryption":{"secretResourceName":"a"}}},"additionalSecretResources":[{"name":"b"}]}`),
			"additionalSecretResources[0].name: Too long: with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has 2000 bytes, more than the operator's limit of 1999 bytes (limits.additionalSecretResourcesMaxBytes)")
	})

	DescribeTable("refuses a decryption Secret over the limit on its own, in either mode",
		func(providerConfig, field string) {
			build(func(l *config.Limits) { l.AdditionalSecretResourcesMaxBytes = 1499 })
			expectKept(func() {
				big := &corev1.Secret{}
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "ref-b"}, big)).To(Succeed())
				big.Data["data"] = []byte(strings.Repeat("x", 1496))
				Expect(seed.Update(ctx, big)).To(Succeed())
				setProviderConfig(providerConfig)()
			}, field+": Too long: with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has 1500 bytes, more than the operator's limit of 1499 bytes (limits.additionalSecretResourcesMaxBytes)")
		},
		Entry("kluctl", `{"bootstrap":{"kluctl":{"decryption":{"secretResourceName":"b"}}}}`, "bootstrap.kluctl.decryption.secretResourceName"),
		Entry("flux", `{"bootstrap":{"mode":"flux","flux":{"decryption":{"secretResourceName":"b"}}}}`, "bootstrap.flux.decryption.secretResourceName"),
	)

	It("accepts additional Secrets at the limit", func() {
		build(func(l *config.Limits) { l.AdditionalSecretResourcesMaxBytes = 2000 })
		ex.Spec.ProviderConfig = providerConfig(`{"additionalSecretResources":[{"name":"a"},{"name":"b"}]}`)
		Expect(seed.Update(ctx, ex)).To(Succeed())
		Expect(reconcile()).To(Succeed())
	})

	It("refuses more additional Secrets than the limit", func() {
		build(func(l *config.Limits) { l.AdditionalSecretResourcesMaxCount = 1 })
		expectKept(setProviderConfig(`{"additionalSecretResources":[{"name":"a"},{"name":"b"}]}`),
			"Extension providerConfig: additionalSecretResources: Too many: 2: must have at most 1 items (the operator's limit limits.additionalSecretResourcesMaxCount)")
	})

	It("refuses kluctl args over the limit", func() {
		build(func(l *config.Limits) { l.KluctlArgsMaxBytes = 20 })
		expectKept(setProviderConfig(`{"bootstrap":{"kluctl":{"args":{"env":"a-rather-long-environment"}}}}`),
			"Extension providerConfig: bootstrap.kluctl.args: Too long: has 35 bytes as JSON, more than the operator's limit of 20 bytes (limits.kluctlArgsMaxBytes)")
	})

	It("refuses controller settings over the limit", func() {
		build(func(l *config.Limits) { l.ControllersMaxBytes = 20 })
		expectKept(setProviderConfig(`{"controllers":{"defaults":{"concurrent":4}}}`),
			"Extension providerConfig: controllers: Too long: has 29 bytes as JSON, more than the operator's limit of 20 bytes (limits.controllersMaxBytes)")
	})

	It("refuses a project config.yaml over the limit", func() {
		build(func(l *config.Limits) { l.ProjectConfigMaxBytes = 64 })
		expectKept(func() {
			cm := legacyConfigMap(nil)
			Expect(garden.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
			cm.Data["config.yaml"] = fmt.Sprintf("bootstrap:\n  kluctl:\n    args:\n      env: %s\n", strings.Repeat("x", 40))
			Expect(garden.Update(ctx, cm)).To(Succeed())
		}, "ConfigMap garden-foo/flux-config: config.yaml: Too long: has 83 bytes, more than the operator's limit of 64 bytes (limits.projectConfigMaxBytes)")
	})
})
