// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package adoption takes over what another installer of Flux left in a shoot: stackit's
// extension of the same type shoot-flux, or a repository set up with `flux bootstrap` that
// manages Flux itself. The controllers' and bootstrap objects themselves are adopted by
// gardener-resource-manager, which updates an object of the same name in place; this package
// covers what it cannot tell (docs/usage/migration.md).
package adoption

import (
	"context"
	"fmt"
	"slices"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionFluxBootstrapped is the condition stackit's extension set on the Extension once it had
// installed Flux; it stopped reconciling the shoot's Flux from then on. Nothing of this extension
// reads it, and left in place it would tell the shoot's owner something no controller updates.
const ConditionFluxBootstrapped gardencorev1beta1.ConditionType = "FluxBootstrapped"

// WithoutForeignConditions returns conditions without those of stackit's extension, and whether
// there were any.
func WithoutForeignConditions(conditions []gardencorev1beta1.Condition) ([]gardencorev1beta1.Condition, bool) {
	out := slices.DeleteFunc(slices.Clone(conditions), func(c gardencorev1beta1.Condition) bool { return c.Type == ConditionFluxBootstrapped })
	return out, len(out) != len(conditions)
}

// The labels kustomize-controller sets on every object a Kustomization applies.
const (
	labelKustomizationName      = "kustomize.toolkit.fluxcd.io/name"
	labelKustomizationNamespace = "kustomize.toolkit.fluxcd.io/namespace"
	// labelVersion is the Flux release flux2's install manifests label every object with.
	labelVersion = "app.kubernetes.io/version"
)

// DeploymentKind is the one kind FindSelfManagedFlux reads: its shoot client maps only this kind.
var DeploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")

// SelfManagedFlux is a Flux whose controllers a Kustomization of the shoot applies: a repository
// set up with `flux bootstrap` holds Flux's own manifests (flux-system/gotk-components.yaml).
type SelfManagedFlux struct {
	// Kustomization is the namespace/name of the Kustomization that applies source-controller.
	Kustomization string
	// Version is the Flux release the controllers are labelled with; empty if unlabelled.
	Version string
}

// Describe says who manages the controllers, for a status message.
func (s *SelfManagedFlux) Describe(namespace string) string {
	d := fmt.Sprintf("Kustomization %s of the shoot applies the Flux controllers (Deployment %s/source-controller)", s.Kustomization, namespace)
	if s.Version != "" {
		d += " of Flux " + s.Version
	}
	return d
}

// RunningFlux is what the source-controller Deployment of Flux's namespace tells about the Flux a
// shoot runs.
type RunningFlux struct {
	// Version is the Flux release the controllers are labelled with (flux2's install manifests,
	// which stackit's extension applied, label every object); empty if unlabelled.
	Version string
	// SelfManaged is the Kustomization that applies the controllers, nil if none does.
	SelfManaged *SelfManagedFlux
}

// FindRunningFlux reads the source-controller Deployment of Flux's namespace: one object by name,
// whatever the shoot holds. nil means there is none.
func FindRunningFlux(ctx context.Context, shoot client.Reader, namespace string) (*RunningFlux, error) {
	d := &appsv1.Deployment{}
	if err := shoot.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "source-controller"}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed reading Deployment %s/source-controller of the shoot: %w", namespace, err)
	}
	running := &RunningFlux{Version: d.Labels[labelVersion]}
	if name := d.Labels[labelKustomizationName]; name != "" {
		ksNamespace := d.Labels[labelKustomizationNamespace]
		if ksNamespace == "" {
			ksNamespace = namespace
		}
		running.SelfManaged = &SelfManagedFlux{Kustomization: ksNamespace + "/" + name, Version: running.Version}
	}
	return running, nil
}

// FindSelfManagedFlux is FindRunningFlux's SelfManaged: nil means no Kustomization applies the
// controllers (or they do not exist).
func FindSelfManagedFlux(ctx context.Context, shoot client.Reader, namespace string) (*SelfManagedFlux, error) {
	running, err := FindRunningFlux(ctx, shoot, namespace)
	if err != nil || running == nil {
		return nil, err
	}
	return running.SelfManaged, nil
}
