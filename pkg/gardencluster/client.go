// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardencluster

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncedClient fails every request at once while the garden cache has not synced: a cached read
// would block until the sync, and a request to a garden that does not answer would hold the
// reconcile's worker until it times out.
type syncedClient struct {
	client.Client
	garden *Cluster
}

func (c *syncedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *syncedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.List(ctx, list, opts...)
}

func (c *syncedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *syncedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *syncedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *syncedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *syncedClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.Apply(ctx, obj, opts...)
}

func (c *syncedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *syncedClient) Status() client.SubResourceWriter {
	return c.SubResource("status")
}

func (c *syncedClient) SubResource(subResource string) client.SubResourceClient {
	return &syncedSubResourceClient{SubResourceClient: c.Client.SubResource(subResource), garden: c.garden}
}

// syncedSubResourceClient is the syncedClient of a subresource.
type syncedSubResourceClient struct {
	client.SubResourceClient
	garden *Cluster
}

func (c *syncedSubResourceClient) Get(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceGetOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.SubResourceClient.Get(ctx, obj, subResource, opts...)
}

func (c *syncedSubResourceClient) Create(ctx context.Context, obj, subResource client.Object, opts ...client.SubResourceCreateOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.SubResourceClient.Create(ctx, obj, subResource, opts...)
}

func (c *syncedSubResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.SubResourceClient.Update(ctx, obj, opts...)
}

func (c *syncedSubResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (c *syncedSubResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if err := c.garden.Err(); err != nil {
		return err
	}
	return c.SubResourceClient.Apply(ctx, obj, opts...)
}
