// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/network"
)

var (
	// ControllerProbeInterval is how often the kubelet stand-in probes the readiness of a controller
	// process. kubelet waits the probe's periodSeconds (10s by default) between probes, which would
	// make every scenario wait that long for a Deployment to become available.
	ControllerProbeInterval = 500 * time.Millisecond
	// ControllerRestartBackoff is how long the kubelet stand-in waits before it starts a controller
	// process that ended again; the wait doubles with every restart up to
	// ControllerMaxRestartBackoff (kubelet's crash loop back-off goes from 10s to 5m).
	ControllerRestartBackoff = time.Second
	// ControllerMaxRestartBackoff bounds the wait before a restart.
	ControllerMaxRestartBackoff = 30 * time.Second
	// ControllerLogTail is how much of the end of each controller's log ShootHandle.ControllerLogs
	// returns.
	ControllerLogTail = 16 * 1024
)

// sourceController is the Flux component that fetches sources; the others act on its artifacts.
const sourceController = "source-controller"

// listenFlag is a controller flag that takes a listen address, with the port it listens on in a
// cluster when the Deployment does not set the flag.
type listenFlag struct {
	name string
	port int32
}

// runnableController says how the kubelet stand-in runs a controller on a machine without cluster
// networking.
type runnableController struct {
	// listen are the flags that take listen addresses. Every process gets free 127.0.0.1 ports:
	// all of them share the machine's network, where the ports of the pod spec collide.
	listen []listenFlag
	// advertise maps a flag that tells clients where a listener is to that listener's flag: the
	// in-cluster Service name it holds does not resolve here.
	advertise map[string]string
	// leaderElection is the flag that enables leader election; the stand-in sets it false.
	// controller-runtime finds the namespace of the lease only in the pod's ServiceAccount volume
	// (/var/run/secrets/kubernetes.io/serviceaccount/namespace), which a process outside a mount
	// namespace of its own cannot be given, and the Flux controllers have no flag for it. With one
	// process per Deployment there is no one to elect, and a restarted process need not wait for
	// the lease of the one it replaces to expire.
	leaderElection string
	// command is the executable of the image the binary stands in for, for containers that name
	// it in their command instead of running the image's entrypoint (see containerCommand).
	command string
	// imageEnv is the environment the image sets (its ENV), which the container's env overrides.
	imageEnv []string
}

// runnableFluxControllers are the Flux controllers the kubelet stand-in can run, by the name of
// their image repository, which is also the Flux component name.
var runnableFluxControllers = map[string]runnableController{
	sourceController: {
		listen: []listenFlag{{name: "storage-addr", port: 9090}, {name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		// kustomize- and helm-controller fetch artifacts from the URL source-controller advertises.
		advertise:      map[string]string{"storage-adv-addr": "storage-addr"},
		leaderElection: "enable-leader-election",
	},
	"kustomize-controller": {
		listen:         []listenFlag{{name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		leaderElection: "enable-leader-election",
	},
	"helm-controller": {
		listen:         []listenFlag{{name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		leaderElection: "enable-leader-election",
	},
}

// kluctlController is the name of the kluctl image repository, and the component name of the
// kluctl controller in the kubelet stand-in.
const kluctlController = "kluctl"

// runnableKluctlController says how the kubelet stand-in runs the kluctl controller: the
// delivered container runs "tini -- kluctl controller run" with the flags of controller-runtime's
// manager. Its leader election takes the lease namespace from --controller-namespace and would
// work, but is off as for Flux: one process per Deployment has no one to elect.
var runnableKluctlController = runnableController{
	listen: []listenFlag{
		{name: "metrics-bind-address", port: 8080},
		{name: "health-probe-bind-address", port: 8081},
		{name: "source-override-bind-address", port: 8082},
	},
	leaderElection: "leader-elect",
	command:        "kluctl",
	// As the image sets them: the image has git on its PATH, which kluctl runs when go-git cannot
	// read the status of a checkout of its repository cache, and keeps its caches in /tmp.
	imageEnv: []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HELM_CACHE_HOME=/tmp/helm-cache",
		"KLUCTL_CACHE_DIR=/tmp/kluctl-cache",
	},
}

// runnableControllers returns how the kubelet stand-in runs a component, a Flux controller or
// kluctlController.
func runnableControllers(component string) runnableController {
	if component == kluctlController {
		return runnableKluctlController
	}
	return runnableFluxControllers[component]
}

// RunnableFluxControllers returns the Flux components the kubelet stand-in of a shoot with
// ShootSpec.RunControllers can run when Options.FluxControllers has their binaries.
func RunnableFluxControllers() []string {
	names := make([]string, 0, len(runnableFluxControllers))
	for name := range runnableFluxControllers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// kubelet stands in for the kubelet and the Deployment controller of a shoot without nodes: every
// Deployment whose container image is one of Options.FluxControllers or Options.KluctlControllers
// runs as a process of the binary of that image (component and tag, so each release runs its own
// controllers) against the shoot's API server, authenticated as the Deployment's ServiceAccount,
// with the container's args and env. It writes the Deployment's status as the
// Deployment controller would. Other Deployments are left alone. What it adjusts for a machine
// without cluster networking is listed in docs/development/sandbox.md.
type kubelet struct {
	log      logr.Logger
	shoot    *Cluster
	binaries map[string]string
	// nodeEnv comes before the image's and the container's env of every process (ShootSpec.NodeEnv).
	nodeEnv []string
	// vpn routes the pod IPs of the published Pods to the processes (kubeletpodobject.go).
	vpn    *network.VPN
	dir    string
	client client.Client
	events chan event.GenericEvent
	// ctx ends when the kubelet stops; the pods' watchers probe and report with it.
	ctx    context.Context
	cancel context.CancelFunc
	runner *cluster.Runner

	mu   sync.Mutex
	pods map[types.NamespacedName]*controllerPod
	// advertised are the addresses of the advertised listeners of each Deployment's pods, by flag;
	// they stand in for the Deployment's Service and outlive its pods.
	advertised map[types.NamespacedName]map[string]string
	// started lists every pod in start order, for the logs.
	started []*controllerPod
}

func startKubelet(ctx context.Context, log logr.Logger, shoot *Cluster, binaries map[string]string, nodeEnv []string, v *network.VPN) (*kubelet, error) {
	mgr, err := cluster.NewManager(log, shoot)
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	dir, err := os.MkdirTemp("", "shoot-flux-kubelet-"+cluster.FileName(shoot.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("failed creating kubelet directory of shoot %s: %w", shoot.Name, err)
	}
	k := &kubelet{
		log:        log,
		shoot:      shoot,
		binaries:   binaries,
		nodeEnv:    nodeEnv,
		vpn:        v,
		dir:        dir,
		client:     mgr.GetClient(),
		events:     make(chan event.GenericEvent, 64),
		pods:       map[types.NamespacedName]*controllerPod{},
		advertised: map[types.NamespacedName]map[string]string{},
	}
	// The processes outlive the caller's context; stop ends them.
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := builder.ControllerManagedBy(mgr).
		Named("kubelet").
		For(&appsv1.Deployment{}).
		// Process exits and readiness changes, reported by the pods' watchers.
		WatchesRawSource(source.Channel(k.events, &handler.EnqueueRequestForObject{})).
		// Pods deleted by others end their process (kubeletpodobject.go).
		Watches(&corev1.Pod{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1.Deployment{}, handler.OnlyControllerOwner()), builder.WithPredicates(podDeletions)).
		// Stopping a process takes up to its grace period; others must not wait for it.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(k); err != nil {
		k.cancel()
		return nil, errors.Join(fmt.Errorf("failed adding kubelet controller: %w", err), os.RemoveAll(dir))
	}
	if k.runner, err = cluster.StartManager(ctx, log, "kubelet "+shoot.Name, mgr); err != nil {
		k.cancel()
		k.stopPods()
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return k, nil
}

// stop ends the controller, killing the processes it is stopping, and then every other process,
// each with its grace period, and removes the processes' files.
func (k *kubelet) stop() error {
	if k == nil {
		return nil
	}
	k.cancel()
	err := k.runner.Stop()
	k.stopPods()
	return errors.Join(err, os.RemoveAll(k.dir))
}

// stopPods stops every process, in parallel, each with its grace period.
func (k *kubelet) stopPods() {
	k.mu.Lock()
	pods := k.pods
	k.pods = map[types.NamespacedName]*controllerPod{}
	k.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Go(func() { p.stop(nil) })
	}
	wg.Wait()
}

// notify makes the controller look at the Deployment again.
func (k *kubelet) notify(key types.NamespacedName) {
	select {
	case k.events <- event.GenericEvent{Object: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	case <-k.ctx.Done():
	}
}

// runnable returns the first container whose image has a binary, the controller's name and the
// binary.
func (k *kubelet) runnable(d *appsv1.Deployment) (corev1.Container, string, string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if binary, ok := k.binaries[imageKey(c.Image)]; ok {
			return c, imageName(c.Image), binary, true
		}
	}
	return corev1.Container{}, "", "", false
}

func (k *kubelet) advertisedAddresses(key types.NamespacedName) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.advertised[key]
}

func (k *kubelet) setAdvertisedAddresses(key types.NamespacedName, addresses map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.advertised[key] = addresses
}

func (k *kubelet) pod(key types.NamespacedName) *controllerPod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[key]
}

// stopPod stops the Deployment's process, if any, with the pod's grace period. The kubelet's stop
// cuts the grace period short, as the end of a node ends its processes: its controller manager
// waits for the reconcile that stops the pod only for cluster.GracefulShutdownTimeout, and a process need
// not end on SIGTERM. A Flux controller whose RBAC was removed before its caches synced (its
// ManagedResource deleted right after it started) was seen to outlive SIGTERM by more than that.
func (k *kubelet) stopPod(key types.NamespacedName, reason string) {
	k.mu.Lock()
	p := k.pods[key]
	delete(k.pods, key)
	k.mu.Unlock()
	if p == nil {
		return
	}
	k.log.Info("Stopping controller", "deployment", key, "pod", p.name, "reason", reason, "gracePeriod", p.grace)
	p.stop(k.ctx.Done())
	k.deletePodObject(p)
}

// Reconcile runs, restarts or stops the Deployment's process and writes the Deployment's status.
func (k *kubelet) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.NamespacedName
	d := &appsv1.Deployment{}
	if err := k.client.Get(ctx, key, d); err != nil {
		if apierrors.IsNotFound(err) {
			k.stopPod(key, "Deployment deleted")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("failed reading Deployment %s: %w", key, err)
	}
	if d.DeletionTimestamp != nil {
		k.stopPod(key, "Deployment is being deleted")
		return reconcile.Result{}, nil
	}
	container, component, binary, ok := k.runnable(d)
	if !ok {
		k.stopPod(key, "no runnable image")
		return reconcile.Result{}, nil
	}

	desired := ptr.Deref(d.Spec.Replicas, 1)
	hash, err := templateHash(&d.Spec.Template)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := k.pod(key)
	switch {
	case p == nil:
	case desired == 0:
		k.stopPod(key, "scaled to 0")
		p = nil
	case p.hash != hash:
		// Recreate, whatever the strategy: one process per Deployment is all that runs.
		k.stopPod(key, "pod template changed")
		p = nil
	}

	var requeue time.Duration
	if desired > 0 {
		if p == nil {
			if p, err = k.startPod(ctx, d, container, component, binary, hash); err != nil {
				return reconcile.Result{}, fmt.Errorf("failed starting %s for Deployment %s: %w", component, key, err)
			}
		} else if requeue, err = p.restartIfDue(k); err != nil {
			return reconcile.Result{}, fmt.Errorf("failed restarting %s for Deployment %s: %w", component, key, err)
		}
	}

	deleted, err := k.syncPodObject(ctx, d, p)
	if err != nil {
		return reconcile.Result{}, err
	}
	if deleted {
		// The next reconcile starts a new pod, after the status told that none runs.
		p, requeue = nil, time.Millisecond
	}

	status, availableIn := deploymentStatus(d, hash, p.state(), time.Now())
	if availableIn > 0 && (requeue == 0 || availableIn < requeue) {
		requeue = availableIn
	}
	if apiequality.Semantic.DeepEqual(status, d.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	d.Status = status
	if err := k.client.Status().Update(ctx, d); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("failed updating status of Deployment %s: %w", key, err)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

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

// ControllerProcess is a controller the kubelet stand-in of a shoot runs or ran.
type ControllerProcess struct {
	// Namespace and Deployment name the Deployment; Pod is the name the process has as its pod
	// (env fieldRef metadata.name, the process's HOSTNAME).
	Namespace, Deployment, Pod string
	// Component is the controller, e.g. source-controller.
	Component string
	// Image is the container's image and Binary the file of Options.FluxControllers that runs it.
	Image, Binary string
	// Running tells whether the process runs; Ready whether its readiness probe succeeds.
	Running, Ready bool
	// ReadySince is when the readiness probe last turned successful; zero while not ready.
	ReadySince time.Time
	// Restarts counts how often the process ended and was started again.
	Restarts int
	// PodIP is the IP of the pod the stand-in publishes for the process, which the shoot's
	// kube-apiserver reaches through the VPN stand-in (pod proxy); empty without one.
	PodIP string
}

// processes lists the current pods in start order.
func (k *kubelet) processes() []ControllerProcess {
	k.mu.Lock()
	var pods []*controllerPod
	for _, p := range k.started {
		if k.pods[p.key] == p {
			pods = append(pods, p)
		}
	}
	k.mu.Unlock()
	out := make([]ControllerProcess, 0, len(pods))
	for _, p := range pods {
		state := p.state()
		out = append(out, ControllerProcess{
			Namespace:  p.key.Namespace,
			Deployment: p.key.Name,
			Pod:        p.name,
			Component:  p.component,
			Image:      p.image,
			Binary:     p.binary,
			Running:    state.running,
			Ready:      state.ready,
			ReadySince: readySince(state),
			Restarts:   p.restartCount(),
			PodIP:      podIPString(p),
		})
	}
	return out
}

// logs returns the end of the log of every pod started so far, stopped ones included.
func (k *kubelet) logs() string {
	k.mu.Lock()
	pods := slices.Clone(k.started)
	k.mu.Unlock()
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "==> %s/%s (%s, Deployment %s) <==\n", p.key.Namespace, p.name, p.component, p.key.Name)
		b.WriteString(logTail(p.logPath, ControllerLogTail))
		b.WriteString("\n")
	}
	return b.String()
}

// logTail returns the end of a log file, from the first full line on.
func logTail(file string, size int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Sprintf("(failed reading log: %v)", err)
	}
	if len(data) > size {
		data = data[len(data)-size:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// podDir is the directory of a pod's files: kubeconfig, log, emptyDir volumes.
func (k *kubelet) podDir(namespace, pod string) string {
	return filepath.Join(k.dir, namespace+"_"+pod)
}

// Controllers lists the controllers the shoot's kubelet stand-in runs (ShootSpec.RunControllers),
// one per Deployment, in start order; stopped ones are left out.
func (h *ShootHandle) Controllers() []ControllerProcess {
	h.mu.Lock()
	k := h.kubelet
	h.mu.Unlock()
	if k == nil {
		return nil
	}
	return k.processes()
}

// ControllerLogs returns the end of the log of every controller the shoot's kubelet stand-in has
// started, stopped ones included, for failure reports.
func (h *ShootHandle) ControllerLogs() string {
	h.mu.Lock()
	k := h.kubelet
	h.mu.Unlock()
	if k == nil {
		return "(the shoot runs no controllers)"
	}
	return k.logs()
}

func podIPString(p *controllerPod) string {
	if !p.ip.IsValid() {
		return ""
	}
	return p.ip.String()
}

// readySince is the pod's ready time while it is ready: readySince is kept across a restart.
func readySince(s podState) time.Time {
	if !s.ready {
		return time.Time{}
	}
	return s.readySince
}
