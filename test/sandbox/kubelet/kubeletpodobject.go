// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// NodeName is the spec.nodeName of the pods the kubelet stand-in publishes: the one node the
// stand-in plays. No Node object exists.
const NodeName = "sandbox-node"

// The kubelet stand-in publishes a Pod for every process it runs, so that kubectl, Prometheus'
// service discovery and kube-apiserver's pod proxy see it, with a pod IP the VPN stand-in routes to
// the process. Its owner is the Deployment (no ReplicaSet runs here); a deleted Pod ends the process
// and the Deployment gets a new one (docs/development/sandbox.md).

// podDeletions passes the events of Pods that are being deleted or are gone.
var podDeletions = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectNew.GetDeletionTimestamp() != nil },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// podObject is the Pod object of the process, without status.
func podObject(d *appsv1.Deployment, p *controllerPod) *corev1.Pod {
	template := d.Spec.Template.DeepCopy()
	labels := maps.Clone(template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[appsv1.DefaultDeploymentUniqueLabelKey] = p.hash
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   d.Namespace,
			Name:        p.name,
			Labels:      labels,
			Annotations: template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appsv1.SchemeGroupVersion.String(),
				Kind:       "Deployment",
				Name:       d.Name,
				UID:        d.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: template.Spec,
	}
	pod.Spec.NodeName = NodeName
	return pod
}

// podStatus is the status kubelet would report for the pod in state.
func podStatus(spec corev1.PodSpec, p *controllerPod, state podState, restarts int) corev1.PodStatus {
	ready := corev1.ConditionFalse
	if state.ready {
		ready = corev1.ConditionTrue
	}
	started := metav1.NewTime(p.created.Truncate(time.Second))
	running := metav1.NewTime(state.runStarted.Truncate(time.Second))
	status := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: started},
			{Type: corev1.PodReady, Status: ready, LastTransitionTime: started},
		},
		PodIP:     p.ip.String(),
		PodIPs:    []corev1.PodIP{{IP: p.ip.String()}},
		StartTime: &started,
	}
	if !state.readySince.IsZero() && state.ready {
		since := metav1.NewTime(state.readySince.Truncate(time.Second))
		status.Conditions[2].LastTransitionTime, status.Conditions[3].LastTransitionTime = since, since
	}
	for _, c := range spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		switch {
		case c.Image != p.image:
			// Only the controller's container runs as a process.
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "NotRunInSandbox"}
		case state.running:
			cs.Ready, cs.Started, cs.RestartCount = state.ready, ptr.To(true), int32(restarts)
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: running}
		default:
			cs.RestartCount = int32(restarts)
			cs.Started = ptr.To(false)
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
	}
	return status
}

// syncPodObject creates the Pod object of the Deployment's process or updates its status. It
// returns true if the Pod was deleted by someone else: the process was stopped and the
// Deployment needs a new pod.
func (k *Kubelet) syncPodObject(ctx context.Context, d *appsv1.Deployment, p *controllerPod) (bool, error) {
	if p == nil || !p.ip.IsValid() {
		return false, nil
	}
	state, restarts := p.state(), p.restartCount()
	current := &corev1.Pod{}
	err := k.shoot.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: p.name}, current)
	switch {
	case apierrors.IsNotFound(err) && p.isPublished():
		k.stopPod(p.key, "Pod deleted")
		return true, nil
	case apierrors.IsNotFound(err):
		pod := podObject(d, p)
		if err := k.shoot.Client.Create(ctx, pod); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return false, nil
			}
			return false, fmt.Errorf("failed publishing Pod %s/%s: %w", d.Namespace, p.name, err)
		}
		p.setPublished()
		current = pod
	case err != nil:
		return false, fmt.Errorf("failed reading Pod %s/%s: %w", d.Namespace, p.name, err)
	case current.DeletionTimestamp != nil:
		k.stopPod(p.key, "Pod deleted")
		return true, nil
	default:
		p.setPublished()
	}
	status := podStatus(current.Spec, p, state, restarts)
	// The API server sets the QoS class on creation and refuses to change it.
	status.QOSClass = current.Status.QOSClass
	if apiequality.Semantic.DeepEqual(status, current.Status) {
		return false, nil
	}
	current.Status = status
	if err := k.shoot.Client.Status().Update(ctx, current); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Deleted or changed meanwhile: the event brings the Deployment back.
			return false, nil
		}
		return false, fmt.Errorf("failed updating status of Pod %s/%s: %w", d.Namespace, p.name, err)
	}
	return false, nil
}

// deletePodObject removes the Pod object of a stopped process at once, as kubelet confirms the
// end of a pod with a deletion without grace period, and releases its IP.
func (k *Kubelet) deletePodObject(p *controllerPod) {
	if !p.ip.IsValid() {
		return
	}
	k.vpn.RemovePod(p.ip)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.key.Namespace, Name: p.name}}
	// The kubelet's context ends when it stops; the node is gone then and its pods stay, as in a
	// landscape until the pod garbage collector removes them.
	if err := k.shoot.Client.Delete(k.ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil && k.ctx.Err() == nil {
		k.log.Error(err, "Failed deleting Pod", "pod", client.ObjectKeyFromObject(pod))
	}
}

// allocatePodIP gives the pod an address of network.PodNetwork that the VPN stand-in routes to the
// local listeners of its ports; none without a VPN.
func (k *Kubelet) allocatePodIP(p *controllerPod, ports map[int32]string) error {
	if k.vpn == nil {
		return nil
	}
	ip, err := k.vpn.AddPod(p.key.Namespace+"/"+p.name, ports)
	if err != nil {
		return err
	}
	p.ip = ip
	return nil
}

func (p *controllerPod) isPublished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.published
}

func (p *controllerPod) setPublished() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.published = true
}
