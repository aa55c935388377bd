// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	// noisyShoots have a bootstrap that cannot be applied; quietShoots are healthy.
	noisyShoots = 30
	quietShoots = 10
	// tenantWorkers is the number of the extension's workers in the starvation scenario, fewer
	// than there are broken shoots.
	tenantWorkers = 20
	// noisyTimeout bounds the wait for all broken shoots to report the resource manager's message.
	noisyTimeout = 2 * time.Minute
)

// unappliableShoot is a shoot whose bootstrap ManagedResource cannot be applied: an additional
// Secret goes into a namespace that does not exist in the shoot. The Secret pull must exist in
// the project namespace.
func unappliableShoot(project, name string, shared bool) sandbox.ShootSpec {
	return sandbox.ShootSpec{
		Project:            project,
		Name:               name,
		SharedControlPlane: shared,
		ProviderConfig:     []byte(`{"additionalSecretResources":[{"name":"pull","namespace":"does-not-exist"}]}`),
		Resources: []gardencorev1beta1.NamedResourceReference{{
			Name:        "pull",
			ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: "pull"},
		}},
	}
}

// unappliableMessages are what the resource manager's report about the bootstrap of an
// unappliable shoot says.
func unappliableMessages(h *sandbox.ShootHandle) []string {
	return []string{
		`gardener-resource-manager cannot apply managed resource ` + h.SeedNamespace + `/extension-shoot-flux-bootstrap`,
		`namespaces "does-not-exist" not found`,
	}
}

// expectUnappliable checks that an error is the resource manager's report about the bootstrap of
// an unappliable shoot.
func expectUnappliable(h *sandbox.ShootHandle, lastErr *gardencorev1beta1.LastError) {
	GinkgoHelper()
	for _, msg := range unappliableMessages(h) {
		Expect(lastErr.Description).To(ContainSubstring(msg), "shoot %s", h.Name)
	}
}

// waitUnappliable waits until the Extension of an unappliable shoot reports the resource manager's
// message about its bootstrap, and returns the last error it reported; after the timeout that is
// another one, which expectUnappliable shows. Light shoots may fail on
// the way for other reasons: their resource manager writes the same objects for every shoot, and
// concurrent writes conflict until it retries.
func waitUnappliable(ctx context.Context, h *sandbox.ShootHandle, timeout time.Duration) (*gardencorev1beta1.LastError, error) {
	var lastErr *gardencorev1beta1.LastError
	err := h.WatchExtension(ctx, timeout, func(ex *extensionsv1alpha1.Extension, _ bool) (bool, error) {
		if ex.Status.LastError == nil {
			return false, nil
		}
		lastErr = ex.Status.LastError
		for _, msg := range unappliableMessages(h) {
			if !strings.Contains(lastErr.Description, msg) {
				return false, nil
			}
		}
		return true, nil
	})
	return lastErr, err
}

// newUnappliableProject creates a project with a public repository and the Secret pull that
// unappliable shoots reference.
func newUnappliableProject(ctx context.Context, project string) {
	GinkgoHelper()
	projectNamespace := newProject(ctx, project)
	setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
	Expect(sb.Garden.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: "pull"},
		Data:       map[string][]byte{"token": []byte("x")},
	})).To(Succeed())
}

// createShoots creates shoots from specs at the same time; each is stopped when the scenario ends.
func createShoots(ctx context.Context, specs []sandbox.ShootSpec) []*sandbox.ShootHandle {
	GinkgoHelper()
	shoots := make([]*sandbox.ShootHandle, len(specs))
	err := inParallel(len(specs), func(i int) error {
		h, err := sb.CreateShoot(ctx, specs[i])
		shoots[i] = h
		return err
	})
	for _, h := range shoots {
		if h != nil {
			DeferCleanup(func(ctx SpecContext) error { return h.Stop(ctx) })
		}
	}
	Expect(err).NotTo(HaveOccurred())
	return shoots
}

var _ = Describe("Tenant isolation", func() {
	// The wait for the bootstrap ManagedResource is bounded by timeouts.managedResourceApplied (2m);
	// a shoot whose bootstrap cannot be applied must give its worker back long before that.
	It("reports an unappliable bootstrap with the resource manager's message instead of waiting for the timeout", Label(labelDeployed), func(ctx SpecContext) {
		project := "unapply"
		newUnappliableProject(ctx, project)

		start := time.Now()
		h := createShoot(ctx, unappliableShoot(project, "one", false))
		lastErr, err := h.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		expectUnappliable(h, lastErr)
		By("the error arrived after " + time.Since(start).Round(time.Second).String())
	})

	// Broken shoots are retried with backoff, and every attempt holds a worker while it waits for
	// the resource manager. Healthy shoots created while more broken shoots than there are workers
	// keep failing must not wait for them.
	It("lets healthy shoots succeed within 30s while more broken shoots than workers keep failing", func(ctx SpecContext) {
		newUnappliableProject(ctx, "noisy")
		quietNamespace := newProject(ctx, "quiet")
		setProjectConfig(ctx, quietNamespace, legacyConfig(publicURL, "main", "public"))

		By(fmt.Sprintf("running the extension with %d workers", tenantWorkers))
		restartExtension(ctx, sandbox.ExtensionSettings{MaxConcurrentReconciles: tenantWorkers})

		By(fmt.Sprintf("creating %d shoots with an unappliable bootstrap and waiting for their errors", noisyShoots))
		noisySpecs := make([]sandbox.ShootSpec, noisyShoots)
		for i := range noisySpecs {
			noisySpecs[i] = unappliableShoot("noisy", fmt.Sprintf("n%02d", i), true)
		}
		noisyStart := time.Now()
		noisy := createShoots(ctx, noisySpecs)
		errs := make([]*gardencorev1beta1.LastError, len(noisy))
		Expect(inParallel(len(noisy), func(i int) error {
			var err error
			errs[i], err = waitUnappliable(ctx, noisy[i], noisyTimeout)
			return err
		})).To(Succeed())
		for i, h := range noisy {
			expectUnappliable(h, errs[i])
		}
		AddReportEntry("broken shoots", fmt.Sprintf("%d broken shoots reported the resource manager's message %s after their creation",
			noisyShoots, time.Since(noisyStart).Round(time.Millisecond)))

		By(fmt.Sprintf("creating %d healthy shoots while the broken ones are retried", quietShoots))
		quietSpecs := make([]sandbox.ShootSpec, quietShoots)
		for i := range quietSpecs {
			quietSpecs[i] = sandbox.ShootSpec{Project: "quiet", Name: fmt.Sprintf("q%02d", i), SharedControlPlane: true}
		}
		start := time.Now()
		quiet := createShoots(ctx, quietSpecs)
		took := make([]time.Duration, len(quiet))
		Expect(inParallel(len(quiet), func(i int) error {
			_, err := quiet[i].WaitSucceeded(ctx, reconcileTimeout)
			took[i] = time.Since(start)
			return err
		})).To(Succeed())
		AddReportEntry("healthy shoots", fmt.Sprintf("%d healthy shoots Succeeded %s after their creation next to %d failing ones on %d workers (%s)",
			quietShoots, slices.Max(took).Round(time.Millisecond), noisyShoots, tenantWorkers, latencyBudgets))

		By("checking that the broken shoots still report the resource manager's message")
		for _, h := range noisy {
			ex, err := h.Extension(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(ex.Status.LastError).NotTo(BeNil(), "shoot %s", h.Name)
			expectUnappliable(h, ex.Status.LastError)
		}
	})
})
