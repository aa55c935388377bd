// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/handover"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rollout"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/source"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// NewActuator returns the actuator of shoot-flux Extensions. seedClient should be the manager's
// (cached) client, seedReader one that reads the seed's API server (for kinds the seed has many
// of, which the extension must not watch), gardenClient a client of the garden cluster
// (gardencluster.Client). A nil lifecycle is built from cfg (tools and tests).
func NewActuator(seedClient client.Client, seedReader client.Reader, gardenClient client.Client, recorder events.EventRecorder, cfg config.ControllerConfiguration, lifecycle *releases.Lifecycle) extension.Actuator {
	knownHostsLimits := sshkey.KnownHostsLimits(cfg.Limits.KnownHosts()).OrDefault()
	privateKeyLimits := sshkey.PrivateKeyLimits(cfg.Limits.PrivateKey()).OrDefault()
	if lifecycle == nil {
		lifecycle = releases.New(cfg.Rollout.Releases, manifests.SupportedVersions())
	}
	keys := &deploykey.Manager{
		Client:                gardenClient,
		Algorithm:             source.KeyAlgorithm(cfg),
		ScanTimeout:           cfg.Timeouts.HostKeyScan.Duration,
		ExtraKnownHosts:       []byte(cfg.KnownHosts),
		KnownHostsLimits:      knownHostsLimits,
		MaxDataKeys:           int(cfg.Limits.DeployKeysMaxEntries),
		MaxRotatedKeys:        int(cfg.Limits.DeployKeysMaxRotatedKeys),
		PrivateKeyLimits:      privateKeyLimits,
		AllowInsecureHostKeys: cfg.AllowInsecureHostKeys,
	}
	return &actuator{
		client:           seedClient,
		reader:           seedReader,
		garden:           gardenClient,
		config:           cfg,
		lifecycle:        lifecycle,
		recorder:         recorder,
		knownHostsLimits: knownHostsLimits,
		clock:            clock.RealClock{},
		keys:             keys,
		sources: &source.Resolver{Seed: seedClient, Garden: gardenClient, Config: cfg,
			KnownHostsLimits: knownHostsLimits, PrivateKeyLimits: privateKeyLimits, Keys: keys},
	}
}

type actuator struct {
	client client.Client
	// reader reads from the seed's API server.
	reader client.Reader
	garden client.Client
	config config.ControllerConfiguration
	// lifecycle is the operator's lifecycle of the embedded releases.
	lifecycle *releases.Lifecycle
	// recorder writes the events of the Extensions.
	recorder events.EventRecorder
	// knownHostsLimits bound the source.knownHosts tenants write.
	knownHostsLimits sshkey.KnownHostsLimits
	keys             *deploykey.Manager
	sources          *source.Resolver
	// clock tells the time for the maintenance time windows.
	clock clock.PassiveClock
}

// ApplyFailedRetry is when a reconcile that gardener-resource-manager could not apply is retried,
// unless a change comes first: the resource manager retries the apply itself, the extension only
// looks again (see docs/development/architecture.md#reconcile, step 5).
var ApplyFailedRetry = 15 * time.Second

// ReasonReleaseExpired is the reason of the Extension's event about a move off an expired release.
const ReasonReleaseExpired = "ReleaseExpired"

// Reconcile resolves the configuration, ensures credentials and deploys both ManagedResources.
// Everything that can fail on user input happens before the first write, so a bad input leaves the
// last good deployment in place.
func (a *actuator) Reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.reconcile(ctx, log, ex)
	if failed := (*managedresource.ApplyFailedError)(nil); errors.As(err, &failed) {
		// The extension library reports the cause in lastError and requeues without an error.
		return &reconcilerutils.RequeueAfterError{Cause: err, RequeueAfter: ApplyFailedRetry}
	}
	return err
}

func (a *actuator) reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	cluster, err := getCluster(ctx, a.client, ex)
	if err != nil {
		return err
	}
	cfg, requested, configHash, err := a.resolveConfig(ctx, cluster.Shoot.Namespace, ex)
	if err != nil {
		return err
	}
	previous, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil {
		// The deploy key migration and the downgrade check read it; a status that cannot be read
		// is replaced below.
		log.Info("Ignoring unreadable provider status", "reason", err.Error())
	}

	selection, err := rollout.Select(log, a.lifecycle, rollout.Input{Config: cfg, Requested: requested, Previous: previous,
		Shoot: cluster.Shoot, Window: a.config.Rollout.Window, Now: a.clock.Now()})
	if err != nil {
		return err
	}
	src, err := a.sources.Resolve(ctx, log, source.Request{SeedNamespace: ex.Namespace, Cluster: cluster, Config: cfg, Previous: previous})
	if err != nil {
		return err
	}
	values, err := a.controllerValues(cfg, src.InsecureHostKeys)
	if err != nil {
		return err
	}
	images, err := manifests.Images(values.Flux, values.Kluctl)
	if err != nil {
		return fmt.Errorf("failed determining the controller images: %w", err)
	}
	hibernated := isHibernated(cluster)
	// A repository that manages Flux itself keeps the controllers: no CRD of the extension's changes.
	leftToRepository, err := a.leaveRunningFlux(ctx, log, ex, cfg, values, hibernated, selection.Unfit)
	if err != nil {
		return err
	}
	var stored *fluxv1alpha1.StoredVersions
	if leftToRepository == "" {
		if stored, err = a.migrateStoredVersions(ctx, log, ex, cfg, previous, values, hibernated); err != nil {
			return err
		}
	}
	// The bootstrap objects need the CRDs and namespaces of the controllers.
	handedOver, err := handover.Reconcile(ctx, log, handover.Request{Controllers: a.controllers(ex.Namespace, values), Values: values,
		Management: cfg.Flux.Management, State: ex.Status.State, Hibernated: hibernated,
		Deploy: func(ctx context.Context, mr *managedresource.ManagedResource) error {
			return mr.DeployAndWait(ctx, hibernated)
		}})
	if err != nil {
		return err
	}

	status := a.newStatus(statusParts{ex: ex, cluster: cluster, cfg: cfg, requested: requested, configHash: configHash, previous: previous,
		selection: selection, source: src, images: images, storedVersions: stored, handover: handedOver, adoptionWarning: leftToRepository})
	if err := a.reconcileBootstrap(ctx, ex.Namespace, src.Values, status, hibernated); err != nil {
		return err
	}
	if err := a.reconcileMonitoring(ctx, ex.Namespace, cfg, src.Values != nil); err != nil {
		return err
	}
	if err := a.updateStatus(ctx, ex, status, handedOver.Handover); err != nil {
		return err
	}
	for _, m := range selection.Moves {
		a.recorder.Eventf(ex, nil, corev1.EventTypeNormal, ReasonReleaseExpired, "Reconcile", "Moved %s from %s, which expired on %s, to %s",
			m.Component, m.From, m.ExpirationDate.UTC().Format(time.DateOnly), m.To)
	}
	return nil
}

// reconcileBootstrap deploys the bootstrap objects, or removes them when the configuration no
// longer asks for them. The shoot owner sees in the shoot what the providerStatus tells.
func (a *actuator) reconcileBootstrap(ctx context.Context, namespace string, values *bootstrap.Values, status *fluxv1alpha1.FluxStatus, hibernated bool) error {
	if values == nil {
		if err := a.destroyBootstrapIfExists(ctx, namespace, hibernated); err != nil {
			return fmt.Errorf("failed removing the bootstrap objects: %w", err)
		}
		return nil
	}
	values.Status = status
	if err := a.bootstrap(namespace, *values).DeployAndWait(ctx, hibernated); err != nil {
		return fmt.Errorf("failed deploying the bootstrap objects: %w", err)
	}
	return nil
}

// ForceDelete removes the ManagedResources without waiting; gardenlet finalizes them later in the
// force-deletion flow.
func (a *actuator) ForceDelete(ctx context.Context, _ logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if err := a.monitoring(ex.Namespace, monitoring.Values{}).Destroy(ctx); err != nil {
		return err
	}
	if err := a.bootstrap(ex.Namespace, bootstrap.Values{}).Destroy(ctx); err != nil {
		return err
	}
	return a.controllers(ex.Namespace, controllers.Values{}).Destroy(ctx)
}

// Migrate releases the ManagedResources without touching the shoot: the objects keep running
// while the control plane moves to another seed. The monitoring objects belong to the shoot's
// Prometheus of this seed and go; the destination seed's reconcile creates them there.
func (a *actuator) Migrate(ctx context.Context, _ logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if err := a.monitoring(ex.Namespace, monitoring.Values{}).Destroy(ctx); err != nil {
		return err
	}
	if err := a.bootstrap(ex.Namespace, bootstrap.Values{}).Migrate(ctx); err != nil {
		return err
	}
	return a.controllers(ex.Namespace, controllers.Values{}).Migrate(ctx)
}

// Restore reconciles: deploy keys live in the garden, nothing from the old seed is needed.
func (a *actuator) Restore(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	return a.Reconcile(ctx, log, ex)
}
