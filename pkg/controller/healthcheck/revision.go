// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// RevisionReportDelay is how long the RevisionReporter waits after a check before it writes. The
// health check library writes the whole Extension status with a versioned Update right after the
// checks of a run; a write of ours in between would make that Update fail on a conflict. The
// delay lets the run finish first, and the next run comes a sync period later.
var RevisionReportDelay = 2 * time.Second

// RevisionReporter records the revision the bootstrap last applied in the shoot in the
// Extension's providerStatus (lastAppliedRevision), where operators and gardenctl users find it
// next to the rest of the state. The actuator owns the providerStatus but does not read the
// shoot; it keeps the recorded revision, and the reporter updates just that field with a merge
// patch, which needs no resourceVersion and leaves the actuator's fields alone.
type RevisionReporter struct {
	client client.Client
	log    logr.Logger
	delay  time.Duration
	queue  workqueue.TypedRateLimitingInterface[types.NamespacedName]

	mu      sync.Mutex
	pending map[types.NamespacedName]string
}

var _ manager.LeaderElectionRunnable = (*RevisionReporter)(nil)

// NewRevisionReporter returns a reporter that writes with c after delay.
func NewRevisionReporter(c client.Client, log logr.Logger, delay time.Duration) *RevisionReporter {
	return &RevisionReporter{
		client: c,
		log:    log,
		delay:  delay,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "shoot-flux-revision"},
		),
		pending: map[types.NamespacedName]string{},
	}
}

// Report asks to record revision for the Extension named by key. A later report for the same
// Extension replaces one that is not written yet.
func (r *RevisionReporter) Report(key types.NamespacedName, revision string) {
	r.mu.Lock()
	r.pending[key] = revision
	r.mu.Unlock()
	r.queue.AddAfter(key, r.delay)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader runs the checks.
func (r *RevisionReporter) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable.
func (r *RevisionReporter) Start(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for r.next(ctx) {
	}
	return nil
}

func (r *RevisionReporter) next(ctx context.Context) bool {
	key, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(key)

	r.mu.Lock()
	revision, ok := r.pending[key]
	r.mu.Unlock()
	if !ok {
		r.queue.Forget(key)
		return true
	}
	if err := r.write(ctx, key, revision); err != nil {
		r.log.Error(err, "Failed recording the last applied revision", "extension", key)
		r.queue.AddRateLimited(key)
		return true
	}
	r.mu.Lock()
	if r.pending[key] == revision {
		delete(r.pending, key)
	}
	r.mu.Unlock()
	r.queue.Forget(key)
	return true
}

func (r *RevisionReporter) write(ctx context.Context, key types.NamespacedName, revision string) error {
	ex := &extensionsv1alpha1.Extension{}
	if err := r.client.Get(ctx, key, ex); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed reading extension: %w", err)
	}
	// Without a bootstrap in the status the revision belongs to objects being removed; the
	// actuator writes the status a reconcile needs, not the reporter.
	if status := bootstrapStatus(ex); status == nil || status.LastAppliedRevision == revision {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"providerStatus": map[string]any{"lastAppliedRevision": revision}}})
	if err != nil {
		return err
	}
	if err := r.client.Status().Patch(ctx, ex, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("failed patching provider status: %w", err)
	}
	r.log.Info("Recorded the last applied revision", "extension", key, "revision", revision)
	return nil
}
