// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/secrets"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/network"
)

const (
	// ExtensionName is the name gardenlet gives the Extension resource of a shoot: its type.
	ExtensionName = constants.ExtensionType
	// KubernetesVersion is the version the sandbox's Shoots declare. The extension installs no Flux
	// release outside its Kubernetes range (pkg/releases), so it is one every embedded release
	// supports (v2.7 up to 1.34, v2.9 from 1.34.1), whatever the API servers run (v1.36).
	KubernetesVersion = "1.34.5"
	// KubernetesPatchVersion is a later patch of KubernetesVersion the CloudProfile offers, for
	// scenarios that upgrade a shoot.
	KubernetesPatchVersion = "1.34.6"

	// providerType is the provider of the sandbox's seed, CloudProfile and shoots.
	providerType = "local"
	// seedName is the name of the sandbox's seed in the garden.
	seedName = "local"
)

// ProjectNamespace returns the garden namespace of a project.
func ProjectNamespace(project string) string {
	return "garden-" + project
}

// SeedNamespace returns the seed namespace (technical ID) of a shoot.
func SeedNamespace(project, shoot string) string {
	return "shoot--" + project + "--" + shoot
}

// CreateProject creates a Project and its namespace in the garden (see the function CreateProject)
// and returns the namespace.
func (s *Sandbox) CreateProject(ctx context.Context, name string) (string, error) {
	return CreateProject(ctx, s.Garden.Client, name)
}

// ShootSpec describes a shoot with the shoot-flux extension enabled.
type ShootSpec struct {
	// Project is the project name; its namespace must exist (CreateProject).
	Project string
	// Name is the shoot name.
	Name string
	// ProviderConfig is the providerConfig of the shoot-flux extension (JSON or YAML); optional.
	ProviderConfig []byte
	// Resources are the Shoot spec.resources. Referenced Secrets are copied from the project
	// namespace into the seed namespace as gardenlet does.
	Resources []gardencorev1beta1.NamedResourceReference
	// Hibernated creates the shoot hibernated: its resource manager does not run.
	Hibernated bool
	// SharedControlPlane makes a light shoot that shares one API server and resource manager with
	// the other light shoots: their equal-named objects overwrite each other, and hibernation does
	// not stop the shared resource manager.
	SharedControlPlane bool
	// Unresponsive makes a light shoot (SharedControlPlane) whose resource manager does not
	// answer, as that of a shoot whose API server is down: its ManagedResources are not applied,
	// so every reconcile that changes them waits for the applied timeout, until Respond.
	Unresponsive bool
	// DeferExtension sets up everything but the Extension resource; CreateExtension creates it.
	DeferExtension bool
	// RunControllers runs the delivered controllers whose images Options.FluxControllers or
	// Options.KluctlControllers name, with the kubelet stand-in (kubelet.Kubelet), as long as the
	// shoot's API server runs. It needs a control plane of the shoot's own (not SharedControlPlane).
	RunControllers bool
	// NodeEnv is the environment of the shoot's nodes, which the controllers RunControllers starts
	// get before their image's and container's env, e.g. HTTPS_PROXY and SSL_CERT_FILE of a shoot
	// that reaches a git host through a proxy.
	NodeEnv []string
	// Domain is the shoot's DNS domain (spec.dns.domain); empty means none.
	Domain string
	// MaintenanceWindow is the shoot's spec.maintenance.timeWindow; nil leaves it to
	// gardener-apiserver, which picks one at random.
	MaintenanceWindow *gardencorev1beta1.MaintenanceTimeWindow
	// ResourceManagerSyncPeriod is how often the shoot's gardener-resource-manager re-applies a
	// ManagedResource; zero means ResourceManagerSyncPeriod. Scenarios about drift set it short, so
	// that "not reverted within a few periods" is a bound of seconds.
	ResourceManagerSyncPeriod time.Duration
}

// ShootHandle is a shoot of the sandbox: its seed namespace, Cluster and Extension, and its own
// API server with a gardener-resource-manager, or the shared ones (ShootSpec.SharedControlPlane).
type ShootHandle struct {
	// Project is the project name.
	Project string
	// Name is the shoot name.
	Name string
	// ProjectNamespace is the garden namespace of the project.
	ProjectNamespace string
	// SeedNamespace is the shoot's namespace in the seed and the name of its Cluster.
	SeedNamespace string
	// Shoot is the shoot's API server; the shared one for a light shoot.
	Shoot *cluster.Cluster

	sandbox *Sandbox
	log     logr.Logger
	created time.Time
	// shared is set for a light shoot (ShootSpec.SharedControlPlane).
	shared *sharedControlPlane
	// unresponsive is set while the resource manager of a light shoot does not answer
	// (ShootSpec.Unresponsive, until Respond).
	unresponsive atomic.Bool
	// syncPeriod is the resource manager's sync period (ShootSpec.ResourceManagerSyncPeriod).
	syncPeriod time.Duration

	mu                    sync.Mutex
	resourceManager       *cluster.Runner
	kubeControllerManager *cluster.Runner
	kubelet               *kubelet.Kubelet
	vpn                   *network.VPN
	sourceControllers     []*kubelet.SourceController
	since                 string
	sinceTime             time.Time
	stopped               bool
}

// CreateShoot sets up a shoot the way gardenlet does: the seed namespace, the shoot's control
// plane (here: an API server and a resource manager), copies of the referenced Secrets, the
// Cluster and the Extension.
func (s *Sandbox) CreateShoot(ctx context.Context, spec ShootSpec) (*ShootHandle, error) {
	if spec.Project == "" || spec.Name == "" {
		return nil, fmt.Errorf("a shoot needs a project and a name")
	}
	if spec.RunControllers && spec.SharedControlPlane {
		return nil, fmt.Errorf("shoot %s: a shoot on the shared control plane cannot run controllers, its API server serves other shoots too", spec.Name)
	}
	if len(spec.NodeEnv) > 0 && !spec.RunControllers {
		return nil, fmt.Errorf("shoot %s: NodeEnv needs RunControllers, only the controllers it starts get it", spec.Name)
	}
	h := &ShootHandle{
		Project:          spec.Project,
		Name:             spec.Name,
		ProjectNamespace: ProjectNamespace(spec.Project),
		SeedNamespace:    SeedNamespace(spec.Project, spec.Name),
		sandbox:          s,
		created:          time.Now(),
		syncPeriod:       cmp.Or(spec.ResourceManagerSyncPeriod, ResourceManagerSyncPeriod),
	}
	h.log = s.log.WithValues("shoot", h.SeedNamespace)

	// The shoot owner's request goes through gardener-apiserver's admission first.
	shoot, err := NewShoot(h.ProjectNamespace, h.Name, spec.ProviderConfig)
	if err != nil {
		return nil, err
	}
	shoot.Spec.Resources = spec.Resources
	shoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(spec.Hibernated)}
	if spec.MaintenanceWindow != nil {
		shoot.Spec.Maintenance = &gardencorev1beta1.Maintenance{TimeWindow: spec.MaintenanceWindow.DeepCopy()}
	}
	if spec.Domain != "" {
		shoot.Spec.DNS = &gardencorev1beta1.DNS{Domain: ptr.To(spec.Domain)}
	}
	if err := CreateGardenShoot(ctx, s.Garden.Client, shoot); err != nil {
		return nil, fmt.Errorf("failed creating shoot %s/%s: %w", h.ProjectNamespace, h.Name, err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: h.SeedNamespace,
		Labels: map[string]string{
			v1beta1constants.GardenRole:         v1beta1constants.GardenRoleShoot,
			v1beta1constants.LabelSeedProvider:  providerType,
			v1beta1constants.LabelShootProvider: providerType,
		},
	}}
	if err := s.Seed.Client.Create(ctx, ns); err != nil {
		return nil, fmt.Errorf("failed creating seed namespace %s: %w", ns.Name, err)
	}

	if spec.SharedControlPlane {
		shared, err := s.sharedControlPlane(ctx)
		if err != nil {
			return nil, err
		}
		// Before anything exists in the namespace that the resource manager could miss.
		if spec.Unresponsive {
			h.unresponsive.Store(true)
		} else {
			shared.add(h.SeedNamespace)
		}
		h.shared, h.Shoot = shared, shared.shoot
	} else if err := h.startControlPlane(ctx, !spec.Hibernated, spec.RunControllers, spec.NodeEnv); err != nil {
		return nil, errors.Join(err, h.stopControlPlane())
	}
	s.mu.Lock()
	s.shoots = append(s.shoots, h)
	s.mu.Unlock()

	if err := h.createShootAccess(ctx); err != nil {
		return h, err
	}

	if _, err := h.startShootOperation(ctx, gardencorev1beta1.LastOperationTypeCreate, nil); err != nil {
		return h, err
	}
	if spec.DeferExtension {
		return h, nil
	}
	return h, h.CreateExtension(ctx)
}

// createShootAccess writes the kubeconfig Secrets through which gardener's extension library
// (e.g. the health check controller) reaches the shoot, as gardenlet does in the seed namespace.
func (h *ShootHandle) createShootAccess(ctx context.Context) error {
	kubeconfig, err := h.Shoot.Kubeconfig()
	if err != nil {
		return err
	}
	for _, name := range []string{v1beta1constants.SecretNameGardener, v1beta1constants.SecretNameGardenerInternal} {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.SeedNamespace, Name: name},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{secrets.DataKeyKubeconfig: kubeconfig},
		}
		if err := h.sandbox.Seed.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("failed creating shoot access Secret %s/%s: %w", h.SeedNamespace, name, err)
		}
	}
	return nil
}

func providerConfig(data []byte) (*runtime.RawExtension, error) {
	if len(data) == 0 {
		return nil, nil
	}
	raw, err := toJSON(data)
	if err != nil {
		return nil, fmt.Errorf("providerConfig: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// waitUntilExtensionSeesCluster waits until the in-process extension's cache holds the Cluster
// (at least at resourceVersion): the extension decides on an Extension event with the Cluster
// from its cache, and a Cluster missing there makes it drop the event.
func (h *ShootHandle) waitUntilExtensionSeesCluster(ctx context.Context, resourceVersion string) error {
	reader := h.sandbox.extensionCache()
	if reader == nil {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, cluster.CacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		c := &extensionsv1alpha1.Cluster{}
		if err := reader.Get(ctx, client.ObjectKey{Name: h.SeedNamespace}, c); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return !olderResourceVersion(c.ResourceVersion, resourceVersion), nil
	})
	if err != nil {
		return fmt.Errorf("the extension's cache did not see cluster %s: %w", h.SeedNamespace, err)
	}
	return nil
}

// CreateExtension deploys the shoot's Extension as gardenlet's reconcile flow does (see
// deployExtensions).
func (h *ShootHandle) CreateExtension(ctx context.Context) error {
	shoot, err := h.GardenShoot(ctx)
	if err != nil {
		return err
	}
	if err := h.deployExtensions(ctx, shoot); err != nil {
		return err
	}
	if h.sandbox.Deployed() {
		if h.unresponsive.Load() {
			// Its reconciles may wait for a worker of the project's share (limits.projectWorkersPercent)
			// as long as the others hang: the Extension is nudged as long as the cache could lag, not
			// until a reconcile took it.
			nudgeCtx, cancel := context.WithTimeout(ctx, UnresponsiveNudgeWindow)
			defer cancel()
			if err := h.nudgeUntilPickedUp(nudgeCtx); err != nil && ctx.Err() != nil {
				return err
			}
			return nil
		}
		return h.nudgeUntilPickedUp(ctx)
	}
	return nil
}

// annotationNudge is the annotation nudgeUntilPickedUp changes.
const annotationNudge = "sandbox.shoot-flux.extensions.gardener.cloud/nudge"

// nudgeUntilPickedUp stands in for gardenlet's retries with an extension running as a separate
// process, whose cache the sandbox cannot wait for (see waitUntilExtensionSeesCluster): while the
// new Extension has no lastOperation, it is touched again every NudgeInterval, which is an event
// the extension evaluates anew, with the Cluster in its cache by then.
func (h *ShootHandle) nudgeUntilPickedUp(ctx context.Context) error {
	nudges, lastNudge := 0, time.Now()
	err := wait.PollUntilContextTimeout(ctx, PollInterval, cluster.CacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		ex, err := h.Extension(ctx)
		if err != nil {
			return false, err
		}
		if ex.Status.LastOperation != nil {
			return true, nil
		}
		if time.Since(lastNudge) < NudgeInterval {
			return false, nil
		}
		nudges, lastNudge = nudges+1, time.Now()
		patch := client.MergeFrom(ex.DeepCopy())
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, annotationNudge, strconv.Itoa(nudges))
		return false, client.IgnoreNotFound(h.sandbox.Seed.Client.Patch(ctx, ex, patch))
	})
	if err != nil {
		return fmt.Errorf("the extension did not pick up the Extension of %s: %w", h.SeedNamespace, err)
	}
	return nil
}

// CreateGardenShoot creates a Shoot in gardener-apiserver. Its admission plugins read the
// project's objects from informer caches: a Shoot created right after its project may be refused
// because the CredentialsBinding is not in the cache yet ("… not found"), which a user or a
// pipeline retries, as this does within cluster.CacheSyncTimeout.
func CreateGardenShoot(ctx context.Context, c client.Client, shoot *gardencorev1beta1.Shoot) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, PollInterval, cluster.CacheSyncTimeout, true, func(ctx context.Context) (bool, error) {
		lastErr = c.Create(ctx, shoot.DeepCopy())
		if apierrors.IsForbidden(lastErr) && strings.Contains(lastErr.Error(), "not found") {
			return false, nil
		}
		return true, lastErr
	})
	if lastErr != nil && wait.Interrupted(err) {
		return lastErr
	}
	if err != nil {
		return err
	}
	return c.Get(ctx, client.ObjectKeyFromObject(shoot), shoot)
}
