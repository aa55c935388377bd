// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"net/netip"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ = Describe("The Pods of the kubelet stand-in", func() {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", UID: "uid"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "source-controller"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "manager",
				Image: "ghcr.io/fluxcd/source-controller:v1.9.5",
				Ports: []corev1.ContainerPort{{Name: "http-prom", ContainerPort: 8080}},
			}}},
		}},
	}
	p := &controllerPod{
		key:     types.NamespacedName{Namespace: "flux-system", Name: "source-controller"},
		name:    "source-controller-abc-xyz",
		image:   "ghcr.io/fluxcd/source-controller:v1.9.5",
		hash:    "abc",
		ip:      netip.MustParseAddr("10.200.0.7"),
		created: time.Now(),
	}

	It("are the template's pod on the stand-in's node, owned by the Deployment", func() {
		pod := podObject(d, p)
		Expect(pod.Name).To(Equal(p.name))
		Expect(pod.Labels).To(Equal(map[string]string{"app": "source-controller", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}))
		Expect(pod.Spec.NodeName).To(Equal(NodeName))
		Expect(pod.Spec.Containers[0].Ports).To(Equal(d.Spec.Template.Spec.Containers[0].Ports))
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("Name", "source-controller")))
		Expect(d.Spec.Template.Labels).NotTo(HaveKey(appsv1.DefaultDeploymentUniqueLabelKey), "the template stays as it is")
	})

	DescribeTable("report the process's state as kubelet would",
		func(state podState, ready corev1.ConditionStatus, running bool, waiting string) {
			status := podStatus(d.Spec.Template.Spec, p, state, 2)
			Expect(status.Phase).To(Equal(corev1.PodRunning))
			Expect(status.PodIP).To(Equal("10.200.0.7"))
			Expect(status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodReady), HaveField("Status", ready))))
			cs := status.ContainerStatuses[0]
			Expect(cs.RestartCount).To(Equal(int32(2)))
			Expect(cs.State.Running != nil).To(Equal(running))
			if waiting != "" {
				Expect(cs.State.Waiting).To(HaveField("Reason", waiting))
			}
		},
		Entry("ready", podState{running: true, ready: true, readySince: time.Now()}, corev1.ConditionTrue, true, ""),
		Entry("starting", podState{running: true}, corev1.ConditionFalse, true, ""),
		Entry("waiting for its restart", podState{}, corev1.ConditionFalse, false, "CrashLoopBackOff"),
	)
})
