// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// ExtensionRestartBackoff is how long the kubelet stand-in of the seed waits before it starts the
// extension's pod again after it ended or could not start; the wait doubles up to
// ControllerMaxRestartBackoff, as kubelet's crash loop back-off does.
var ExtensionRestartBackoff = time.Second

// Rollout names the start of the extension the sandbox asked for (sandbox.StartExtensionWith) by
// the ports of its values: only a Deployment with these ports is the rollout of that start.
type Rollout struct {
	HealthPort, MetricsPort int
}

// SeedOptions are what the seed's kubelet stand-in takes from the landscape that installs the
// extension (see sandbox.Options.Deployed).
type SeedOptions struct {
	// Manager are the options of its controller manager, as of gardener's controllers in this
	// process; the scheme and the client's cache are set here.
	Manager manager.Options
	// Registry is the host of the registry the published images are pulled from, RegistryAuth
	// its credentials.
	Registry     string
	RegistryAuth remote.Option
	// Dir holds the pod's root file system and volumes and the pulled images; LogPath receives
	// the container's stdout and stderr.
	Dir, LogPath string
	// GardenAccessNamespace is the garden namespace of the ServiceAccount of a garden access
	// Secret that names none (gardenlet's token requestor's target namespace).
	GardenAccessNamespace string
	// Admit is called before the container starts with the pod's identity in the seed and in the
	// garden (empty if the pod has no garden access). An error keeps the pod from starting, and
	// the stand-in tries again, as kubelet does with a pod whose volumes cannot be set up yet.
	Admit func(ctx context.Context, seedUser, gardenUser string) error
}

// SeedKubelet stands in for the seed's kubelet and Deployment controllers for the extension's
// Deployment: it pulls the image from the sandbox's registry, runs the template's pod (Pod), keeps
// its Pod object, restarts it when it ends and writes the status. Only rollouts the sandbox asked
// for run: a Deployment gardenlet has not re-rendered yet would listen on the last start's ports.
type SeedKubelet struct {
	log    logr.Logger
	seed   *cluster.Cluster
	opts   SeedOptions
	client client.Client
	events chan event.GenericEvent
	ctx    context.Context
	cancel context.CancelFunc
	runner *cluster.Runner

	// lifecycle serialises the starts and stops of the pod.
	lifecycle sync.Mutex

	mu     sync.Mutex
	want   *Rollout
	pod    *extensionPod
	images map[string]string
	// startErr is why the last start failed, as a pod stuck before its container runs.
	startErr error
	// crashes counts the ends of the container since it was last ready, for the back-off until
	// nextStart; crashed is the end of a container of the current rollout that was never ready.
	crashes   int
	crashed   error
	nextStart time.Time
}

// extensionPod is the running pod of a Deployment's template.
type extensionPod struct {
	deployment types.NamespacedName
	hash       string
	want       Rollout
	pod        *Pod
	object     string
	// ctx ends the probe (cancel), which closes done when it returned.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// Written by the probe under the kubelet's mu.
	ready      bool
	readySince time.Time
	exited     bool
	exitErr    error
}

// StartSeed starts the kubelet stand-in of the seed; it runs no pod until Run.
func StartSeed(ctx context.Context, log logr.Logger, seed *cluster.Cluster, seedOpts SeedOptions) (*SeedKubelet, error) {
	opts := seedOpts.Manager
	opts.Logger = log
	opts.Scheme = kubernetes.SeedScheme
	// The seed holds many Secrets of the shoots' ManagedResources; the stand-in reads the few it
	// needs, and its Pod objects, from the API server.
	opts.Client = client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.Pod{}}}}
	mgr, err := manager.New(seed.Config, opts)
	if err != nil {
		return nil, fmt.Errorf("failed creating the seed's kubelet: %w", err)
	}
	k := &SeedKubelet{
		log:    log,
		seed:   seed,
		opts:   seedOpts,
		client: mgr.GetClient(),
		events: make(chan event.GenericEvent, 16),
		images: map[string]string{},
	}
	// The pod outlives the caller's context; stop ends it.
	k.ctx, k.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := builder.ControllerManagedBy(mgr).
		Named("seed-kubelet").
		For(&appsv1.Deployment{}, builder.WithPredicates(predicate.NewPredicateFuncs(k.runnable))).
		// Pod exits and readiness changes, reported by the probe.
		WatchesRawSource(source.Channel(k.events, &handler.EnqueueRequestForObject{})).
		Complete(k); err != nil {
		k.cancel()
		return nil, fmt.Errorf("failed adding the seed's kubelet: %w", err)
	}
	if k.runner, err = cluster.StartManager(ctx, log, "seed-kubelet", mgr); err != nil {
		k.cancel()
		return nil, err
	}
	return k, nil
}

// runnable tells whether a Deployment runs an image the sandbox published.
func (k *SeedKubelet) runnable(obj client.Object) bool {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		return false
	}
	return strings.HasPrefix(d.Spec.Template.Spec.Containers[0].Image, k.opts.Registry+"/")
}

// Run lets the pod of the rollout run.
func (k *SeedKubelet) Run(want Rollout) {
	k.mu.Lock()
	k.want = &want
	k.startErr, k.crashes, k.crashed, k.nextStart = nil, 0, nil, time.Time{}
	p := k.pod
	k.mu.Unlock()
	k.enqueueAll(p)
}

// Suspend stops the pod and runs none until the next run.
func (k *SeedKubelet) Suspend() error {
	k.mu.Lock()
	k.want = nil
	k.mu.Unlock()
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	return k.stopPod(k.ctx, "the extension was stopped")
}

// enqueueAll makes the controller look at every runnable Deployment again, and at the one of p.
func (k *SeedKubelet) enqueueAll(p *extensionPod) {
	list := &appsv1.DeploymentList{}
	if err := k.client.List(k.ctx, list); err != nil {
		k.log.Error(err, "Failed listing Deployments")
	}
	keys := map[types.NamespacedName]bool{}
	if p != nil {
		keys[p.deployment] = true
	}
	for i := range list.Items {
		if k.runnable(&list.Items[i]) {
			keys[client.ObjectKeyFromObject(&list.Items[i])] = true
		}
	}
	for key := range keys {
		k.notify(key)
	}
}

func (k *SeedKubelet) notify(key types.NamespacedName) {
	select {
	case k.events <- event.GenericEvent{Object: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
	case <-k.ctx.Done():
	}
}

// Stop stops the controller and the pod.
func (k *SeedKubelet) Stop() error {
	if k == nil {
		return nil
	}
	k.cancel()
	err := k.runner.Stop()
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	// The Pod object goes with the seed.
	return errors.Join(err, k.stopPod(context.Background(), "the sandbox stops"))
}

// RolloutState tells whether a pod of the rollout runs and is ready, and describes the pod's
// state; a pod of the rollout that ended or could not start before it was ready is an error.
func (k *SeedKubelet) RolloutState(want Rollout) (bool, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := k.pod
	switch {
	case k.want == nil || *k.want != want:
		return false, "", errors.New("the extension was stopped")
	case p != nil && p.want == want && p.ready && !p.exited:
		return true, fmt.Sprintf("%s ready", p.object), nil
	case k.crashed != nil:
		return false, "ended", k.crashed
	case p == nil && k.startErr != nil:
		return false, fmt.Sprintf("not started: %v", k.startErr), nil
	case p == nil:
		return false, "no pod of the rollout yet", nil
	case p.want != want:
		return false, fmt.Sprintf("%s of an earlier rollout", p.object), nil
	default:
		return false, fmt.Sprintf("%s not ready", p.object), nil
	}
}

// PID returns the process of the running pod, or 0.
func (k *SeedKubelet) PID() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pod == nil || k.pod.pod.process == nil {
		return 0
	}
	return k.pod.pod.process.Pid()
}

// Reconcile runs, restarts or stops the Deployment's pod and writes its status.
func (k *SeedKubelet) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	key := req.NamespacedName
	d := &appsv1.Deployment{}
	if err := k.client.Get(ctx, key, d); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("failed reading Deployment %s: %w", key, err)
		}
		return reconcile.Result{}, k.stopPodOf(ctx, key, "Deployment deleted")
	}
	if d.DeletionTimestamp != nil {
		return reconcile.Result{}, k.stopPodOf(ctx, key, "Deployment is being deleted")
	}
	hash, err := templateHash(&d.Spec.Template)
	if err != nil {
		return reconcile.Result{}, err
	}

	k.mu.Lock()
	want, p := k.want, k.pod
	exited := p != nil && p.exited
	k.mu.Unlock()
	wanted := want != nil && deploymentPorts(d) == *want
	if p != nil && p.deployment != key {
		// One pod of the extension runs at a time, as its ports would collide: the one of another
		// Deployment goes with that Deployment, after which this one is looked at again.
		return reconcile.Result{}, k.writeStatus(ctx, d, hash, nil)
	}
	if p != nil && (p.hash != hash || !wanted || exited) {
		reason := "pod template changed"
		switch {
		case !wanted:
			reason = "not the rollout the sandbox asked for"
		case exited:
			reason = "the container ended"
		}
		if err := k.stopPod(ctx, reason); err != nil {
			return reconcile.Result{}, err
		}
		p = nil
	}
	if !wanted {
		return reconcile.Result{}, k.writeStatus(ctx, d, hash, nil)
	}
	if p == nil {
		k.mu.Lock()
		wait := time.Until(k.nextStart)
		k.mu.Unlock()
		if wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, k.writeStatus(ctx, d, hash, nil)
		}
		if p, err = k.startPod(ctx, d, hash, *want); err != nil {
			// As kubelet retries a pod whose volumes cannot be set up yet.
			k.log.Info("The extension's pod could not start, trying again", "deployment", key, "error", err.Error())
			k.mu.Lock()
			k.startErr = err
			k.mu.Unlock()
			return reconcile.Result{RequeueAfter: ExtensionRestartBackoff}, k.writeStatus(ctx, d, hash, nil)
		}
	}
	return reconcile.Result{}, k.writeStatus(ctx, d, hash, p)
}

// ended records the end of the pod's container and the back-off until the next start; k.mu is
// held.
func (k *SeedKubelet) ended(p *extensionPod, err error) {
	backoff := min(ExtensionRestartBackoff<<min(k.crashes, 10), ControllerMaxRestartBackoff)
	k.crashes++
	k.nextStart = time.Now().Add(backoff)
	if !p.ready && k.want != nil && *k.want == p.want {
		k.crashed = err
	}
}

// deploymentPorts are the health and metrics ports the chart rendered into the container's args.
func deploymentPorts(d *appsv1.Deployment) Rollout {
	var r Rollout
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		flag, value, ok := strings.Cut(arg, "=")
		if !ok {
			continue
		}
		_, portValue, err := net.SplitHostPort(value)
		if err != nil {
			continue
		}
		port, err := strconv.Atoi(portValue)
		if err != nil {
			continue
		}
		switch flag {
		case "--health-bind-address":
			r.HealthPort = port
		case "--metrics-bind-address":
			r.MetricsPort = port
		}
	}
	return r
}

// startPod pulls the image, creates the Pod object and starts the container, and probes its
// readiness in the background. It waits, as kubelet waits with the container, until
// SeedOptions.Admit admits the pod's identities (the sandbox: until the garden enforces the
// admission policy of sandbox.GardenRBACFile on its garden identity).
func (k *SeedKubelet) startPod(ctx context.Context, d *appsv1.Deployment, hash string, want Rollout) (*extensionPod, error) {
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	binary, err := k.pull(ctx, c.Image)
	if err != nil {
		return nil, err
	}
	gardenUser, err := k.gardenUser(ctx, d)
	if err != nil {
		return nil, err
	}
	seedUser := "system:serviceaccount:" + d.Namespace + ":" + spec.ServiceAccountName
	if err := k.opts.Admit(ctx, seedUser, gardenUser); err != nil {
		return nil, err
	}

	object, err := k.createPodObject(ctx, d, hash)
	if err != nil {
		return nil, err
	}
	p := &extensionPod{
		deployment: client.ObjectKeyFromObject(d),
		hash:       hash,
		want:       want,
		object:     object.Name,
		done:       make(chan struct{}),
		pod: &Pod{
			Namespace: d.Namespace,
			Name:      object.Name,
			Spec:      spec,
			Images:    map[string]string{c.Image: binary},
			API:       k.seed.Config,
			Dir:       k.opts.Dir,
			LogPath:   k.opts.LogPath,
		},
	}
	k.log.Info("Starting the extension's pod", "pod", client.ObjectKeyFromObject(object), "log", k.opts.LogPath)
	if err := p.pod.Start(ctx); err != nil {
		return nil, errors.Join(err, k.deletePodObject(ctx, d.Namespace, object.Name))
	}
	p.ctx, p.cancel = context.WithCancel(k.ctx)
	k.mu.Lock()
	k.pod, k.startErr = p, nil
	k.mu.Unlock()
	go k.probe(p, "127.0.0.1:"+strconv.Itoa(want.HealthPort))
	return p, nil
}

// stopPodOf stops the pod if it belongs to the Deployment, and then looks at the other
// Deployments again, whose pod may run now.
func (k *SeedKubelet) stopPodOf(ctx context.Context, key types.NamespacedName, reason string) error {
	k.mu.Lock()
	p := k.pod
	k.mu.Unlock()
	if p == nil || p.deployment != key {
		return nil
	}
	err := k.stopPod(ctx, reason)
	// The controller's queue takes the events while this reconcile holds its worker.
	go k.enqueueAll(nil)
	return err
}

// stopPod stops the running pod, if any, with its grace period and deletes its Pod object; the
// Deployment's status follows on its next reconcile.
func (k *SeedKubelet) stopPod(ctx context.Context, reason string) error {
	k.mu.Lock()
	p := k.pod
	k.pod = nil
	k.mu.Unlock()
	if p == nil {
		return nil
	}
	k.log.Info("Stopping the extension's pod", "pod", p.object, "reason", reason)
	// The probe reads the process, which Stop releases.
	p.cancel()
	<-p.done
	err := p.pod.Stop()
	if derr := k.deletePodObject(ctx, p.deployment.Namespace, p.object); derr != nil {
		err = errors.Join(err, derr)
	}
	k.notify(p.deployment)
	return err
}
