package integration

import (
	"context"
	"fmt"
	"math"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	// gardenOutage is how long the garden API server is down while the extension retries.
	gardenOutage = 15 * time.Second
	// watchRestarts bounds how often a watch that the API server ended is resumed.
	watchRestarts = 100
)

// firstRetryDelay is the first delay of controller-runtime's default rate limiter, which doubles
// with every failure of the same object.
const firstRetryDelay = 5 * time.Millisecond

// maxAttemptsWithBackoff is how many attempts exponential backoff allows within d: the attempts
// after the first wait 5ms, 10ms, 20ms, ... A hot loop would make hundreds. Two more are allowed
// for events that enqueue the Extension besides the retries.
func maxAttemptsWithBackoff(d time.Duration) int {
	return int(math.Floor(math.Log2(float64(d)/float64(firstRetryDelay)+1))) + 1 + 2
}

var _ = Describe("Faults", func() {
	It("keeps the ManagedResources and backs off while the garden API server is down, and recovers", func(ctx SpecContext) {
		project := "garden-outage"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", SharedControlPlane: true})
		before := snapshotManagedResources(ctx, h)
		keys := deployKeySecrets(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))

		By("stopping the garden API server and asking for a reconcile")
		DeferCleanup(sb.Garden.StartAPIServer)
		Expect(sb.Garden.StopAPIServer()).To(Succeed())
		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.TriggerReconcile(ctx)).To(Succeed())
		attempts, lastErr := operationAttempts(ctx, h, ex.ResourceVersion, gardenOutage)

		limit := maxAttemptsWithBackoff(gardenOutage)
		AddReportEntry("garden outage", fmt.Sprintf("%d reconcile attempts in %s (backoff allows %d)", attempts, gardenOutage, limit))
		Expect(attempts).To(BeNumerically(">=", 3), "the extension should keep retrying")
		Expect(attempts).To(BeNumerically("<=", limit), "the extension should back off")
		Expect(lastErr).NotTo(BeNil())
		Expect(lastErr.Description).To(ContainSubstring("deploy key"))
		Expect(snapshotManagedResources(ctx, h)).To(Equal(before), "a failed reconcile must not touch the ManagedResources")

		By("starting the garden API server again")
		Expect(sb.Garden.StartAPIServer()).To(Succeed())
		start := time.Now()
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("garden recovery", fmt.Sprintf("Succeeded %s after the garden API server was back", time.Since(start).Round(time.Millisecond)))
		Expect(snapshotManagedResources(ctx, h)).To(Equal(before))
		after := deployKeySecrets(ctx, projectNamespace)
		Expect(after).To(HaveLen(1))
		Expect(after[0].UID).To(Equal(keys[0].UID))
	})

})

// operationAttempts watches the shoot's Extension from resourceVersion for d and counts the
// operations that started (lastOperation turned Processing); it also returns the last error
// reported.
func operationAttempts(ctx context.Context, h *sandbox.ShootHandle, resourceVersion string, d time.Duration) (int, *gardencorev1beta1.LastError) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		attempts int
		lastErr  *gardencorev1beta1.LastError
		state    gardencorev1beta1.LastOperationState
	)
	for range watchRestarts {
		w, err := sb.Seed.Client.Watch(ctx, &extensionsv1alpha1.ExtensionList{}, &client.ListOptions{
			Namespace:     h.SeedNamespace,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", sandbox.ExtensionName),
			Raw:           &metav1.ListOptions{ResourceVersion: resourceVersion},
		})
		if ctx.Err() != nil {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		for ev := range w.ResultChan() {
			ex, ok := ev.Object.(*extensionsv1alpha1.Extension)
			if ev.Type == watch.Error || !ok {
				continue
			}
			resourceVersion = ex.ResourceVersion
			if ex.Status.LastError != nil {
				lastErr = ex.Status.LastError
			}
			if op := ex.Status.LastOperation; op != nil {
				if op.State == gardencorev1beta1.LastOperationStateProcessing && state != op.State {
					attempts++
				}
				state = op.State
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return attempts, lastErr
}
