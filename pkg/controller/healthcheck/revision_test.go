// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"context"
	"encoding/json"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
)

var _ = Describe("Revision reporter", func() {
	const applied = "main@sha1:0123456789abcdef0123456789abcdef01234567"
	var (
		key  = types.NamespacedName{Namespace: "shoot--foo--bar", Name: "shoot-flux"}
		seed client.Client
	)

	start := func(status *fluxv1alpha1.FluxStatus) *RevisionReporter {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
		if status != nil {
			raw, err := helper.EncodeStatus(status)
			Expect(err).NotTo(HaveOccurred())
			ex.Status.ProviderStatus = raw
		}
		seed = fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(ex).WithStatusSubresource(ex).Build()
		reporter := NewRevisionReporter(seed, logr.Discard(), 10*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- reporter.Start(ctx) }()
		DeferCleanup(func() {
			cancel()
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
		})
		return reporter
	}

	recorded := func(g Gomega) map[string]any {
		ex := &extensionsv1alpha1.Extension{}
		g.Expect(seed.Get(context.Background(), key, ex)).To(Succeed())
		if ex.Status.ProviderStatus == nil {
			return nil
		}
		status := map[string]any{}
		g.Expect(json.Unmarshal(ex.Status.ProviderStatus.Raw, &status)).To(Succeed())
		return status
	}

	It("writes the revision into the providerStatus and keeps the actuator's fields", func() {
		reporter := start(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "flux", FluxVersion: "v2.9.5"})
		reporter.Report(key, applied)
		Eventually(func(g Gomega) {
			g.Expect(recorded(g)).To(And(
				HaveKeyWithValue("lastAppliedRevision", applied),
				HaveKeyWithValue("repository", "ssh://git@example.com/repo"),
				HaveKeyWithValue("fluxVersion", "v2.9.5"),
				HaveKeyWithValue("kind", "FluxStatus"),
			))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("writes the newest of several reports", func() {
		reporter := start(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"})
		reporter.Report(key, "1111111111111111111111111111111111111111")
		reporter.Report(key, "2222222222222222222222222222222222222222")
		Eventually(func(g Gomega) {
			g.Expect(recorded(g)).To(HaveKeyWithValue("lastAppliedRevision", "2222222222222222222222222222222222222222"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("writes nothing for an Extension without a bootstrap or without a providerStatus", func() {
		reporter := start(&fluxv1alpha1.FluxStatus{BootstrapMode: "kluctl"})
		reporter.Report(key, applied)
		Consistently(func(g Gomega) {
			g.Expect(recorded(g)).NotTo(HaveKey("lastAppliedRevision"))
		}).WithTimeout(500 * time.Millisecond).Should(Succeed())

		reporter = start(nil)
		reporter.Report(key, applied)
		Consistently(func(g Gomega) {
			g.Expect(recorded(g)).To(BeNil())
		}).WithTimeout(500 * time.Millisecond).Should(Succeed())
	})

	It("gets the revision from the bootstrap check", func() {
		reporter := start(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "flux"})
		ks := &unstructured.Unstructured{}
		ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		ks.SetKind("Kustomization")
		ks.SetName(constants.BootstrapName)
		ks.SetNamespace("flux-system")
		ks.SetLabels(map[string]string{constants.LabelManagedBy: constants.ExtensionName})
		Expect(unstructured.SetNestedField(ks.Object, applied, "status", "lastAppliedRevision")).To(Succeed())
		repo := ks.DeepCopy()
		repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
		repo.SetKind("GitRepository")

		checker := CheckBootstrap(reporter)
		checker.InjectSourceClient(seed)
		checker.InjectTargetClient(fake.NewClientBuilder().WithObjects(repo, ks).Build())
		_, err := checker.Check(context.Background(), key)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(recorded(g)).To(HaveKeyWithValue("lastAppliedRevision", applied))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
