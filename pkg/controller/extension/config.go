// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

func getCluster(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension) (*extensionscontroller.Cluster, error) {
	cluster, err := extensionscontroller.GetCluster(ctx, c, ex.Namespace)
	if err != nil {
		return nil, fmt.Errorf("failed reading cluster: %w", err)
	}
	if cluster.Shoot == nil {
		return nil, fmt.Errorf("cluster %s has no shoot", ex.Namespace)
	}
	return cluster, nil
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
		Controllers:   fluxconfig.OperatorControllers(a.config.Controllers),
		Limits:        a.config.Limits,
	}, manifests.SupportedVersions(), a.knownHostsLimits, cm, ex.Spec.ProviderConfig)
	if err != nil {
		// Resolve returns configuration errors that carry ERR_CONFIGURATION_PROBLEM already.
		return nil, fluxconfig.Requested{}, "", err
	}
	return cfg, requested, fluxconfig.ConfigMapHash(cm), nil
}
