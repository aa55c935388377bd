// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountManagedResourceWrites returns c with its writes of ManagedResources and Secrets counted
// under the ManagedResource name managedResource. Counting the requests rather than the intent
// includes what gardener's ManagedResource builders write on their own (e.g. marking the
// previous Secrets garbage-collectable), which is the load the seed's API server sees.
func CountManagedResourceWrites(c client.Client, managedResource string) client.Client {
	return &countingClient{Client: c, managedResource: managedResource}
}

type countingClient struct {
	client.Client
	managedResource string
}

func (c *countingClient) count(obj client.Object, verb string, err error) {
	if err != nil {
		return
	}
	var kind string
	switch obj.(type) {
	case *resourcesv1alpha1.ManagedResource:
		kind = "ManagedResource"
	case *corev1.Secret:
		kind = "Secret"
	default:
		return
	}
	managedResourceWrites.WithLabelValues(c.managedResource, kind, verb).Inc()
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	err := c.Client.Create(ctx, obj, opts...)
	c.count(obj, "create", err)
	return err
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	err := c.Client.Update(ctx, obj, opts...)
	c.count(obj, "update", err)
	return err
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, patch, opts...)
	c.count(obj, "patch", err)
	return err
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	c.count(obj, "delete", err)
	return err
}
