// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package managedresource is the component behind each of the extension's ManagedResources: it
// owns every operation on one (deploy, wait, destroy with or without the objects, force delete,
// migrate), each bounded by the configured timeouts, so the actuator only sequences components.
package managedresource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/component"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// ManagedResource is a component that owns one ManagedResource for the shoot's
// gardener-resource-manager, with the extension's origin.
type ManagedResource struct {
	// Client writes the ManagedResource and its Secret.
	Client client.Client
	// Reader is used while waiting and should be a cached client.
	Reader client.Reader
	// Namespace is the shoot's seed namespace; Name the ManagedResource's name.
	Namespace, Name string
	// Data computes the Secret data; only Deploy calls it.
	Data func() (map[string][]byte, error)
	// Timeouts bound Wait and WaitCleanup.
	Timeouts Timeouts

	// written is what the last Deploy wrote.
	written Write
	// superseded are the Secrets the ManagedResource referenced before the last Deploy.
	superseded []string
	// takenOver is set by TakeOver for the next Deploy.
	takenOver bool
}

var _ component.DeployWaiter = (*ManagedResource)(nil)

// Deploy writes the Secret and the ManagedResource.
func (m *ManagedResource) Deploy(ctx context.Context) error {
	return m.deploy(ctx, nil)
}

// DeployHandedOver writes the Secret and the ManagedResource handed over from its creation on, so
// that the resource manager never applies it: the objects in the shoot stay as they are.
func (m *ManagedResource) DeployHandedOver(ctx context.Context, h Handover) error {
	return m.deploy(ctx, handoverAnnotations(h))
}

func (m *ManagedResource) deploy(ctx context.Context, annotations map[string]string) error {
	data, err := m.Data()
	if err != nil {
		return err
	}
	// The Secret's name is a hash of its data, so the same name means the same content: a
	// ManagedResource that references it already has it, and content written before (also before
	// a reverted change) is reused without a write. Wait looks for the name.
	writer := &writeRecorder{Client: metrics.CountManagedResourceWrites(m.Client, m.Name), managedResource: m.Name}
	secretName, secret := managedresources.NewSecret(writer, m.Namespace, m.Name, data, true)
	writer.secret = secretName
	m.written = Write{SecretName: secretName, At: time.Now(), TakenOver: m.takenOver}
	m.superseded = nil
	existing := &resourcesv1alpha1.ManagedResource{}
	referenced := false
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed reading managed resource %s/%s: %w", m.Namespace, m.Name, err)
		}
	} else {
		if referenced = slices.ContainsFunc(existing.Spec.SecretRefs, func(ref corev1.LocalObjectReference) bool { return ref.Name == secretName }); referenced {
			m.written.UnchangedGeneration = existing.Generation
		}
		for _, ref := range existing.Spec.SecretRefs {
			if ref.Name != secretName && strings.HasPrefix(ref.Name, managedresources.SecretPrefix+m.Name+"-") {
				m.superseded = append(m.superseded, ref.Name)
			}
		}
	}
	if err := secret.Reconcile(ctx); err != nil {
		return fmt.Errorf("failed writing the Secret of managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	mr := managedresources.NewForShoot(writer, m.Namespace, m.Name, constants.Origin, false).WithSecretRef(secretName).WithAnnotations(annotations)
	if err := mr.Reconcile(ctx); err != nil {
		err = fmt.Errorf("failed writing managed resource %s/%s: %w", m.Namespace, m.Name, err)
		if writer.secretCreated && !referenced && rejected(err) {
			// No ManagedResource references the Secret just created: without this it would stay
			// until the garbage collector's next run, one per failed write.
			if delErr := writer.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: secretName}}); client.IgnoreNotFound(delErr) != nil {
				return errors.Join(err, fmt.Errorf("failed deleting the unreferenced Secret %s of managed resource %s/%s: %w", secretName, m.Namespace, m.Name, delErr))
			}
		}
		return err
	}
	if writer.written != nil {
		m.written.Generation, m.written.ResourceVersion = writer.written.Generation, writer.written.ResourceVersion
	}
	return nil
}

// rejected tells whether the API server refused a request, so that it did not change anything. A
// timeout or a lost connection may hide a write that went through (or is still under way), which
// could then reference a Secret deleted in the meantime.
func rejected(err error) bool {
	switch apierrors.ReasonForError(err) {
	case metav1.StatusReasonConflict, metav1.StatusReasonInvalid, metav1.StatusReasonForbidden, metav1.StatusReasonUnauthorized,
		metav1.StatusReasonNotFound, metav1.StatusReasonAlreadyExists, metav1.StatusReasonBadRequest, metav1.StatusReasonTooManyRequests,
		metav1.StatusReasonRequestEntityTooLarge, metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable,
		metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonGone:
		return true
	}
	return false
}

// writeRecorder records what gardener's builders do not return: whether the Secret was created and
// the ManagedResource as the API server returned it from its write.
type writeRecorder struct {
	client.Client
	managedResource, secret string

	secretCreated bool
	written       *resourcesv1alpha1.ManagedResource
}

func (w *writeRecorder) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := w.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if _, ok := obj.(*corev1.Secret); ok && obj.GetName() == w.secret {
		w.secretCreated = true
	}
	w.record(obj)
	return nil
}

func (w *writeRecorder) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := w.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	w.record(obj)
	return nil
}

func (w *writeRecorder) record(obj client.Object) {
	if mr, ok := obj.(*resourcesv1alpha1.ManagedResource); ok && mr.Name == w.managedResource {
		w.written = mr.DeepCopy()
	}
}

// DeleteSuperseded deletes the Secrets the ManagedResource referenced before the last Deploy. Call
// it once the resource manager is done with what Deploy wrote (or, while it does not run, right
// after Deploy), so that a reconcile of it that started earlier still finds the Secrets it read;
// gardener-resource-manager's garbage collector would keep them for up to 12 h (see
// docs/development/architecture.md, "ManagedResource Secrets").
func (m *ManagedResource) DeleteSuperseded(ctx context.Context) error {
	for _, name := range m.superseded {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: name}}
		if err := m.Client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("failed deleting superseded Secret %s of managed resource %s/%s: %w", name, m.Namespace, m.Name, err)
		}
	}
	m.superseded = nil
	return nil
}

// Destroy deletes the ManagedResource and its Secrets; the resource manager deletes its objects.
func (m *ManagedResource) Destroy(ctx context.Context) error {
	if err := managedresources.Delete(ctx, m.Client, m.Namespace, m.Name, true); err != nil {
		return fmt.Errorf("failed deleting managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// DestroyKeepingObjects deletes the ManagedResource and its Secrets but leaves its objects in the
// shoot: the resource manager only forgets them.
func (m *ManagedResource) DestroyKeepingObjects(ctx context.Context) error {
	if err := m.keepObjects(ctx); err != nil {
		return err
	}
	return m.Destroy(ctx)
}

// keepObjects tells the resource manager to leave the objects in the shoot when it deletes the
// ManagedResource, also if the deletion is under way already.
func (m *ManagedResource) keepObjects(ctx context.Context) error {
	if err := managedresources.SetKeepObjects(ctx, m.Client, m.Namespace, m.Name, true); err != nil {
		return fmt.Errorf("failed keeping the objects of managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// Exists tells whether the ManagedResource exists. It reads through Reader, so that resyncs of
// shoots without it cost no API request.
func (m *ManagedResource) Exists(ctx context.Context) (bool, error) {
	if err := m.Reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, &resourcesv1alpha1.ManagedResource{}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("failed reading managed resource %s/%s: %w", m.Namespace, m.Name, err)
	}
	return true, nil
}

// Migrate releases the objects to the shoot (they keep running while its control plane moves to
// another seed) and waits until the ManagedResource is gone.
func (m *ManagedResource) Migrate(ctx context.Context) error {
	if err := m.DestroyKeepingObjects(ctx); err != nil {
		return err
	}
	return m.WaitCleanup(ctx)
}

// DestroyReleasingAfter deletes the ManagedResource with its objects and waits. If the objects are
// not gone after grace, e.g. because the controller that must remove their finalizers does not
// run, the rest of them is left in the shoot and the ManagedResource is released. It tells whether
// objects were left behind.
func (m *ManagedResource) DestroyReleasingAfter(ctx context.Context, grace time.Duration) (bool, error) {
	if err := m.Destroy(ctx); err != nil {
		return false, err
	}
	err := WaitUntilDeleted(ctx, m.Reader, m.Namespace, m.Name, min(grace, m.Timeouts.Deleted))
	if err == nil {
		return false, nil
	}
	if ctx.Err() != nil {
		return false, err
	}
	if err := m.keepObjects(ctx); err != nil {
		return false, err
	}
	return true, m.WaitCleanup(ctx)
}

// Wait waits until the resource manager applied what the last Deploy wrote.
func (m *ManagedResource) Wait(ctx context.Context) error {
	return WaitUntilApplied(ctx, m.Reader, m.Namespace, m.Name, m.written, m.Timeouts.Applied)
}

// WaitCleanup waits until the ManagedResource is gone.
func (m *ManagedResource) WaitCleanup(ctx context.Context) error {
	return WaitUntilDeleted(ctx, m.Reader, m.Namespace, m.Name, m.Timeouts.Deleted)
}

// DeployAndWait deploys, waits for the resource manager to apply the new content and then deletes
// the Secrets the new content superseded, also when the apply failed: failing applies would
// otherwise leave one Secret per change in the seed. A hibernated shoot's resource manager reads
// none, so they go at once.
func (m *ManagedResource) DeployAndWait(ctx context.Context, hibernated bool) error {
	if err := m.Deploy(ctx); err != nil {
		return err
	}
	var waitErr error
	if !hibernated {
		waitErr = m.Wait(ctx)
	}
	if err := m.DeleteSuperseded(ctx); err != nil {
		return errors.Join(waitErr, err)
	}
	return waitErr
}

// DestroyAndWait deletes the ManagedResource and waits until its objects are gone, unless the
// shoot is hibernated: its resource manager does not run then, and deletes them when it wakes up.
func (m *ManagedResource) DestroyAndWait(ctx context.Context, hibernated bool) error {
	if err := m.Destroy(ctx); err != nil {
		return err
	}
	if hibernated {
		return nil
	}
	return m.WaitCleanup(ctx)
}
