// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package managedresource is the component behind each of the extension's ManagedResources: it
// owns every operation on one (deploy, wait, destroy with or without the objects, force delete,
// migrate), each bounded by the configured timeouts, so the actuator only sequences components.
package managedresource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/component"
	"github.com/gardener/gardener/pkg/utils/kubernetes/health"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yamlserializer "k8s.io/apimachinery/pkg/runtime/serializer/yaml"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics"
)

// Timeouts bound the waits of a ManagedResource component. They come from the controller
// configuration, whose defaults are the only ones.
type Timeouts struct {
	// Applied bounds the wait for gardener-resource-manager to apply what was written.
	Applied time.Duration
	// Deleted bounds the wait for the ManagedResource to be gone.
	Deleted time.Duration
}

// PollInterval is how often a ManagedResource is re-read while waiting. Reads hit the manager's
// cache, so a short interval costs no API requests and shortens every reconcile.
var PollInterval = 250 * time.Millisecond

// ApplyFailedGrace is how long an apply failure that gardener-resource-manager reports is waited
// out. A failure that lasts longer (a missing namespace, an object the shoot's API server rejects)
// ends the wait with the resource manager's message, so that one tenant's broken input does not
// hold a worker until the timeout; the reconcile is retried after ApplyFailedRetry. Shorter
// failures (a CRD that is not established yet) are retried by the resource manager itself. A
// failure of content that was written before counts from when it was reported: a retry that writes
// the same content again triggers no new attempt of the resource manager, so waiting for one would
// hold the worker until the timeout.
var ApplyFailedGrace = 5 * time.Second

// ApplyFailedError is gardener-resource-manager's report that it cannot apply the ManagedResource.
type ApplyFailedError struct {
	Namespace, Name string
	// Message is the resource manager's message.
	Message string
}

func (e *ApplyFailedError) Error() string {
	return fmt.Sprintf("gardener-resource-manager cannot apply managed resource %s/%s: %s", e.Namespace, e.Name, e.Message)
}

// Write is what a Deploy wrote into a ManagedResource, for WaitUntilApplied.
type Write struct {
	// SecretName is the Secret the ManagedResource references after the write. A cached reader
	// may still return the previous generation right after the write, so only a ManagedResource
	// that references it counts. Empty accepts any.
	SecretName string
	// At is when the write happened. Zero means unknown: apply failures do not end the wait.
	At time.Time
	// UnchangedGeneration is the generation of the ManagedResource when it referenced SecretName
	// already before the write, which then changed nothing; 0 otherwise.
	UnchangedGeneration int64
	// Generation and ResourceVersion are those of the ManagedResource as the write that changed it
	// left it, empty without one. A report of the resource manager in another version of that
	// generation came after the write.
	Generation      int64
	ResourceVersion string
	// TakenOver is set when the write ended a handover. While ignored, the resource manager keeps
	// the generation it observed last and reports ResourcesApplied with reason
	// ManagedResourceIgnored, which looks applied although nothing was applied since.
	TakenOver bool
}

// WaitUntilApplied waits until gardener-resource-manager has applied the current generation of the
// ManagedResource. It deliberately does not wait for the objects to become healthy: health is
// reported asynchronously and must not block a reconcile for minutes.
//
// An apply failure of what was written that lasts ApplyFailedGrace ends the wait with an
// *ApplyFailedError.
func WaitUntilApplied(ctx context.Context, reader client.Reader, namespace, name string, written Write, timeout time.Duration) error {
	var (
		lastErr error
		// The failure seen last and since when it counts: a failure whose message changes (a
		// conflict on one object, then on another, while several writers share the shoot) is
		// the resource manager still retrying, so the grace starts again.
		failedMessage string
		failedSince   time.Time
	)
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			lastErr = err
			return false, client.IgnoreNotFound(err)
		}
		if written.SecretName != "" && !slices.ContainsFunc(mr.Spec.SecretRefs, func(ref corev1.LocalObjectReference) bool { return ref.Name == written.SecretName }) {
			lastErr = fmt.Errorf("the ManagedResource does not reference Secret %s yet", written.SecretName)
			return false, nil
		}
		if message, since, failed := applyFailure(mr, written); failed && !written.At.IsZero() && !isConflict(message) {
			switch {
			case failedMessage == "" && !since.IsZero():
				failedMessage, failedSince = message, since
			case message != failedMessage:
				failedMessage, failedSince = message, time.Now()
			}
			if time.Since(failedSince) >= ApplyFailedGrace {
				return false, &ApplyFailedError{Namespace: namespace, Name: name, Message: message}
			}
		}
		if err := health.CheckManagedResourceApplied(mr); err != nil {
			lastErr = err
			return false, nil //nolint:nilerr // not applied yet: the poll goes on, lastErr tells why
		}
		if written.TakenOver && appliedReason(mr) == resourcesv1alpha1.ConditionManagedResourceIgnored {
			lastErr = errors.New("gardener-resource-manager has not applied the ManagedResource since it was ignored")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		var failed *ApplyFailedError
		if errors.As(err, &failed) {
			return failed
		}
		if lastErr != nil && wait.Interrupted(err) {
			// Both are wrapped, so that the error is recognisable as a timeout (metrics class).
			return fmt.Errorf("managed resource %s/%s was not applied within %s (%w): %w", namespace, name, timeout, err, lastErr)
		}
		return fmt.Errorf("managed resource %s/%s was not applied within %s: %w", namespace, name, timeout, err)
	}
	return nil
}

// conflictMessage starts the message of a Conflict from the API server (apimachinery's
// errors.NewConflict): the object changed between the resource manager's read and its write.
const conflictMessage = "Operation cannot be fulfilled on "

// isConflict tells an apply failure that is another writer's race, which the resource manager
// retries with its own backoff until it wins, from a failure of the content: the wait goes on to
// its timeout. Its message may stay the same for many rounds (two writers of one object), and the
// retry of an unchanged ManagedResource starts no new attempt, so ending the wait early would only
// report the race again until the resource manager's backoff ends it.
func isConflict(message string) bool {
	return strings.Contains(message, conflictMessage)
}

// applyFailure returns the resource manager's message if it reported an apply failure of what was
// written, and since when the failure counts.
//
// The resource manager records the observed generation only when it succeeds, and its condition
// keeps the timestamps of the last round when the new content fails with the same message (an
// admission policy that denies every change), so neither tells a failure of the written content
// from one of the content before. Versions do: while ResourcesApplied is not True, only the resource
// manager's reconcile of the ManagedResource writes its status (its health checks wait for a
// successful apply), and it does so with an Update that conflicts unless it read the current
// version. So a failure in a later version of the written generation is one of the written content,
// counted from when the wait first sees it (a zero time). A failure of the current generation (applied before, failing now, or not
// changed by the write) is one of the written content too, counted from when it was reported.
func applyFailure(mr *resourcesv1alpha1.ManagedResource, written Write) (string, time.Time, bool) {
	for _, c := range mr.Status.Conditions {
		if c.Type != resourcesv1alpha1.ResourcesApplied || c.Status != gardencorev1beta1.ConditionFalse || c.Reason != resourcesv1alpha1.ConditionApplyFailed {
			continue
		}
		if mr.Status.ObservedGeneration == mr.Generation || (written.UnchangedGeneration != 0 && mr.Generation == written.UnchangedGeneration) {
			// Conditions have a resolution of seconds: the message was first reported before this.
			if reported := c.LastUpdateTime.Add(time.Second); reported.Before(written.At) {
				return c.Message, reported, true
			}
			return c.Message, written.At, true
		}
		if written.ResourceVersion != "" && mr.Generation == written.Generation && mr.ResourceVersion != written.ResourceVersion {
			return c.Message, time.Time{}, true
		}
	}
	return "", time.Time{}, false
}

// WaitUntilDeleted waits until the ManagedResource is gone, i.e. gardener-resource-manager has
// deleted its objects from the shoot (or released them when keepObjects is set).
func WaitUntilDeleted(ctx context.Context, reader client.Reader, namespace, name string, timeout time.Duration) error {
	var lastMessage string
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		mr := &resourcesv1alpha1.ManagedResource{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
		lastMessage = deletionMessage(mr)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("managed resource %s/%s was not deleted within %s%s: %w", namespace, name, timeout, lastMessage, err)
	}
	return nil
}

func appliedReason(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied {
			return c.Reason
		}
	}
	return ""
}

func deletionMessage(mr *resourcesv1alpha1.ManagedResource) string {
	for _, c := range mr.Status.Conditions {
		if c.Type == resourcesv1alpha1.ResourcesApplied && c.Message != "" {
			return " (" + c.Message + ")"
		}
	}
	return ""
}

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
	// The Secret's unique name is a hash of the data, and the rest of the spec is the same for
	// every write, so a ManagedResource that references it already has the content: the write
	// leaves it unchanged. Wait looks for the name.
	//
	// The same name also means the same content, so the Secret of content written before (by an
	// earlier reconcile, or before a change that was reverted) is reused: Reconcile finds it
	// unchanged and writes nothing.
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

// DeleteSuperseded deletes the Secrets that the ManagedResource referenced before the last Deploy
// and no longer does. Call it once the resource manager is done with what Deploy wrote, applied or
// failed (or, while it does not run, right after Deploy), so that a reconcile of the resource
// manager that started before Deploy still finds the Secrets it read: it reads only the Secrets the
// ManagedResource references, and it deletes the objects that the new content lacks by the
// ManagedResource's status, not by the old Secret. The garbage collector of the seed's gardener-resource-manager would remove them only
// after up to 12 h, so every content change would stay in the seed's etcd for that long (see
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

// yamlDecoder decodes the manifests in ManagedResource Secrets into unstructured objects, so that
// kinds no scheme of the extension knows (Flux and kluctl objects) are read too.
var yamlDecoder = yamlserializer.NewDecodingSerializer(unstructured.UnstructuredJSONScheme)

// Objects returns the objects of a ManagedResource as gardener-resource-manager reads them from its
// Secrets, brotli-compressed data included.
func Objects(ctx context.Context, reader client.Reader, namespace, name string) ([]*unstructured.Unstructured, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
		return nil, fmt.Errorf("failed reading managed resource %s/%s: %w", namespace, name, err)
	}
	var out []*unstructured.Unstructured
	for _, ref := range mr.Spec.SecretRefs {
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("failed reading Secret %s of managed resource %s/%s: %w", ref.Name, namespace, name, err)
		}
		objects, err := ObjectsOfData(secret.Data)
		if err != nil {
			return nil, fmt.Errorf("managed resource %s/%s, Secret %s: %w", namespace, name, ref.Name, err)
		}
		out = append(out, objects...)
	}
	return out, nil
}

// ObjectsOfData decodes the data of a ManagedResource Secret, as a component's Data function
// returns it.
func ObjectsOfData(data map[string][]byte) ([]*unstructured.Unstructured, error) {
	objects, err := managedresources.ExtractObjectsFromSecret(yamlDecoder, &corev1.Secret{Data: data})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, obj := range objects {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}
