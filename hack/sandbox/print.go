// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

func printDeployments(ctx context.Context, c client.Client) error {
	deployments := &appsv1.DeploymentList{}
	if err := c.List(ctx, deployments); err != nil {
		return fmt.Errorf("failed listing shoot deployments: %w", err)
	}
	fmt.Println("\nShoot deployments (the sandbox has no nodes, so they do not run):")
	for _, d := range deployments.Items {
		var images []string
		for _, container := range d.Spec.Template.Spec.Containers {
			images = append(images, container.Image)
		}
		fmt.Printf("  %s/%s: %s\n", d.Namespace, d.Name, strings.Join(images, ", "))
	}
	return nil
}

func printKluctlDeployment(ctx context.Context, c client.Client) error {
	kd := &unstructured.Unstructured{}
	kd.SetGroupVersionKind(bootstrap.KluctlDeploymentGVK)
	// The namespace is the default kluctl namespace, which the demo configuration keeps.
	if err := c.Get(ctx, client.ObjectKey{Namespace: kluctlNamespace, Name: constants.BootstrapName}, kd); err != nil {
		return fmt.Errorf("failed reading the bootstrap KluctlDeployment: %w", err)
	}
	spec, err := yaml.Marshal(kd.Object["spec"])
	if err != nil {
		return fmt.Errorf("failed encoding the KluctlDeployment spec: %w", err)
	}
	fmt.Printf("\nKluctlDeployment %s/%s spec:\n", kd.GetNamespace(), kd.GetName())
	for _, line := range strings.Split(strings.TrimRight(string(spec), "\n"), "\n") {
		fmt.Printf("  %s\n", line)
	}
	return nil
}

// fluxDeployTimeout bounds the wait for the flux shoot's Kustomization, and the kluctl shoot's
// KluctlDeployment, to apply the repository.
var fluxDeployTimeout = 2 * time.Minute

// kluctlNamespace is the default kluctl namespace, which the demo configuration keeps.
const kluctlNamespace = "kluctl-system"

// waitKluctlDeployed waits until the real kluctl controller reports the bootstrap KluctlDeployment
// Ready and the repository's ConfigMap is in the shoot.
func waitKluctlDeployed(ctx context.Context, h *sandbox.ShootHandle) error {
	return waitDeployed(ctx, h, bootstrap.KluctlDeploymentGVK, kluctlNamespace, "kluctl")
}

// waitFluxDeployed waits until the real kustomize-controller reports the bootstrap Kustomization
// Ready and the repository's ConfigMap is in the shoot.
func waitFluxDeployed(ctx context.Context, h *sandbox.ShootHandle) error {
	return waitDeployed(ctx, h, bootstrap.KustomizationGVK, "flux-system", "flux")
}

// waitDeployed waits until the bootstrap object of kind gvk in namespace reports Ready and the
// repository's ConfigMap is in the shoot of the given mode.
func waitDeployed(ctx context.Context, h *sandbox.ShootHandle, gvk schema.GroupVersionKind, namespace, mode string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, fluxDeployTimeout, true, func(ctx context.Context) (bool, error) {
		ready, err := readyConditionIn(ctx, h.Shoot.Client, gvk, namespace)
		if err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not there yet: the poll goes on, last tells why
		}
		last = fmt.Sprintf("%s Ready=%s: %s", gvk.Kind, ready["status"], ready["message"])
		if ready["status"] != "True" {
			return false, nil
		}
		cm := &corev1.ConfigMap{}
		if err := h.Shoot.Client.Get(ctx, client.ObjectKey{Namespace: gitserver.ConfigMapNamespace, Name: gitserver.ConfigMapName}, cm); err != nil {
			last = err.Error()
			return false, nil //nolint:nilerr // not deployed yet
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the repository was not deployed into the %s shoot within %s: %s", mode, fluxDeployTimeout, last)
	}
	return nil
}

// reportKluctl prints the controllers of the kluctl shoot, the KluctlDeployment's Ready condition
// and the repository's objects in the shoot.
func reportKluctl(ctx context.Context, h *sandbox.ShootHandle) error {
	c := h.Shoot.Client
	fmt.Println("\nControllers running in the kluctl shoot:")
	for _, p := range h.Controllers() {
		fmt.Printf("  %s (ready: %t)\n", p.Component, p.Ready)
	}
	ready, err := readyConditionIn(ctx, c, bootstrap.KluctlDeploymentGVK, kluctlNamespace)
	if err != nil {
		return err
	}
	fmt.Printf("KluctlDeployment %s/%s: Ready=%s (%s)\n", kluctlNamespace, constants.BootstrapName, ready["status"], ready["message"])
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: gitserver.ConfigMapNamespace, Name: gitserver.ConfigMapName}, cm); err != nil {
		return fmt.Errorf("failed reading the repository's ConfigMap: %w", err)
	}
	fmt.Printf("\nObjects of the repository in the kluctl shoot:\n  ConfigMap %s/%s data %v, deployed by kluctl (labels %v)\n",
		cm.Namespace, cm.Name, cm.Data, cm.Labels)
	return nil
}

func readyCondition(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) (map[string]any, error) {
	return readyConditionIn(ctx, c, gvk, "flux-system")
}

// readyConditionIn returns the Ready condition of the bootstrap object of kind gvk in namespace.
func readyConditionIn(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, namespace string) (map[string]any, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.BootstrapName}, obj); err != nil {
		return nil, err
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s %s has no Ready condition yet", gvk.Kind, constants.BootstrapName)
}

// reportFlux prints what the real Flux controllers did in the flux shoot.
func reportFlux(ctx context.Context, h *sandbox.ShootHandle) error {
	c := h.Shoot.Client
	fmt.Println("\nFlux controllers running in the flux shoot:")
	for _, p := range h.Controllers() {
		fmt.Printf("  %s (ready: %t)\n", p.Component, p.Ready)
	}
	for _, gvk := range []schema.GroupVersionKind{bootstrap.GitRepositoryGVK, bootstrap.KustomizationGVK} {
		ready, err := readyCondition(ctx, c, gvk)
		if err != nil {
			return err
		}
		fmt.Printf("%s flux-system/%s: Ready=%s (%s)\n", gvk.Kind, constants.BootstrapName, ready["status"], ready["message"])
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: gitserver.ConfigMapNamespace, Name: gitserver.ConfigMapName}, cm); err != nil {
		return fmt.Errorf("failed reading the repository's ConfigMap: %w", err)
	}
	fmt.Printf("\nObjects of the repository in the flux shoot:\n  ConfigMap %s/%s data %v, applied by Kustomization %s\n",
		cm.Namespace, cm.Name, cm.Data, cm.Labels["kustomize.toolkit.fluxcd.io/name"])
	return nil
}
