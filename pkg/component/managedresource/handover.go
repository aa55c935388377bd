// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// Handover records that the objects of a ManagedResource were handed over to the shoot's owner.
type Handover struct {
	// At is when the handover happened.
	At metav1.Time
	// Version is the release that was handed over.
	Version string
}

// HandedOver returns the handover of the ManagedResource, nil if it has none or does not exist. It
// reads through Reader. Only a handover recorded by HandOver counts: an operator who pauses the
// ManagedResource with the resource manager's ignore annotation alone does not hand it over.
func (m *ManagedResource) HandedOver(ctx context.Context) (*Handover, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := m.Reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, mr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed reading managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	at, ok := mr.Annotations[constants.AnnotationHandedOverAt]
	if !ok {
		return nil, nil
	}
	h := &Handover{Version: mr.Annotations[constants.AnnotationHandedOverVersion]}
	// A time that does not parse (edited by hand) still marks the handover.
	if t, err := time.Parse(time.RFC3339, at); err == nil {
		h.At = metav1.NewTime(t)
	}
	return h, nil
}

// HandOver tells the resource manager to ignore the ManagedResource from now on: it neither
// updates, re-creates nor deletes its objects (their owner is the shoot's owner now), and records
// the handover for HandedOver.
func (m *ManagedResource) HandOver(ctx context.Context, h Handover) error {
	annotations := map[string]any{}
	for k, v := range handoverAnnotations(h) {
		annotations[k] = v
	}
	return m.patchAnnotations(ctx, annotations)
}

func handoverAnnotations(h Handover) map[string]string {
	return map[string]string{
		resourcesv1alpha1.Ignore:              "true",
		constants.AnnotationHandedOverAt:      h.At.UTC().Format(time.RFC3339),
		constants.AnnotationHandedOverVersion: h.Version,
	}
}

// TakeOver ends a handover: the resource manager applies the ManagedResource again and reverts
// what was changed in the shoot. The next Wait waits for that apply.
func (m *ManagedResource) TakeOver(ctx context.Context) error {
	if err := m.patchAnnotations(ctx, map[string]any{
		resourcesv1alpha1.Ignore:              nil,
		constants.AnnotationHandedOverAt:      nil,
		constants.AnnotationHandedOverVersion: nil,
	}); err != nil {
		return err
	}
	m.takenOver = true
	return nil
}

func (m *ManagedResource) patchAnnotations(ctx context.Context, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	mr := &resourcesv1alpha1.ManagedResource{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	if err := m.Client.Patch(ctx, mr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("failed annotating managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}
