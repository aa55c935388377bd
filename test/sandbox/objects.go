// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

func toJSON(data []byte) ([]byte, error) {
	out, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	return out, nil
}

// ProviderStatus decodes the Extension's providerStatus; nil if there is none yet.
func (h *ShootHandle) ProviderStatus(ctx context.Context) (*fluxv1alpha1.FluxStatus, error) {
	ex, err := h.Extension(ctx)
	if err != nil {
		return nil, err
	}
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil {
		return nil, fmt.Errorf("providerStatus of %s: %w", h.SeedNamespace, err)
	}
	return status, nil
}

// UpdateProviderStatus changes the Extension's providerStatus, e.g. into what an earlier release of
// the extension wrote.
func (h *ShootHandle) UpdateProviderStatus(ctx context.Context, mutate func(*fluxv1alpha1.FluxStatus)) error {
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	if err != nil {
		return fmt.Errorf("providerStatus of %s: %w", h.SeedNamespace, err)
	}
	if status == nil {
		status = &fluxv1alpha1.FluxStatus{}
	}
	mutate(status)
	raw, err := helper.EncodeStatus(status)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(ex.DeepCopy())
	ex.Status.ProviderStatus = raw
	if err := h.sandbox.Seed.Client.Status().Patch(ctx, ex, patch); err != nil {
		return fmt.Errorf("failed updating providerStatus of %s: %w", h.SeedNamespace, err)
	}
	return nil
}

// ManagedResource reads a ManagedResource of the shoot from the seed.
func (h *ShootHandle) ManagedResource(ctx context.Context, name string) (*resourcesv1alpha1.ManagedResource, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := h.sandbox.Seed.Client.Get(ctx, client.ObjectKey{Namespace: h.SeedNamespace, Name: name}, mr); err != nil {
		return nil, err
	}
	return mr, nil
}

// ManagedResourceObjects decodes the objects of a ManagedResource from its Secrets as
// gardener-resource-manager does, including brotli-compressed data.
func (h *ShootHandle) ManagedResourceObjects(ctx context.Context, name string) ([]*unstructured.Unstructured, error) {
	return managedresource.Objects(ctx, h.sandbox.Seed.Client, h.SeedNamespace, name)
}
