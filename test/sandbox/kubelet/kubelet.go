// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package kubelet stands in for the sandbox's kubelets and container runtime: a shoot's (Kubelet)
// runs the delivered controllers as processes, the seed's (SeedKubelet) the deployed extension's
// pod; both write the status kubelet and the Deployment controller would (docs/development/sandbox.md).
package kubelet

import (
	"bytes"
	"context"
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
	// ControllerLogTail is how much of the end of each controller's log
	// sandbox.ShootHandle.ControllerLogs returns.
	ControllerLogTail = 16 * 1024
)

// Kubelet stands in for a shoot's kubelet and Deployment controller: each Deployment whose image
// has a binary in the sandbox's controllers runs as a process of it, as the Deployment's
// ServiceAccount, and gets the status the Deployment controller writes. What it adjusts for a
// machine without cluster networking is listed in docs/development/sandbox.md.
type Kubelet struct {
	log      logr.Logger
	shoot    *cluster.Cluster
	binaries map[string]string
	// nodeEnv comes before the image's and the container's env of every process
	// (sandbox.ShootSpec.NodeEnv).
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

// Start starts the kubelet stand-in of a shoot: it runs the Deployments of the images of binaries
// (keyed like sandbox.Options.FluxControllers) until Stop; v, if not nil, routes the pod IPs it
// publishes.
func Start(ctx context.Context, log logr.Logger, shoot *cluster.Cluster, binaries map[string]string, nodeEnv []string, v *network.VPN) (*Kubelet, error) {
	mgr, err := cluster.NewManager(log, shoot)
	if err != nil {
		return nil, fmt.Errorf("kubelet: %w", err)
	}
	dir, err := os.MkdirTemp("", "shoot-flux-kubelet-"+cluster.FileName(shoot.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("failed creating kubelet directory of shoot %s: %w", shoot.Name, err)
	}
	k := &Kubelet{
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
func (k *Kubelet) Stop() error {
	if k == nil {
		return nil
	}
	k.cancel()
	err := k.runner.Stop()
	k.stopPods()
	return errors.Join(err, os.RemoveAll(k.dir))
}

// stopPods stops every process, in parallel, each with its grace period.
func (k *Kubelet) stopPods() {
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
func (k *Kubelet) notify(key types.NamespacedName) {
	select {
	case k.events <- event.GenericEvent{Object: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	case <-k.ctx.Done():
	}
}

// runnable returns the first container whose image has a binary, the controller's name and the
// binary.
func (k *Kubelet) runnable(d *appsv1.Deployment) (corev1.Container, string, string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if binary, ok := k.binaries[imageKey(c.Image)]; ok {
			return c, imageName(c.Image), binary, true
		}
	}
	return corev1.Container{}, "", "", false
}

func (k *Kubelet) advertisedAddresses(key types.NamespacedName) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.advertised[key]
}

func (k *Kubelet) setAdvertisedAddresses(key types.NamespacedName, addresses map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.advertised[key] = addresses
}

func (k *Kubelet) pod(key types.NamespacedName) *controllerPod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[key]
}

// stopPod stops the Deployment's process, if any, with the pod's grace period, cut short when the
// kubelet itself stops: a Flux controller that lost its RBAC before its caches synced was seen to
// outlive SIGTERM longer than the manager waits (cluster.GracefulShutdownTimeout).
func (k *Kubelet) stopPod(key types.NamespacedName, reason string) {
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
func (k *Kubelet) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
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

// ControllerProcess is a controller the kubelet stand-in of a shoot runs or ran.
type ControllerProcess struct {
	// Namespace and Deployment name the Deployment; Pod is the name the process has as its pod
	// (env fieldRef metadata.name, the process's HOSTNAME).
	Namespace, Deployment, Pod string
	// Component is the controller, e.g. source-controller.
	Component string
	// Image is the container's image and Binary the file of sandbox.Options.FluxControllers that
	// runs it.
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
func (k *Kubelet) Processes() []ControllerProcess {
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
func (k *Kubelet) Logs() string {
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
func (k *Kubelet) podDir(namespace, pod string) string {
	return filepath.Join(k.dir, namespace+"_"+pod)
}

func podIPString(p *controllerPod) string {
	if !p.ip.IsValid() {
		return ""
	}
	return p.ip.String()
}
