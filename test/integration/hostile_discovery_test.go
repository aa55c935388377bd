// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// A shoot's owner decides the size of its discovery document: CRD versions and categories have no
// count limit. inflatingCRDs CRDs of inflatingVersions versions, each listing inflatingCategories
// categories of 63 characters (a DNS label's longest), make /apis about 24 MB per CRD while each
// CRD stays below etcd's 1.5 MiB object limit.
const (
	inflatingCRDs       = 5
	inflatingVersions   = 40
	inflatingCategories = 9000
	// inflatedDiscoveryBytes is the least size of the shoot's /apis the scenario checks for.
	inflatedDiscoveryBytes = 100_000_000
)

// chartMemoryLimit is the extension's memory limit in the chart (values.yaml
// resources.limits.memory): above it the kubelet kills the extension, and with it the reconciles of
// every project of the seed.
var chartMemoryLimit = resource.MustParse("512Mi")

// inflatingCRD is CRD i of the inflating shoot owner.
func inflatingCRD(i int) *unstructured.Unstructured {
	group := fmt.Sprintf("inflate%d.hostile.example.com", i)
	kind := fmt.Sprintf("Bloat%d", i)
	plural := strings.ToLower(kind) + "s"
	categories := make([]any, inflatingCategories)
	for c := range categories {
		name := fmt.Sprintf("c%d-%05d-", i, c)
		categories[c] = name + strings.Repeat("x", 63-len(name))
	}
	versions := make([]any, inflatingVersions)
	for v := range versions {
		versions[v] = map[string]any{
			"name": fmt.Sprintf("v%d", v+1), "served": true, "storage": v == 0,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced", "versions": versions,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "categories": categories},
		},
	}}
	return crd
}

// inflateDiscovery creates the inflating CRDs in the API server and waits until they are served.
// They are deleted when the scenario ends, so that later scenarios of light shoots find the shared
// API server as it was.
func inflateDiscovery(ctx context.Context, shoot *cluster.Cluster) {
	GinkgoHelper()
	for i := range inflatingCRDs {
		crd := inflatingCRD(i)
		Expect(shoot.Client.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) error { return client.IgnoreNotFound(shoot.Client.Delete(ctx, crd)) })
	}
	for i := range inflatingCRDs {
		Eventually(func(g Gomega) {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			g.Expect(shoot.Client.Get(ctx, client.ObjectKey{Name: inflatingCRD(i).GetName()}, crd)).To(Succeed())
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			g.Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))))
		}).WithTimeout(shootTimeout).Should(Succeed())
	}
}

// discoverySize returns the size of the shoot's /apis as a discovering client (client-go's
// discovery, controller-runtime's dynamic REST mapper) receives it, aggregated, without keeping it.
func discoverySize(ctx context.Context, cfg *rest.Config) int64 {
	GinkgoHelper()
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/apis", nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", discovery.AcceptV2)
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	n, err := io.Copy(io.Discard, resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// followInflatedShoots writes three rounds of the light shoots' shared KluctlDeployment status and
// waits until every shoot's BootstrapReady names each round: a check of each shoot read the shoot
// after the round was written. It returns once all rounds were seen and until has passed. It runs
// beside the healthy tenants' scenario, so it returns its failure instead of failing the spec from
// another goroutine.
func followInflatedShoots(ctx context.Context, shoots []*sandbox.ShootHandle, until time.Time) error {
	for round := 1; round <= 3; round++ {
		message := fmt.Sprintf("round %d of the inflated shoots", round)
		// The healthy light shoots' resource manager updates the shared object meanwhile.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			kd, err := kluctlDeployment(ctx, shoots[0])
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedSlice(kd.Object, []any{map[string]any{
				"type": "Ready", "status": "False", "reason": "Inflated", "message": message,
				"lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": kd.GetGeneration(),
			}}, "status", "conditions"); err != nil {
				return err
			}
			return shoots[0].Shoot.Client.Status().Update(ctx, kd)
		}); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		for _, h := range shoots {
			if err := waitForBootstrapReady(ctx, h, gardencorev1beta1.ConditionFalse, message, healthTimeout); err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
		}
	}
	return sandbox.Sleep(ctx, time.Until(until))
}

// waitForBootstrapReady waits until the shoot's BootstrapReady condition has status and its
// message contains message.
func waitForBootstrapReady(ctx context.Context, h *sandbox.ShootHandle, status gardencorev1beta1.ConditionStatus, message string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last *gardencorev1beta1.Condition
	for {
		ex, err := h.Extension(ctx)
		if err == nil {
			last = v1beta1helper.GetCondition(ex.Status.Conditions, healthcheck.ConditionTypeBootstrapReady)
			if last != nil && last.Status == status && strings.Contains(last.Message, message) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shoot %s: %s not %s with %q within %s (last: %+v, %w)", h.Name, healthcheck.ConditionTypeBootstrapReady, status, message, timeout, last, err)
		}
		if err := sandbox.Sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

var _ = Describe("Hostile tenant: discovery document", func() {
	// Before, every health check built a client that discovered the shoot's API: one check of such
	// a shoot allocated some 290 MiB, ten at once (the health check's workers) more than the
	// chart's memory limit, and the kill repeated every sync period. The inflating shoots are light:
	// they share one API server, so that its one inflated discovery document is that of as many
	// shoots as the health check has workers.
	It("keeps the extension's memory within the chart's limit while the health check reads shoots of a ~100 MB discovery document", Label(labelDeployed), func(ctx SpecContext) {
		prefix, attacker, _ := attackerProject(ctx, "dd")
		specs := make([]sandbox.ShootSpec, healthcheck.DefaultMaxConcurrentReconciles)
		for i := range specs {
			specs[i] = sandbox.ShootSpec{Project: attacker, Name: fmt.Sprintf("i%02d", i), SharedControlPlane: true}
		}
		inflated := createShoots(ctx, specs)
		Expect(inParallel(len(inflated), func(i int) error {
			_, err := inflated[i].WaitSucceeded(ctx, reconcileTimeout)
			return err
		})).To(Succeed())

		By(fmt.Sprintf("creating %d CRDs of %d versions and %d categories each in the shoots' API server", inflatingCRDs, inflatingVersions, inflatingCategories))
		inflateDiscovery(ctx, inflated[0].Shoot)
		// The API server adds an established CRD to its discovery document shortly after.
		var size int64
		Eventually(func() int64 {
			size = discoverySize(ctx, inflated[0].Shoot.Config)
			return size
		}).WithTimeout(shootTimeout).WithPolling(time.Second).Should(BeNumerically(">=", inflatedDiscoveryBytes))
		AddReportEntry("discovery document", fmt.Sprintf("the shoots' /apis is %.1f MB", float64(size)/1e6))

		var (
			attackMemory func() (int64, kubelet.Memory)
			before       kubelet.Memory
		)
		if sb.Deployed() {
			var err error
			before, err = sb.ExtensionMemory()
			Expect(err).NotTo(HaveOccurred())
			attackMemory = sampleMemory(ctx)
		}

		By(fmt.Sprintf("following the shoots' state through three health check periods (%s each) while healthy projects are served", sandbox.HealthCheckSyncPeriod))
		start := time.Now()
		checked := make(chan error, 1)
		go func() { checked <- followInflatedShoots(ctx, inflated, start.Add(3*sandbox.HealthCheckSyncPeriod)) }()
		healthy := createHealthyTenants(ctx, prefix)
		healthy.expectPropagation(ctx, "release")
		Eventually(checked).WithTimeout(4 * healthTimeout).Should(Receive(Succeed()))

		if attackMemory != nil {
			highest, after := attackMemory()
			addHeapReport(ctx, "discovery heap")
			AddReportEntry("discovery memory", fmt.Sprintf("extension RSS %s before, %s after, at most %.1f MiB during %s of health checks of %d inflated shoots (bound: the chart's memory limit, %s)",
				before, after, float64(highest)/(1<<20), time.Since(start).Round(time.Second), len(inflated), chartMemoryLimit.String()))
			Expect(highest).To(BeNumerically("<=", chartMemoryLimit.Value()), "the extension's RSS exceeded the chart's memory limit")
		}
	})
})
