// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/gardener"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubecontrollermanager"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/network"
)

// shootAPIAudiences are the audiences of a shoot's kube-apiserver in a landscape.
var shootAPIAudiences = []string{"kubernetes", v1beta1constants.GardenerAudience}

func (h *ShootHandle) startControlPlane(ctx context.Context, withResourceManager, runControllers bool, nodeEnv []string) error {
	h.log.Info("Starting shoot API server")
	opts := cluster.Options{APIServerFlags: map[string]string{
		// As gardener's shoot kube-apiservers (pkg/component/shared kubeapiserver.go): tokens that
		// gardener-resource-manager's token requestor requests for shoot access Secrets have the
		// audience gardener.
		"api-audiences": strings.Join(shootAPIAudiences, ","),
	}}
	if runControllers {
		// The pods of the kubelet stand-in are reached through the VPN stand-in, as a shoot's pods
		// through Gardener's VPN: kube-apiserver's pod proxy, and with it the shoot's Prometheus.
		v, err := network.StartVPN(h.log.WithName("vpn"), h.SeedNamespace)
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.vpn = v
		h.mu.Unlock()
		opts.APIServerFlags["egress-selector-config-file"] = v.EgressSelectorConfigFile()
	}
	shoot, err := cluster.Start(h.SeedNamespace, kubernetes.ShootScheme, nil, opts)
	if err != nil {
		return err
	}
	h.Shoot = shoot
	cm, err := kubecontrollermanager.Start(ctx, h.log.WithName("kube-controller-manager"), shoot)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.kubeControllerManager = cm
	h.mu.Unlock()
	if runControllers {
		k, err := kubelet.Start(ctx, h.log.WithName("kubelet"), shoot, h.sandbox.controllerBinaries(), nodeEnv, h.vpn)
		if err != nil {
			return err
		}
		h.mu.Lock()
		h.kubelet = k
		h.mu.Unlock()
	}
	if withResourceManager {
		return h.startResourceManager(ctx)
	}
	return nil
}

// StartResourceManager starts the shoot's gardener-resource-manager again after
// StopResourceManager. A light shoot has none of its own.
func (h *ShootHandle) StartResourceManager(ctx context.Context) error {
	if h.shared != nil {
		return errSharedResourceManager(h.SeedNamespace)
	}
	return h.startResourceManager(ctx)
}

// StopResourceManager stops the shoot's gardener-resource-manager, as in an outage of the shoot's
// control plane: ManagedResources are no longer applied or deleted. A light shoot has none of
// its own.
func (h *ShootHandle) StopResourceManager() error {
	if h.shared != nil {
		return errSharedResourceManager(h.SeedNamespace)
	}
	return h.stopResourceManager()
}

// Respond makes the resource manager of a light shoot created Unresponsive answer: the shared
// resource manager serves its namespace from now on and, as gardenlet asks it to, reconciles the
// ManagedResources written meanwhile (gardener.cloud/operation=reconcile).
func (h *ShootHandle) Respond(ctx context.Context) error {
	if h.shared == nil {
		return fmt.Errorf("shoot %s has a resource manager of its own", h.SeedNamespace)
	}
	h.shared.add(h.SeedNamespace)
	h.unresponsive.Store(false)
	mrs := &resourcesv1alpha1.ManagedResourceList{}
	if err := h.sandbox.Seed.Client.List(ctx, mrs, client.InNamespace(h.SeedNamespace)); err != nil {
		return fmt.Errorf("failed listing the ManagedResources of %s: %w", h.SeedNamespace, err)
	}
	for i := range mrs.Items {
		mr := &mrs.Items[i]
		patch := client.MergeFrom(mr.DeepCopy())
		metav1.SetMetaDataAnnotation(&mr.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
		if err := h.sandbox.Seed.Client.Patch(ctx, mr, patch); err != nil {
			return fmt.Errorf("failed asking for a reconcile of ManagedResource %s/%s: %w", mr.Namespace, mr.Name, err)
		}
	}
	return nil
}

func errSharedResourceManager(namespace string) error {
	return fmt.Errorf("shoot %s uses the shared control plane, whose resource manager serves all light shoots", namespace)
}

func (h *ShootHandle) startResourceManager(ctx context.Context) error {
	if h.shared != nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resourceManager != nil {
		return nil
	}
	rm, err := gardener.StartResourceManager(ctx, h.log.WithName("resource-manager"), h.sandbox.Seed.Config, h.Shoot, gardener.ResourceManagerOptions{
		Name:             h.SeedNamespace,
		Namespace:        h.SeedNamespace,
		ConcurrentSyncs:  ResourceManagerConcurrentSyncs,
		SyncPeriod:       h.syncPeriod,
		HealthSyncPeriod: ResourceManagerHealthSyncPeriod,
		DeletionRequeue:  ResourceManagerDeletionRequeue,
	})
	if err != nil {
		return err
	}
	h.resourceManager = rm
	return nil
}

func (h *ShootHandle) stopResourceManager() error {
	if h.shared != nil {
		return nil
	}
	h.mu.Lock()
	rm := h.resourceManager
	h.resourceManager = nil
	h.mu.Unlock()
	return rm.Stop()
}

// ResourceManagerRunning tells whether the shoot's gardener-resource-manager runs, i.e. the shoot
// is not hibernated. The shared one of a light shoot always runs.
func (h *ShootHandle) ResourceManagerRunning() bool {
	if h.shared != nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.resourceManager != nil
}

func (h *ShootHandle) stopControlPlane() error {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return nil
	}
	h.stopped = true
	scs := h.sourceControllers
	h.sourceControllers = nil
	k := h.kubelet
	h.kubelet = nil
	h.mu.Unlock()

	// The controllers stop while the API server still answers, so that they end as in a cluster.
	errs := []error{k.Stop()}
	for _, sc := range scs {
		errs = append(errs, sc.Stop())
	}
	if h.shared != nil {
		h.shared.remove(h.SeedNamespace)
		return errors.Join(errs...)
	}
	errs = append(errs, h.stopResourceManager())
	h.mu.Lock()
	cm := h.kubeControllerManager
	h.kubeControllerManager = nil
	h.mu.Unlock()
	errs = append(errs, cm.Stop())
	if h.Shoot != nil {
		errs = append(errs, h.Shoot.Stop())
	}
	h.mu.Lock()
	v := h.vpn
	h.vpn = nil
	h.mu.Unlock()
	errs = append(errs, v.Close())
	return errors.Join(errs...)
}

// Stop retires the shoot: its Extension is removed without the extension's involvement (as after
// a migration to another seed) so that no reconcile waits for it any more, and its control plane
// is stopped.
func (h *ShootHandle) Stop(ctx context.Context) error {
	var errs []error
	ex := &extensionsv1alpha1.Extension{}
	err := h.sandbox.Seed.Client.Get(ctx, h.extensionKey(), ex)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		errs = append(errs, fmt.Errorf("failed reading extension of %s: %w", h.SeedNamespace, err))
	default:
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Finalizers = nil
		if err := h.sandbox.Seed.Client.Patch(ctx, ex, patch); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed removing finalizers of extension of %s: %w", h.SeedNamespace, err))
		} else if err := h.sandbox.Seed.Client.Delete(ctx, ex); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("failed deleting extension of %s: %w", h.SeedNamespace, err))
		}
	}

	h.sandbox.mu.Lock()
	h.sandbox.shoots = slices.DeleteFunc(h.sandbox.shoots, func(o *ShootHandle) bool { return o == h })
	h.sandbox.mu.Unlock()
	errs = append(errs, h.stopControlPlane())
	return errors.Join(errs...)
}

// Controllers lists the controllers the shoot's kubelet stand-in runs (ShootSpec.RunControllers),
// one per Deployment, in start order; stopped ones are left out.
func (h *ShootHandle) Controllers() []kubelet.ControllerProcess {
	h.mu.Lock()
	k := h.kubelet
	h.mu.Unlock()
	if k == nil {
		return nil
	}
	return k.Processes()
}

// ControllerLogs returns the end of the log of every controller the shoot's kubelet stand-in has
// started, stopped ones included, for failure reports.
func (h *ShootHandle) ControllerLogs() string {
	h.mu.Lock()
	k := h.kubelet
	h.mu.Unlock()
	if k == nil {
		return "(the shoot runs no controllers)"
	}
	return k.Logs()
}

// StartSourceController runs the source-controller of the newest embedded Flux release
// (Options.FluxControllers) against the shoot until Stop or the shoot is stopped. The shoot must
// have the source-controller CRDs, which the extension's controllers ManagedResource installs.
func (h *ShootHandle) StartSourceController(ctx context.Context) (*kubelet.SourceController, error) {
	bin, err := kubelet.NewestSourceController(h.sandbox.opts.FluxControllers)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "source-controller-")
	if err != nil {
		return nil, fmt.Errorf("failed creating source-controller directory: %w", err)
	}
	sc, err := kubelet.StartSourceController(ctx, bin, dir, h.Shoot)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	h.mu.Lock()
	h.sourceControllers = append(h.sourceControllers, sc)
	h.mu.Unlock()
	return sc, nil
}
