// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"time"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
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
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
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
	knownHostsLimits := sshkey.KnownHostsLimits(cfg.Limits.KnownHosts())
	if knownHostsLimits == (sshkey.KnownHostsLimits{}) {
		// A configuration that was not defaulted (tools, tests) gets the default bounds, never none.
		knownHostsLimits = sshkey.DefaultKnownHostsLimits()
	}
	privateKeyLimits := sshkey.PrivateKeyLimits(cfg.Limits.PrivateKey())
	if privateKeyLimits == (sshkey.PrivateKeyLimits{}) {
		privateKeyLimits = sshkey.DefaultPrivateKeyLimits()
	}
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
	leftToRepository, err := a.leaveSelfManagedFlux(ctx, log, ex, cfg, values, hibernated, selection.Unfit)
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
			return deployAndWait(ctx, mr, hibernated)
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
	if err := deployAndWait(ctx, a.bootstrap(namespace, *values), hibernated); err != nil {
		return fmt.Errorf("failed deploying the bootstrap objects: %w", err)
	}
	return nil
}

// Delete disables the extension for the shoot without taking anything from the user's workloads
// (see docs/usage/deletion.md#what-disabling-does): the bootstrap objects go first, while the
// controllers still run and remove their finalizers without pruning, then the controllers, whose
// CRDs and namespaces the resource manager keeps. With stackit's providerConfig nothing goes.
func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	cluster, err := getCluster(ctx, a.client, ex)
	if err != nil {
		return err
	}
	// The shoot owner gets no alerts about controllers that are going away.
	if err := a.monitoring(ex.Namespace, monitoring.Values{}).Destroy(ctx); err != nil {
		return fmt.Errorf("failed removing the shoot's monitoring: %w", err)
	}

	boot := a.bootstrap(ex.Namespace, bootstrap.Values{})
	ctrls := a.controllers(ex.Namespace, controllers.Values{})
	if fluxconfig.ProviderConfigConversion(ex.Spec.ProviderConfig, manifests.SupportedVersions()) != nil {
		// A shoot switched from stackit's extension, whose disabling removed nothing: the
		// repository's Kustomizations reference the flux-system objects by name and Flux may
		// manage itself from them. Everything stays in the shoot, as it did there.
		log.Info("Leaving the bootstrap objects and the controllers of stackit's providerConfig in the shoot")
		if err := leave(ctx, boot, isHibernated(cluster)); err != nil {
			return fmt.Errorf("failed releasing the bootstrap objects: %w", err)
		}
		if err := leave(ctx, ctrls, isHibernated(cluster)); err != nil {
			return fmt.Errorf("failed releasing the controllers: %w", err)
		}
		return a.forgetShootKeys(ctx, log, cluster)
	}
	if isHibernated(cluster) {
		// Nobody can wait for the controllers to remove their finalizers; the shoot's resource
		// manager deletes both ManagedResources at once when the shoot wakes up, so the bootstrap
		// objects stay, like the users' objects.
		if err := boot.DestroyKeepingObjects(ctx); err != nil {
			return fmt.Errorf("failed removing the bootstrap objects: %w", err)
		}
		if err := handover.Destroy(ctx, log, ctrls, false); err != nil {
			return fmt.Errorf("failed removing the controllers: %w", err)
		}
		return a.forgetShootKeys(ctx, log, cluster)
	}

	grace := a.config.Timeouts.BootstrapFinalizers.Duration
	left, err := boot.DestroyReleasingAfter(ctx, grace)
	if err != nil {
		return fmt.Errorf("failed removing the bootstrap objects: %w", err)
	}
	if left {
		log.Info("Left the bootstrap objects in the shoot: their controller did not remove its finalizers", "grace", grace)
	}
	if err := handover.Destroy(ctx, log, ctrls, true); err != nil {
		return fmt.Errorf("failed removing the controllers: %w", err)
	}
	return a.forgetShootKeys(ctx, log, cluster)
}

// leave deletes a ManagedResource and leaves its objects in the shoot; a hibernated shoot's resource
// manager removes it when the shoot wakes up.
func leave(ctx context.Context, mr *managedresource.ManagedResource, hibernated bool) error {
	if hibernated {
		return mr.DestroyKeepingObjects(ctx)
	}
	return mr.Migrate(ctx)
}

// forgetShootKeys removes shoot-scoped deploy keys once the Shoot itself is deleted; disabling the
// extension keeps them for a later enable.
func (a *actuator) forgetShootKeys(ctx context.Context, log logr.Logger, cluster *extensionscontroller.Cluster) error {
	if cluster.Shoot.DeletionTimestamp == nil || source.KeyScope(a.config) != deploykey.ScopeShoot {
		return nil
	}
	log.Info("Removing the shoot's deploy keys", "secret", client.ObjectKey{Namespace: cluster.Shoot.Namespace, Name: constants.DeployKeysSecretName})
	if err := a.keys.Forget(ctx, cluster.Shoot.Namespace, cluster.Shoot.Name); err != nil {
		return fmt.Errorf("failed removing the shoot's deploy keys: %w", err)
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
