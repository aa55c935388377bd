package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/component"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rollout"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// NewActuator returns the actuator of shoot-flux Extensions. seedClient should be the manager's
// (cached) client, seedReader one that reads the seed's API server (for the few objects of kinds
// the seed has many of, which the extension must not watch), gardenClient a client of the garden cluster whose cache holds the project
// ConfigMaps and which fails at once while the garden is not reachable (gardencluster.Client).
func NewActuator(seedClient client.Client, seedReader client.Reader, gardenClient client.Client, recorder events.EventRecorder, cfg config.ControllerConfiguration) extension.Actuator {
	knownHostsLimits := sshkey.KnownHostsLimits(cfg.Limits.KnownHosts())
	if knownHostsLimits == (sshkey.KnownHostsLimits{}) {
		// A configuration that was not defaulted (tools, tests) gets the default bounds, never none.
		knownHostsLimits = sshkey.DefaultKnownHostsLimits()
	}
	return &actuator{
		client:           seedClient,
		reader:           seedReader,
		garden:           gardenClient,
		config:           cfg,
		lifecycle:        releases.New(cfg.Rollout.Releases, manifests.SupportedVersions()),
		recorder:         recorder,
		knownHostsLimits: knownHostsLimits,
		clock:            clock.RealClock{},
		keys: &deploykey.Manager{
			Client:                gardenClient,
			Algorithm:             sshkeyAlgorithm(cfg),
			ScanTimeout:           cfg.Timeouts.HostKeyScan.Duration,
			ExtraKnownHosts:       []byte(cfg.KnownHosts),
			KnownHostsLimits:      knownHostsLimits,
			MaxDataKeys:           int(cfg.Limits.DeployKeysMaxEntries),
			MaxRotatedKeys:        int(cfg.Limits.DeployKeysMaxRotatedKeys),
			AllowInsecureHostKeys: cfg.AllowInsecureHostKeys,
		},
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
	// knownHostsLimits bound every known_hosts a tenant writes: source.knownHosts, the deploy key
	// Secret and the credentials Secret of source.secretResourceName. keys has the same.
	knownHostsLimits sshkey.KnownHostsLimits
	keys             *deploykey.Manager
	// clock tells the time for the maintenance time windows.
	clock clock.PassiveClock
}

// Reconcile resolves the configuration, ensures credentials and deploys both ManagedResources.
// Everything that can fail on user input happens before the first write, so a bad input leaves the
// last good deployment in place.
func (a *actuator) Reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, ex.Namespace)
	if err != nil {
		return fmt.Errorf("failed reading cluster: %w", err)
	}
	if cluster.Shoot == nil {
		return fmt.Errorf("cluster %s has no shoot", ex.Namespace)
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
	pending, moves := a.rolloutReleases(log, cluster, cfg, requested, previous)
	if err := checkDowngrade(previous, cfg); err != nil {
		return err
	}

	status := &fluxv1alpha1.FluxStatus{
		FluxVersion:       cfg.Flux.Version,
		BootstrapMode:     string(cfg.Bootstrap.Mode),
		ProjectConfigHash: configHash,
		Requested:         &fluxv1alpha1.RequestedVersions{Flux: requested.Flux, Kluctl: requested.Kluctl},
		Pending:           pending,
		ForcedMoves:       forcedMoves(previous, moves),
	}
	if cfg.Kluctl.Enabled {
		status.KluctlVersion = cfg.Kluctl.Version
	}

	in, err := a.bootstrapInputs(ctx, log, ex.Namespace, cluster, cfg, previous, status)
	if err != nil {
		return err
	}
	if in.values != nil {
		// The shoot owner sees in the shoot what the providerStatus tells, now complete.
		in.values.Status = status
		// The shoot runs the revision the health check recorded until its controller applies
		// another one; the status patch below would otherwise drop it.
		if previous != nil {
			status.LastAppliedRevision = previous.LastAppliedRevision
		}
	}

	pullSecret, err := a.imagePullSecret()
	if err != nil {
		return err
	}
	values := controllers.Values{
		Flux:   a.fluxOptions(cfg, pullSecret),
		Kluctl: a.kluctlOptions(cfg, in.insecureHostKeys, pullSecret),
	}
	if status.Images, err = manifests.Images(values.Flux, values.Kluctl); err != nil {
		return fmt.Errorf("failed determining the controller images: %w", err)
	}
	hibernated := isHibernated(cluster)
	// The bootstrap objects need the CRDs and namespaces of the controllers.
	if err := a.reconcileControllers(ctx, log, ex, cfg, values, hibernated, status); err != nil {
		return err
	}

	if in.values == nil {
		if err := a.destroyBootstrapIfExists(ctx, ex.Namespace, hibernated); err != nil {
			return fmt.Errorf("failed removing the bootstrap objects: %w", err)
		}
	} else if err := deployAndWait(ctx, a.bootstrap(ex.Namespace, *in.values), hibernated); err != nil {
		return fmt.Errorf("failed deploying the bootstrap objects: %w", err)
	}

	if err := a.reconcileMonitoring(ctx, ex.Namespace, cfg, in.values != nil); err != nil {
		return err
	}

	if err := a.updateStatus(ctx, ex, status); err != nil {
		return err
	}
	for _, m := range moves {
		a.recorder.Eventf(ex, nil, corev1.EventTypeNormal, ReasonReleaseExpired, "Reconcile", "Moved %s from %s, which expired on %s, to %s",
			m.Component, m.From, m.ExpirationDate.UTC().Format(time.DateOnly), m.To)
	}
	return nil
}

// ReasonReleaseExpired is the reason of the Extension's event about a move off an expired release.
const ReasonReleaseExpired = "ReleaseExpired"

// Delete disables the extension for the shoot without taking anything from the user's workloads
// (see docs/usage/deletion.md#what-disabling-does). The bootstrap objects go first, while the controllers still run
// and remove their finalizers without pruning (deletionPolicy Orphan, kluctl's delete: false unless
// the user asked otherwise). Then the controllers go; their CRDs and namespaces carry the resource
// manager's keep-object annotation, so the users' own Flux and kluctl objects stay, unprocessed,
// instead of being deleted with the CRDs or blocking the deletion with their finalizers.
func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	cluster, err := extensionscontroller.GetCluster(ctx, a.client, ex.Namespace)
	if err != nil {
		return fmt.Errorf("failed reading cluster: %w", err)
	}
	if cluster.Shoot == nil {
		return fmt.Errorf("cluster %s has no shoot", ex.Namespace)
	}

	// The shoot owner gets no alerts about controllers that are going away.
	if err := a.monitoring(ex.Namespace, monitoring.Values{}).Destroy(ctx); err != nil {
		return fmt.Errorf("failed removing the shoot's monitoring: %w", err)
	}

	boot := a.bootstrap(ex.Namespace, bootstrap.Values{})
	if isHibernated(cluster) {
		// Without the shoot's resource manager nobody can wait for the controllers to remove their
		// finalizers; it deletes both ManagedResources at once when the shoot wakes up. So the
		// bootstrap objects stay, like the users' objects, instead of hanging on a finalizer of a
		// controller deleted at the same moment.
		if err := boot.DestroyKeepingObjects(ctx); err != nil {
			return fmt.Errorf("failed removing the bootstrap objects: %w", err)
		}
		if err := a.destroyControllers(ctx, log, ex.Namespace, false); err != nil {
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
	if err := a.destroyControllers(ctx, log, ex.Namespace, true); err != nil {
		return fmt.Errorf("failed removing the controllers: %w", err)
	}
	return a.forgetShootKeys(ctx, log, cluster)
}

// forgetShootKeys removes shoot-scoped deploy keys once the Shoot itself is deleted; disabling the
// extension keeps them for a later enable.
func (a *actuator) forgetShootKeys(ctx context.Context, log logr.Logger, cluster *extensionscontroller.Cluster) error {
	if cluster.Shoot.DeletionTimestamp == nil || keyScope(a.config) != deploykey.ScopeShoot {
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

// resolveConfig merges the project ConfigMap and the providerConfig and returns the version
// selectors the two wrote and the ConfigMap's hash.
func (a *actuator) resolveConfig(ctx context.Context, projectNamespace string, ex *extensionsv1alpha1.Extension) (*fluxapi.FluxConfig, fluxconfig.Requested, string, error) {
	cm := &corev1.ConfigMap{}
	if err := a.garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.ProjectConfigMapName}, cm); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, fluxconfig.Requested{}, "", fmt.Errorf("failed reading ConfigMap %s/%s: %w", projectNamespace, constants.ProjectConfigMapName, err)
		}
		cm = nil
	}

	cfg, requested, err := fluxconfig.ResolveRequested(fluxconfig.Defaults{
		FluxVersion:   a.config.DefaultFluxVersion,
		KluctlVersion: a.config.DefaultKluctlVersion,
		Controllers:   a.config.Controllers,
		Limits:        a.config.Limits,
	}, manifests.SupportedVersions(), a.knownHostsLimits, cm, ex.Spec.ProviderConfig)
	if err != nil {
		// Resolve returns configuration errors that carry ERR_CONFIGURATION_PROBLEM already.
		return nil, fluxconfig.Requested{}, "", err
	}
	return cfg, requested, fluxconfig.ConfigMapHash(cm), nil
}

// rolloutReleases sets the Flux and kluctl releases of cfg to install. A release the operator let
// expire is replaced (package releases); a change of the installed releases that nobody of the
// project asked for, such a replacement included, waits for the shoot's maintenance time window
// (package rollout). It returns the pending change, nil if there is none, and the moves off
// expired releases this reconcile makes.
func (a *actuator) rolloutReleases(log logr.Logger, cluster *extensionscontroller.Cluster, cfg *fluxapi.FluxConfig, requested fluxconfig.Requested, previous *fluxv1alpha1.FluxStatus) (*fluxv1alpha1.PendingRelease, []fluxv1alpha1.ForcedMove) {
	now := a.clock.Now()
	var (
		pending fluxv1alpha1.PendingRelease
		reasons []string
		moves   []fluxv1alpha1.ForcedMove
	)
	for _, c := range []struct {
		name      string
		lifecycle releases.Component
		version   *string
		pending   *string
		installed func(*fluxv1alpha1.FluxStatus) string
		request   string
		previous  func(*fluxv1alpha1.RequestedVersions) string
		enabled   bool
	}{
		{"flux", a.lifecycle.Flux, &cfg.Flux.Version, &pending.FluxVersion, func(s *fluxv1alpha1.FluxStatus) string { return s.FluxVersion },
			requested.Flux, func(r *fluxv1alpha1.RequestedVersions) string { return r.Flux }, true},
		{"kluctl", a.lifecycle.Kluctl, &cfg.Kluctl.Version, &pending.KluctlVersion, func(s *fluxv1alpha1.FluxStatus) string { return s.KluctlVersion },
			requested.Kluctl, func(r *fluxv1alpha1.RequestedVersions) string { return r.Kluctl }, cfg.Kluctl.Enabled},
	} {
		if !c.enabled {
			continue
		}
		release, move := c.lifecycle.Replacement(*c.version, now)
		if move != nil && move.To == "" {
			log.Info("Keeping an expired release: no supported release replaces it", "component", c.name, "release", move.From)
		}
		installed := ""
		if previous != nil {
			installed = c.installed(previous)
		}
		if installed == "" {
			// The first installation, or kluctl newly enabled: nothing to keep.
			*c.version = release
		} else {
			change := rollout.Change{Component: c.lifecycle.Name, Installed: installed, Selected: release, Requested: c.request, Embedded: c.lifecycle.Embedded}
			if previous.Requested != nil {
				change.PreviouslyKnown, change.PreviouslyRequested = true, c.previous(previous.Requested)
			}
			if move != nil && move.To != "" {
				change.Forced = move.Reason(c.lifecycle.Name)
			}
			d := rollout.Decide(change, a.config.Rollout.Window, cluster.Shoot, now)
			*c.version, *c.pending = d.Release, d.Pending
			if d.Pending != "" {
				reasons = append(reasons, d.Reason)
			}
		}
		if move != nil && move.To != "" && *c.version == move.To && installed != move.To {
			moves = append(moves, fluxv1alpha1.ForcedMove{Component: c.name, From: move.From, To: move.To,
				ExpirationDate: metav1.Time{Time: move.Expired}, Time: metav1.Time{Time: now}})
		}
	}
	if len(reasons) == 0 {
		return nil, moves
	}
	pending.Reason = strings.Join(reasons, "; ")
	pending.NextMaintenance = &metav1.Time{Time: rollout.NextWindow(cluster.Shoot, now)}
	log.Info("Keeping the installed releases until the shoot's maintenance time window", "pendingFluxVersion", pending.FluxVersion,
		"pendingKluctlVersion", pending.KluctlVersion, "nextMaintenance", pending.NextMaintenance.UTC().Format(time.RFC3339))
	return &pending, moves
}

// forcedMoves returns the last move of each component: those of previous, replaced by the ones
// made now.
func forcedMoves(previous *fluxv1alpha1.FluxStatus, now []fluxv1alpha1.ForcedMove) []fluxv1alpha1.ForcedMove {
	var out []fluxv1alpha1.ForcedMove
	if previous != nil {
		for _, m := range previous.ForcedMoves {
			if !slices.ContainsFunc(now, func(n fluxv1alpha1.ForcedMove) bool { return n.Component == m.Component }) {
				out = append(out, m)
			}
		}
	}
	return append(out, now...)
}

func (a *actuator) timeouts() managedresource.Timeouts {
	return managedresource.Timeouts{Applied: a.config.Timeouts.ManagedResourceApplied.Duration, Deleted: a.config.Timeouts.Deletion.Duration}
}

// bootstrap and controllers return the components of the shoot's two ManagedResources; the
// manager's cached client serves their waits.
func (a *actuator) bootstrap(namespace string, values bootstrap.Values) *managedresource.ManagedResource {
	return bootstrap.New(a.client, a.client, namespace, values, a.timeouts())
}

func (a *actuator) controllers(namespace string, values controllers.Values) *managedresource.ManagedResource {
	return controllers.New(a.client, a.client, namespace, values, a.timeouts())
}

// destroyBootstrapIfExists removes a bootstrap that the configuration no longer asks for. The
// cached existence check keeps resyncs of shoots without bootstrap free of API requests.
func (a *actuator) destroyBootstrapIfExists(ctx context.Context, namespace string, hibernated bool) error {
	boot := a.bootstrap(namespace, bootstrap.Values{})
	exists, err := boot.Exists(ctx)
	if err != nil || !exists {
		return err
	}
	return destroy(ctx, boot, hibernated)
}

func (a *actuator) fluxOptions(cfg *fluxapi.FluxConfig, pullSecret []byte) manifests.FluxOptions {
	return manifests.FluxOptions{
		Version:    cfg.Flux.Version,
		Components: cfg.Flux.Components,
		Namespace:  cfg.Flux.Namespace,
		Registry:   a.config.Registry,
		Tuning:     tuning(cfg, fluxapi.KnownComponents, pullSecret),
	}
}

func (a *actuator) kluctlOptions(cfg *fluxapi.FluxConfig, insecureHostKeys bool, pullSecret []byte) *manifests.KluctlOptions {
	if !cfg.Kluctl.Enabled {
		return nil
	}
	return &manifests.KluctlOptions{
		Version:                      cfg.Kluctl.Version,
		Namespace:                    cfg.Kluctl.Namespace,
		Registry:                     a.config.Registry,
		DisableStrictHostKeyChecking: insecureHostKeys,
		Tuning:                       tuning(cfg, []string{fluxapi.ComponentKluctlController}, pullSecret),
	}
}

// tuning picks the settings of the given components, so that a render is only cached again when
// its own settings change.
func tuning(cfg *fluxapi.FluxConfig, components []string, pullSecret []byte) manifests.Tuning {
	t := manifests.Tuning{ImagePullSecret: pullSecret}
	for _, c := range components {
		if s, ok := cfg.Controllers[c]; ok {
			if t.Controllers == nil {
				t.Controllers = map[string]fluxapi.ControllerSettings{}
			}
			t.Controllers[c] = s
		}
	}
	return t
}

// imagePullSecret reads the operator's registry credentials, if configured.
func (a *actuator) imagePullSecret() ([]byte, error) {
	if a.config.ImagePullSecretFile == "" {
		return nil, nil
	}
	data, err := loader.LoadImagePullSecret(a.config.ImagePullSecretFile)
	if err != nil {
		return nil, fmt.Errorf("failed reading the operator's image pull secret: %w", err)
	}
	return data, nil
}

func (a *actuator) updateStatus(ctx context.Context, ex *extensionsv1alpha1.Extension, status *fluxv1alpha1.FluxStatus) error {
	raw, err := helper.EncodeStatus(status)
	if err != nil {
		return err
	}
	state, err := stateOf(status)
	if err != nil {
		return err
	}
	// Resyncs of unchanged shoots must not write.
	if ex.Status.ProviderStatus != nil && jsonEqual(ex.Status.ProviderStatus.Raw, raw.Raw) && rawEqual(ex.Status.State, state) {
		return nil
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = raw
	ex.Status.State = state
	if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("failed updating provider status: %w", err)
	}
	return nil
}

func rawEqual(a, b *runtime.RawExtension) bool {
	if a == nil || b == nil {
		return a == b
	}
	return jsonEqual(a.Raw, b.Raw)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(x, y)
}

// isHibernated tells whether the shoot is hibernated or on its way there. Its resource manager does
// not run then, so waiting for a ManagedResource would block until the shoot wakes up; the
// resource manager applies the current state once it runs again.
func isHibernated(cluster *extensionscontroller.Cluster) bool {
	return extensionscontroller.IsHibernationEnabled(cluster) || cluster.Shoot.Status.IsHibernated
}

// deployAndWait deploys, waits for the resource manager to apply the new content and then deletes
// the Secrets the new content superseded, also when the apply failed: a shoot whose applies keep
// failing would otherwise leave one Secret in the seed per change until the resource manager's
// garbage collection. While the shoot is hibernated no resource manager reads them, so they go at
// once.
func deployAndWait(ctx context.Context, mr *managedresource.ManagedResource, hibernated bool) error {
	if err := mr.Deploy(ctx); err != nil {
		return err
	}
	var waitErr error
	if !hibernated {
		waitErr = mr.Wait(ctx)
	}
	if err := mr.DeleteSuperseded(ctx); err != nil {
		return errors.Join(waitErr, err)
	}
	return waitErr
}

func destroy(ctx context.Context, c component.DeployWaiter, hibernated bool) error {
	if err := c.Destroy(ctx); err != nil {
		return err
	}
	if hibernated {
		return nil
	}
	return c.WaitCleanup(ctx)
}

// configurationError marks an error as caused by the user's configuration, so that gardener
// reports ERR_CONFIGURATION_PROBLEM and does not retry aggressively.
func configurationError(err error) error {
	return v1beta1helper.NewErrorWithCodes(err, gardencorev1beta1.ErrorConfigurationProblem)
}
