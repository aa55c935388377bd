// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var (
	// gardenOutage is how long the garden API server is down while the extension retries.
	gardenOutage = 15 * time.Second
	// seedOutage is how long the seed API server is down.
	seedOutage = 10 * time.Second
	// crowdSize is the number of shoots of one project reconciled at the same time.
	crowdSize = 50
	// crowdTimeout bounds the first reconcile of all crowd shoots; their ManagedResources are
	// applied by one shared resource manager.
	crowdTimeout = 4 * time.Minute
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
		project := "goutage"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", SharedControlPlane: true})
		before := snapshotManagedResources(ctx, h)
		keySecret, keys := deployKeys(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))

		By("stopping the garden API server and asking for a reconcile")
		// After the outage, the extension's garden informer lists and watches again only when its
		// backoff allows, up to a minute later; until then its ConfigMaps are stale. The scenarios
		// after this one create project ConfigMaps and expect them to be seen within seconds, so
		// they get an extension with a fresh garden cache. This cleanup runs after the garden API
		// server's restart below.
		DeferCleanup(func(ctx SpecContext) error {
			if err := sb.StopExtension(); err != nil {
				return err
			}
			return sb.StartExtension(ctx)
		})
		DeferCleanup(sb.Garden.StartAPIServer)
		Expect(sb.Garden.StopAPIServer()).To(Succeed())
		// gardenlet cannot start a shoot operation without the garden; it retries the extension
		// step of one under way.
		Expect(h.RetryExtension(ctx)).To(Succeed())
		attempts, lastErr := operationAttempts(ctx, h, gardenOutage)

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
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("garden recovery", fmt.Sprintf("Succeeded %s after the garden API server was back", time.Since(start).Round(time.Millisecond)))
		Expect(snapshotManagedResources(ctx, h)).To(Equal(before))
		afterSecret, after := deployKeys(ctx, projectNamespace)
		Expect(afterSecret.UID).To(Equal(keySecret.UID))
		Expect(after).To(Equal(keys))
	})

	It("converges after the seed API server was restarted", func(ctx SpecContext) {
		project := "soutage"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "main", "public"))
		h := createShootSucceeded(ctx, sandbox.ShootSpec{Project: project, Name: "one", SharedControlPlane: true})
		// The extension may have reconciled before its garden cache saw the new ConfigMap (its watch
		// may still be backing off from an earlier garden outage); the ConfigMap's event brings the
		// shoot up to date.
		Eventually(func(g Gomega) {
			status, err := h.ProviderStatus(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).NotTo(BeNil())
			g.Expect(status.Ref).To(Equal("branch:main"))
		}).WithTimeout(reconcileTimeout).Should(Succeed())
		Expect(h.Checkpoint(ctx)).To(Succeed())

		By("changing the project ConfigMap while the seed API server is down")
		DeferCleanup(sb.Seed.StartAPIServer)
		Expect(sb.Seed.StopAPIServer()).To(Succeed())
		setProjectConfig(ctx, projectNamespace, legacyConfig(publicURL, "next", "public"))
		Expect(sandbox.Sleep(ctx, seedOutage)).To(Succeed())

		By("starting the seed API server again")
		Expect(sb.Seed.StartAPIServer()).To(Succeed())
		start := time.Now()
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("seed recovery", fmt.Sprintf("Succeeded %s after the seed API server was back", time.Since(start).Round(time.Millisecond)))

		ex, err := h.Extension(ctx)
		Expect(err).NotTo(HaveOccurred())
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Ref).To(Equal("branch:next"), "status %s", mustJSON(ex.Status))
		Expect(appliedManagedResource(ctx, h, constants.ManagedResourceBootstrap)).To(Succeed())
		objects, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(mustJSON(objects))).To(ContainSubstring(`"branch":"next"`))
	})

	It("gives 50 shoots of a project that are reconciled at the same time one deploy key", func(ctx SpecContext) {
		project := "crowd"
		projectNamespace := newProject(ctx, project)
		setProjectConfig(ctx, projectNamespace, legacyConfig(git.URL(repoName), "main", "private"))

		By(fmt.Sprintf("running the extension with %d workers", crowdSize))
		restartExtension(ctx, sandbox.ExtensionSettings{MaxConcurrentReconciles: crowdSize})

		shoots := make([]*sandbox.ShootHandle, crowdSize)
		Expect(inParallel(crowdSize, func(i int) error {
			h, err := sb.CreateShoot(ctx, sandbox.ShootSpec{Project: project, Name: fmt.Sprintf("s%02d", i), SharedControlPlane: true, DeferExtension: true})
			shoots[i] = h
			return err
		})).To(Succeed())
		for _, h := range shoots {
			if h != nil {
				DeferCleanup(func(ctx SpecContext) error { return h.Stop(ctx) })
			}
		}

		By("creating all Extensions at once")
		start := time.Now()
		Expect(inParallel(crowdSize, func(i int) error { return shoots[i].CreateExtension(ctx) })).To(Succeed())
		Expect(inParallel(crowdSize, func(i int) error {
			_, err := shoots[i].WaitSucceeded(ctx, crowdTimeout)
			return err
		})).To(Succeed())
		AddReportEntry("crowd", fmt.Sprintf("%d shoots Succeeded %s after their Extensions were created", crowdSize, time.Since(start).Round(time.Millisecond)))

		_, keys := deployKeys(ctx, projectNamespace)
		Expect(keys).To(HaveLen(1))
		publicKey := keys[0].Pub
		identity := string(keys[0].Identity)
		for _, h := range shoots {
			status, err := h.ProviderStatus(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.PublicKey).To(Equal(publicKey), "shoot %s", h.Name)
			objects, err := h.ManagedResourceObjects(ctx, constants.ManagedResourceBootstrap)
			Expect(err).NotTo(HaveOccurred())
			Expect(credentialsIdentity(objects)).To(Equal(identity), "shoot %s", h.Name)
		}
	})
})

// operationAttempts follows the shoot's Extension from the last checkpoint for d and counts the
// operations that started (lastOperation turned Processing); it also returns the last error
// reported. After a re-read, states in between may be missing, so the count is a lower bound.
func operationAttempts(ctx context.Context, h *sandbox.ShootHandle, d time.Duration) (int, *gardencorev1beta1.LastError) {
	GinkgoHelper()
	var (
		attempts int
		lastErr  *gardencorev1beta1.LastError
		state    gardencorev1beta1.LastOperationState
	)
	Expect(h.WatchExtension(ctx, d, func(ex *extensionsv1alpha1.Extension, _ bool) (bool, error) {
		if ex.Status.LastError != nil {
			lastErr = ex.Status.LastError
		}
		if op := ex.Status.LastOperation; op != nil {
			if op.State == gardencorev1beta1.LastOperationStateProcessing && state != op.State {
				attempts++
			}
			state = op.State
		}
		return false, nil
	})).To(Succeed())
	return attempts, lastErr
}

// credentialsIdentity returns the identity of the git credentials Secret among the objects of a
// bootstrap ManagedResource.
func credentialsIdentity(objects []*unstructured.Unstructured) string {
	GinkgoHelper()
	for _, o := range objects {
		if o.GetKind() != "Secret" || o.GetName() != constants.GitCredentialsSecretName {
			continue
		}
		encoded, _, err := unstructured.NestedString(o.Object, "data", constants.SecretKeyIdentity)
		Expect(err).NotTo(HaveOccurred())
		identity, err := base64.StdEncoding.DecodeString(encoded)
		Expect(err).NotTo(HaveOccurred())
		return string(identity)
	}
	return ""
}

// inParallel runs fn for 0..n-1 at the same time and returns all errors.
func inParallel(n int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		wg.Go(func() {
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
