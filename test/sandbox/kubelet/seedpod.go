// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The seed's kubelet stand-in's pod of the extension: its garden identity, its probe, its Pod
// object and the status kubelet and the Deployment controller would write.

// createPodObject creates the Pod of the template as the ReplicaSet controller would, so that the
// seed's admission (the namespace's pod security level) checks it and gardener-resource-manager's
// progressing check counts it.
func (k *SeedKubelet) createPodObject(ctx context.Context, d *appsv1.Deployment, hash string) (*corev1.Pod, error) {
	labels := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}
	for key, value := range d.Spec.Template.Labels {
		labels[key] = value
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    d.Namespace,
			GenerateName: d.Name + "-" + hash + "-",
			Labels:       labels,
			Annotations:  d.Spec.Template.Annotations,
		},
		Spec: *d.Spec.Template.Spec.DeepCopy(),
	}
	if err := k.client.Create(ctx, pod); err != nil {
		return nil, fmt.Errorf("failed creating the Pod of Deployment %s: %w", client.ObjectKeyFromObject(d), err)
	}
	return pod, nil
}

func (k *SeedKubelet) deletePodObject(ctx context.Context, namespace, name string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := k.client.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed deleting Pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// writeStatus writes the Pod's and the Deployment's status as kubelet and the Deployment
// controller would for the pod p (nil: none runs).
func (k *SeedKubelet) writeStatus(ctx context.Context, d *appsv1.Deployment, hash string, p *extensionPod) error {
	var state podState
	k.mu.Lock()
	if p != nil {
		state = podState{running: !p.exited, ready: p.ready && !p.exited, readySince: p.readySince}
	}
	k.mu.Unlock()
	if p != nil {
		if err := k.writePodStatus(ctx, d.Namespace, p.object, state); err != nil {
			return err
		}
	}
	status, _ := deploymentStatus(d, hash, state, time.Now())
	if apiequality.Semantic.DeepEqual(status, d.Status) {
		return nil
	}
	d.Status = status
	if err := k.client.Status().Update(ctx, d); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed updating the status of Deployment %s: %w", client.ObjectKeyFromObject(d), err)
	}
	return nil
}

func (k *SeedKubelet) writePodStatus(ctx context.Context, namespace, name string, state podState) error {
	pod := &corev1.Pod{}
	if err := k.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	ready := corev1.ConditionFalse
	if state.ready {
		ready = corev1.ConditionTrue
	}
	status := corev1.PodStatus{
		Phase:  corev1.PodRunning,
		HostIP: "127.0.0.1",
		PodIP:  "127.0.0.1",
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: ready},
			{Type: corev1.ContainersReady, Status: ready},
		},
	}
	if len(pod.Status.Conditions) == len(status.Conditions) {
		for i := range status.Conditions {
			if pod.Status.Conditions[i].Status == status.Conditions[i].Status {
				status.Conditions[i].LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
		}
	}
	for i := range status.Conditions {
		if status.Conditions[i].LastTransitionTime.IsZero() {
			status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if pod.Status.Phase == status.Phase && apiequality.Semantic.DeepEqual(pod.Status.Conditions, status.Conditions) {
		return nil
	}
	pod.Status.Phase, pod.Status.HostIP, pod.Status.PodIP, pod.Status.Conditions = status.Phase, status.HostIP, status.PodIP, status.Conditions
	if err := k.client.Status().Update(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed updating the status of Pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// gardenUser is the garden identity of the pod: the ServiceAccount of the garden access Secret
// (resources.gardener.cloud/class garden) that the pod's volumes project, as gardenlet's token
// requestor names it; empty if the pod projects none.
func (k *SeedKubelet) gardenUser(ctx context.Context, d *appsv1.Deployment) (string, error) {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				continue
			}
			secret := &corev1.Secret{}
			if err := k.client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: src.Secret.Name}, secret); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return "", fmt.Errorf("failed reading Secret %s of the pod: %w", src.Secret.Name, err)
			}
			if secret.Labels[resourcesv1alpha1.ResourceManagerClass] != resourcesv1alpha1.ResourceManagerClassGarden {
				continue
			}
			account := secret.Annotations[resourcesv1alpha1.ServiceAccountName]
			namespace := secret.Annotations[resourcesv1alpha1.ServiceAccountNamespace]
			if namespace == "" {
				namespace = k.opts.GardenAccessNamespace
			}
			return "system:serviceaccount:" + namespace + ":" + account, nil
		}
	}
	return "", nil
}

// probe watches the container: readiness (the readiness probe's /readyz) until it is ready, and
// the end of the process; each change makes the controller look at the Deployment again.
func (k *SeedKubelet) probe(p *extensionPod, healthAddr string) {
	defer close(p.done)
	httpClient := &http.Client{Timeout: httpTimeout}
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	ready := false
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-ticker.C:
		}
		if exited, err := p.pod.Exited(); exited {
			if err == nil {
				err = errors.New("exit status 0")
			}
			err = fmt.Errorf("the extension's container ended: %w", err)
			k.log.Info("The extension's container ended", "pod", p.object, "error", err.Error())
			k.mu.Lock()
			p.exited, p.exitErr = true, err
			k.ended(p, err)
			k.mu.Unlock()
			k.notify(p.deployment)
			return
		}
		if ready {
			continue
		}
		req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, "http://"+healthAddr+"/readyz", nil)
		if err != nil {
			continue
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		ready = true
		k.mu.Lock()
		p.ready, p.readySince = true, time.Now()
		k.crashes = 0
		k.mu.Unlock()
		k.notify(p.deployment)
	}
}
