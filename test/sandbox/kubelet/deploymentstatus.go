// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The status the Deployment controller would write for a Deployment whose one pod the kubelet
// stand-ins run; both stand-ins write it, as no Deployment controller runs in the sandbox.

// templateHash identifies a pod template, like the pod-template-hash of the Deployment
// controller's ReplicaSets.
func templateHash(template *corev1.PodTemplateSpec) (string, error) {
	data, err := json.Marshal(template)
	if err != nil {
		return "", fmt.Errorf("failed encoding pod template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10], nil
}

// podState is what the Deployment status is computed from.
type podState struct {
	// running: a process runs; ready: its readiness probe succeeds; readySince: since when.
	running, ready bool
	readySince     time.Time
	// runStarted is when the current run of the process started.
	runStarted time.Time
}

// deploymentStatus computes the status the Deployment controller would write for a Deployment
// whose single pod is in state, and how long it takes until a ready pod counts as available
// (minReadySeconds); 0 if that is not pending. More than one desired replica leaves the
// Deployment unavailable: the stand-in runs one process per Deployment.
func deploymentStatus(d *appsv1.Deployment, hash string, state podState, now time.Time) (appsv1.DeploymentStatus, time.Duration) {
	desired := ptr.Deref(d.Spec.Replicas, 1)
	var replicas, ready, available int32
	var availableIn time.Duration
	if state.running {
		replicas = 1
	}
	if state.ready {
		ready = 1
		minReady := time.Duration(d.Spec.MinReadySeconds) * time.Second
		if since := now.Sub(state.readySince); since >= minReady {
			available = 1
		} else {
			availableIn = minReady - since
		}
	}

	status := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            replicas,
		UpdatedReplicas:     replicas,
		ReadyReplicas:       ready,
		AvailableReplicas:   available,
		UnavailableReplicas: max(desired-available, 0),
		Conditions:          slices.Clone(d.Status.Conditions),
	}
	replicaSet := d.Name + "-" + hash
	if available >= desired {
		setDeploymentCondition(&status, appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability.", now)
		setDeploymentCondition(&status, appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", replicaSet), now)
	} else {
		setDeploymentCondition(&status, appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", now)
		setDeploymentCondition(&status, appsv1.DeploymentProgressing, corev1.ConditionTrue, "ReplicaSetUpdated", fmt.Sprintf("ReplicaSet %q is progressing.", replicaSet), now)
	}
	return status, availableIn
}

// setDeploymentCondition sets a condition, keeping its times while nothing about it changes.
func setDeploymentCondition(status *appsv1.DeploymentStatus, typ appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, message string, now time.Time) {
	c := appsv1.DeploymentCondition{
		Type:               typ,
		Status:             s,
		Reason:             reason,
		Message:            message,
		LastUpdateTime:     metav1.NewTime(now.Truncate(time.Second)),
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	}
	for i, old := range status.Conditions {
		if old.Type != typ {
			continue
		}
		if old.Status == s {
			c.LastTransitionTime = old.LastTransitionTime
			if old.Reason == reason && old.Message == message {
				c.LastUpdateTime = old.LastUpdateTime
			}
		}
		status.Conditions[i] = c
		return
	}
	status.Conditions = append(status.Conditions, c)
}

// readySince is the pod's ready time while it is ready: readySince is kept across a restart.
func readySince(s podState) time.Time {
	if !s.ready {
		return time.Time{}
	}
	return s.readySince
}
