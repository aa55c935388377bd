// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

var _ = Describe("Kubelet stand-in", func() {
	Describe("expandVars", func() {
		vars := map[string]string{"RUNTIME_NAMESPACE": "flux-system", "EMPTY": ""}

		DescribeTable("expands like kubelet",
			func(in, out string) { Expect(expandVars(in, vars)).To(Equal(out)) },
			Entry("a defined variable", "source-controller.$(RUNTIME_NAMESPACE).svc", "source-controller.flux-system.svc"),
			Entry("an empty variable", "a$(EMPTY)b", "ab"),
			Entry("an undefined variable stays", "$(UNDEFINED)/x", "$(UNDEFINED)/x"),
			Entry("an escaped reference", "$$(RUNTIME_NAMESPACE)", "$(RUNTIME_NAMESPACE)"),
			Entry("an escaped dollar", "a$$b", "a$b"),
			Entry("a dollar without parenthesis", "$HOME and $", "$HOME and $"),
			Entry("an unclosed reference", "x$(RUNTIME_NAMESPACE", "x$(RUNTIME_NAMESPACE"),
			Entry("two references", "$(RUNTIME_NAMESPACE)/$(RUNTIME_NAMESPACE)", "flux-system/flux-system"),
		)
	})

	Describe("containerEnv", func() {
		fields := podFields{namespace: "flux-system", name: "source-controller-abc", serviceAccount: "source-controller"}

		It("resolves values, earlier variables, fieldRefs and resourceFieldRefs", func() {
			c := corev1.Container{
				Name: "manager",
				Env: []corev1.EnvVar{
					{Name: "RUNTIME_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "ADDR", Value: "svc.$(RUNTIME_NAMESPACE).$(LATER)"},
					{Name: "LATER", Value: "x"},
					{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "manager", Resource: "limits.memory"}}},
					{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}},
					{Name: "CPUS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}},
				},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("50m")},
				},
			}
			env, vars, err := containerEnv(c, fields)
			Expect(err).NotTo(HaveOccurred())
			Expect(env).To(Equal([]string{
				"RUNTIME_NAMESPACE=flux-system",
				"POD=source-controller-abc",
				// Only variables defined before are expanded.
				"ADDR=svc.flux-system.$(LATER)",
				"LATER=x",
				"GOMEMLIMIT=1073741824",
				"MEM_MI=64",
				// Rounded up to whole CPUs.
				"CPUS=1",
			}))
			Expect(vars).To(HaveKeyWithValue("RUNTIME_NAMESPACE", "flux-system"))
		})

		DescribeTable("rejects what it cannot resolve",
			func(e corev1.EnvVar, message string) {
				_, _, err := containerEnv(corev1.Container{Name: "manager", Env: []corev1.EnvVar{e}}, fields)
				Expect(err).To(MatchError(ContainSubstring(message)))
			},
			Entry("an unset resource", corev1.EnvVar{Name: "M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}, "limits.memory is not set"),
			Entry("another container's resources", corev1.EnvVar{Name: "M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "other", Resource: "limits.memory"}}}, "only the container's own resources"),
			Entry("an unknown fieldPath", corev1.EnvVar{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}, "unsupported fieldPath status.podIP"),
			Entry("a secretKeyRef", corev1.EnvVar{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}, "only fieldRef and resourceFieldRef"),
		)
	})

	Describe("listenLocally", func() {
		It("moves every listener to a free loopback port and advertises the storage address", func() {
			args := []string{
				"--watch-all-namespaces",
				"--storage-path=/data",
				"--storage-adv-addr=source-controller.flux-system.svc.cluster.local.",
				"--metrics-addr=:18080",
			}
			out, addresses, advertised, err := listenLocally(args, runnableFluxControllers[sourceController], nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(addresses).To(HaveLen(3))
			// The in-cluster ports: defaults, or the delivered value.
			Expect(addresses).To(HaveKey(int32(9090)))
			Expect(addresses).To(HaveKey(int32(18080)))
			Expect(addresses).To(HaveKey(int32(9440)))
			for _, address := range addresses {
				host, _, err := net.SplitHostPort(address)
				Expect(err).NotTo(HaveOccurred())
				Expect(host).To(Equal("127.0.0.1"))
			}
			storage := addresses[9090]
			Expect(out).To(ConsistOf(
				"--watch-all-namespaces",
				"--storage-path=/data",
				"--storage-addr="+storage,
				"--storage-adv-addr="+storage,
				"--metrics-addr="+addresses[18080],
				"--health-addr="+addresses[9440],
			))
			Expect(advertised).To(Equal(map[string]string{"storage-addr": storage}))

			By("replacing the pod: the advertised listener keeps its address, as behind a Service")
			again, next, _, err := listenLocally(args, runnableFluxControllers[sourceController], advertised)
			Expect(err).NotTo(HaveOccurred())
			Expect(next[9090]).To(Equal(storage))
			Expect(again).To(ContainElements("--storage-addr="+storage, "--storage-adv-addr="+storage))
		})

		It("rejects a listen address without a port", func() {
			_, _, _, err := listenLocally([]string{"--health-addr=localhost"}, runnableFluxControllers["kustomize-controller"], nil)
			Expect(err).To(MatchError(ContainSubstring("invalid --health-addr=localhost")))
		})
	})

	Describe("volumePaths", func() {
		It("rewrites paths below emptyDir mounts, the longest mount first", func(ctx context.Context) {
			dir := GinkgoT().TempDir()
			spec := corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			}}
			c := corev1.Container{VolumeMounts: []corev1.VolumeMount{
				{Name: "data", MountPath: "/data"},
				{Name: "tmp", MountPath: "/tmp/"},
				{Name: "cache", MountPath: "/data/cache"},
			}}
			volumes, err := mountVolumes(ctx, nil, "ns", spec, c, dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(filepath.Join(dir, "data")).To(BeADirectory())

			Expect(volumes.rewriteArg("--storage-path=/data")).To(Equal("--storage-path=" + filepath.Join(dir, "data")))
			Expect(volumes.rewriteArg("--storage-path=/data/cache/x")).To(Equal("--storage-path=" + filepath.Join(dir, "cache", "x")))
			Expect(volumes.rewriteArg("--storage-path=/database")).To(Equal("--storage-path=/database"))
			Expect(volumes.rewriteArg("--watch-all-namespaces")).To(Equal("--watch-all-namespaces"))
			Expect(volumes.rewrite("/tmp/.sigstore")).To(Equal(filepath.Join(dir, "tmp", ".sigstore")))
			Expect(volumes.rewrite("relative/tmp")).To(Equal("relative/tmp"))
		})

		It("rejects other volume types", func(ctx context.Context) {
			spec := corev1.PodSpec{Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}}
			c := corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}}
			_, err := mountVolumes(ctx, nil, "ns", spec, c, GinkgoT().TempDir())
			Expect(err).To(MatchError(ContainSubstring("volume config: only emptyDir and configMap volumes are supported")))
		})
	})

	Describe("readinessProbe", func() {
		It("probes the named port at its local address", func() {
			listener, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			var ready atomic.Bool
			server := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" || !ready.Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			})}
			go func() { _ = server.Serve(listener) }()
			DeferCleanup(server.Close)

			c := corev1.Container{
				Ports:          []corev1.ContainerPort{{Name: "healthz", ContainerPort: 9440}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("healthz")}}},
			}
			probe, err := readinessProbe(c, map[int32]string{9440: listener.Addr().String()})
			Expect(err).NotTo(HaveOccurred())
			Expect(probe(context.Background())).To(BeFalse())
			ready.Store(true)
			Expect(probe(context.Background())).To(BeTrue())
		})

		It("rejects a port no listen flag serves", func() {
			c := corev1.Container{ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(9999)}}}}
			_, err := readinessProbe(c, map[int32]string{9440: "127.0.0.1:1"})
			Expect(err).To(MatchError(ContainSubstring("port 9999 is not served")))
		})
	})

	Describe("deploymentStatus", func() {
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		deployment := func() *appsv1.Deployment {
			return &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "kustomize-controller", Generation: 3},
				Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			}
		}
		condition := func(status appsv1.DeploymentStatus, typ appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
			for _, c := range status.Conditions {
				if c.Type == typ {
					return c
				}
			}
			Fail("no condition " + string(typ))
			return appsv1.DeploymentCondition{}
		}

		It("reports a ready pod as available, in a way gardener's health check accepts", func() {
			d := deployment()
			status, availableIn := deploymentStatus(d, "abc", podState{running: true, ready: true, readySince: now.Add(-time.Second)}, now)
			Expect(availableIn).To(BeZero())
			Expect(status.ObservedGeneration).To(Equal(int64(3)))
			Expect(status.Replicas).To(Equal(int32(1)))
			Expect(status.UpdatedReplicas).To(Equal(int32(1)))
			Expect(status.ReadyReplicas).To(Equal(int32(1)))
			Expect(status.AvailableReplicas).To(Equal(int32(1)))
			Expect(status.UnavailableReplicas).To(BeZero())
			Expect(condition(status, appsv1.DeploymentAvailable).Status).To(Equal(corev1.ConditionTrue))
			Expect(condition(status, appsv1.DeploymentProgressing).Reason).To(Equal("NewReplicaSetAvailable"))
		})

		It("reports a running pod that is not ready as unavailable", func() {
			status, _ := deploymentStatus(deployment(), "abc", podState{running: true}, now)
			Expect(status.Replicas).To(Equal(int32(1)))
			Expect(status.AvailableReplicas).To(BeZero())
			Expect(status.UnavailableReplicas).To(Equal(int32(1)))
			Expect(condition(status, appsv1.DeploymentAvailable).Status).To(Equal(corev1.ConditionFalse))
			Expect(condition(status, appsv1.DeploymentProgressing).Reason).To(Equal("ReplicaSetUpdated"))
		})

		It("waits minReadySeconds before a ready pod counts as available", func() {
			d := deployment()
			d.Spec.MinReadySeconds = 10
			status, availableIn := deploymentStatus(d, "abc", podState{running: true, ready: true, readySince: now.Add(-4 * time.Second)}, now)
			Expect(status.ReadyReplicas).To(Equal(int32(1)))
			Expect(status.AvailableReplicas).To(BeZero())
			Expect(availableIn).To(Equal(6 * time.Second))
		})

		It("reports a Deployment scaled to 0 as available", func() {
			d := deployment()
			d.Spec.Replicas = ptr.To[int32](0)
			status, _ := deploymentStatus(d, "abc", podState{}, now)
			Expect(status.Replicas).To(BeZero())
			Expect(condition(status, appsv1.DeploymentAvailable).Status).To(Equal(corev1.ConditionTrue))
		})

		It("keeps the transition time while the condition's status holds", func() {
			d := deployment()
			status, _ := deploymentStatus(d, "abc", podState{running: true}, now)
			d.Status = status
			later := now.Add(time.Minute)
			status, _ = deploymentStatus(d, "abc", podState{running: true, ready: true, readySince: later}, later)
			Expect(condition(status, appsv1.DeploymentProgressing).LastTransitionTime.Time).To(Equal(now))
			Expect(condition(status, appsv1.DeploymentProgressing).LastUpdateTime.Time).To(Equal(later))
			Expect(condition(status, appsv1.DeploymentAvailable).LastTransitionTime.Time).To(Equal(later))
		})
	})

	It("names a controller by its image repository", func() {
		Expect(imageName("ghcr.io/fluxcd/source-controller:v1.9.5")).To(Equal("source-controller"))
		Expect(imageName("my.mirror:5000/cache/fluxcd/kustomize-controller@sha256:0123")).To(Equal("kustomize-controller"))
		Expect(imageName("fluxcd/helm-controller:v1.6.4@sha256:0123")).To(Equal("helm-controller"))
	})

	It("picks the binary by image repository and tag, so each Flux release runs its own", func() {
		k := &Kubelet{binaries: map[string]string{"source-controller:v1.7.4": "/old", "source-controller:v1.9.5": "/new"}}
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "manager", Image: "my.mirror:5000/fluxcd/source-controller:v1.7.4"},
		}}}}}
		_, component, binary, ok := k.runnable(d)
		Expect(ok).To(BeTrue())
		Expect(component).To(Equal("source-controller"))
		Expect(binary).To(Equal("/old"))

		d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/fluxcd/source-controller:v1.8.0"
		_, _, _, ok = k.runnable(d)
		Expect(ok).To(BeFalse(), "a release without a binary does not run another release's")
	})

	It("writes a kubeconfig that authenticates with the token only", func() {
		file := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		shoot := &cluster.Cluster{Name: "shoot", Config: &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}}}
		Expect(writeTokenKubeconfig(file, shoot, "token-value")).To(Succeed())
		info, err := os.Stat(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(data)).To(ContainSubstring("token: token-value"))
		Expect(string(data)).To(ContainSubstring("server: https://127.0.0.1:6443"))
		Expect(string(data)).NotTo(ContainSubstring("client-key"))
	})
})
