// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

// controllerPod is the one pod of a Deployment that the kubelet stand-in runs: a process of the
// controller's binary, started again when it ends.
type controllerPod struct {
	key       types.NamespacedName
	name      string
	component string
	image     string
	hash      string
	dir       string
	logPath   string
	grace     time.Duration
	binary    string
	args, env []string
	// probe tells whether the process is ready; nil means ready while it runs.
	probe func(context.Context) bool
	// ip is the pod IP (see kubeletpodobject.go); invalid without a VPN stand-in.
	ip netip.Addr
	// created is when the pod was started first.
	created time.Time

	mu         sync.Mutex
	process    *Process
	log        *os.File
	stopWatch  chan struct{}
	ready      bool
	readySince time.Time
	exitedAt   time.Time
	runStarted time.Time
	restarts   int
	stopped    bool
	// published tells whether the Pod object was created.
	published bool
}

// startPod prepares the Deployment's pod (files, env, args, credentials, probe) and starts its
// process.
func (k *Kubelet) startPod(ctx context.Context, d *appsv1.Deployment, c corev1.Container, component, binary, hash string) (*controllerPod, error) {
	spec := d.Spec.Template.Spec
	p := &controllerPod{
		key:       types.NamespacedName{Namespace: d.Namespace, Name: d.Name},
		name:      fmt.Sprintf("%s-%s-%s", d.Name, hash, utilrand.String(5)),
		component: component,
		image:     c.Image,
		hash:      hash,
		grace:     time.Duration(ptr.Deref(spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second,
		binary:    binary,
		created:   time.Now(),
	}
	p.dir = k.podDir(d.Namespace, p.name)
	p.logPath = filepath.Join(p.dir, "container.log")
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed creating pod directory: %w", err)
	}
	cleanup := func(err error) error { return errors.Join(err, os.RemoveAll(p.dir)) }

	account := spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	pc, err := prepareContainer(ctx, k.shoot.Client, spec, c, component, podFields{namespace: d.Namespace, name: p.name, serviceAccount: account}, p.dir, k.advertisedAddresses(p.key))
	if err != nil {
		return nil, cleanup(err)
	}
	k.setAdvertisedAddresses(p.key, pc.advertised)
	if p.probe, err = readinessProbe(c, pc.addresses); err != nil {
		return nil, cleanup(err)
	}
	args, env, volumes := pc.args, pc.env, pc.volumes

	token, err := serviceAccountToken(ctx, k.shoot.Config, d.Namespace, account)
	if err != nil {
		return nil, cleanup(err)
	}
	kubeconfig := filepath.Join(p.dir, "kubeconfig")
	if err := writeTokenKubeconfig(kubeconfig, k.shoot, token); err != nil {
		return nil, cleanup(err)
	}
	tmp, ok := volumes["/tmp"]
	if !ok {
		tmp = filepath.Join(p.dir, "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return nil, cleanup(fmt.Errorf("failed creating temporary directory: %w", err))
		}
	}
	// The process shares the machine's file system: HOME and TMPDIR point into the pod's directory
	// instead of the container's / and /tmp. KUBECONFIG comes last, as the container must not
	// replace the credentials: in a cluster they come from the mounted ServiceAccount token.
	p.env = append([]string{"HOME=" + p.dir, "TMPDIR=" + tmp, "HOSTNAME=" + p.name}, k.nodeEnv...)
	p.env = append(p.env, env...)
	p.env = append(p.env, "KUBECONFIG="+kubeconfig)
	p.args = args

	if err := k.allocatePodIP(p, pc.addresses); err != nil {
		return nil, cleanup(err)
	}
	if err := p.run(k); err != nil {
		if p.ip.IsValid() {
			k.vpn.RemovePod(p.ip)
		}
		return nil, cleanup(err)
	}
	k.mu.Lock()
	k.pods[p.key] = p
	k.started = append(k.started, p)
	k.mu.Unlock()
	k.log.Info("Started controller", "deployment", p.key, "pod", p.name, "podIP", p.ip, "component", component, "args", args)
	return p, nil
}

// run starts the process and a watcher that reports its end and readiness changes.
func (p *controllerPod) run(k *Kubelet) error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("failed opening log of pod %s: %w", p.name, err)
	}
	cmd := exec.Command(p.binary, p.args...)
	cmd.Env, cmd.Dir = p.env, p.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group keeps an interrupt of the test from reaching it before stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	process, err := StartProcess(cmd)
	if err != nil {
		return errors.Join(err, logFile.Close())
	}
	stopWatch := make(chan struct{})
	p.mu.Lock()
	p.process, p.log, p.stopWatch = process, logFile, stopWatch
	p.ready, p.exitedAt, p.runStarted = false, time.Time{}, time.Now()
	p.mu.Unlock()
	go p.watch(k, process, stopWatch)
	return nil
}

// watch probes the process's readiness every ControllerProbeInterval and tells the kubelet when
// it changes or the process ends.
func (p *controllerPod) watch(k *Kubelet, process *Process, stop <-chan struct{}) {
	ticker := time.NewTicker(ControllerProbeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-process.Done():
			killGroup(process)
			p.mu.Lock()
			p.ready, p.exitedAt = false, time.Now()
			p.mu.Unlock()
			k.log.Info("Controller exited", "deployment", p.key, "pod", p.name, "error", process.ExitErr())
			k.notify(p.key)
			return
		case <-ticker.C:
			ready := p.probe == nil || p.probe(k.ctx)
			p.mu.Lock()
			changed := ready != p.ready && p.exitedAt.IsZero()
			if changed {
				p.ready = ready
				if ready {
					p.readySince = time.Now()
				}
			}
			p.mu.Unlock()
			if changed {
				k.notify(p.key)
			}
		}
	}
}

// restartIfDue starts the process again if it ended and its back-off has passed, and otherwise
// returns how long the back-off still lasts.
func (p *controllerPod) restartIfDue(k *Kubelet) (time.Duration, error) {
	p.mu.Lock()
	exitedAt, restarts, process, logFile := p.exitedAt, p.restarts, p.process, p.log
	p.mu.Unlock()
	if exitedAt.IsZero() {
		return 0, nil
	}
	backoff := min(ControllerRestartBackoff<<min(restarts, 16), ControllerMaxRestartBackoff)
	if wait := time.Until(exitedAt.Add(backoff)); wait > 0 {
		return wait, nil
	}
	// The marker tells in the log where one run of the container ends and the next begins.
	_, writeErr := fmt.Fprintf(logFile, "sandbox kubelet: restarting after exit (%v), restart %d\n", process.ExitErr(), restarts+1)
	if err := errors.Join(writeErr, logFile.Close()); err != nil {
		return 0, fmt.Errorf("failed writing log of pod %s: %w", p.name, err)
	}
	p.mu.Lock()
	p.restarts++
	p.mu.Unlock()
	k.log.Info("Restarting controller", "deployment", p.key, "pod", p.name, "restarts", restarts+1)
	return 0, p.run(k)
}

// stop sends SIGTERM and kills the process after the pod's grace period, or as soon as abort is
// closed. The log stays for sandbox.ShootHandle.ControllerLogs.
func (p *controllerPod) stop(abort <-chan struct{}) {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	process, logFile, stopWatch := p.process, p.log, p.stopWatch
	p.mu.Unlock()
	close(stopWatch)
	process.TerminateUnless(p.grace, abort)
	killGroup(process)
	p.mu.Lock()
	p.ready, p.exitedAt = false, time.Now()
	p.mu.Unlock()
	_ = logFile.Close()
}

// killGroup kills what is left of the process group the pod's process leads (it runs with
// Setpgid): in a container, the end of its first process ends every other one, e.g. the Python
// renderers and helm processes the kluctl controller starts. Without it they would outlive a
// restart or the scenario.
func killGroup(process *Process) {
	// ESRCH: the group is already empty.
	_ = syscall.Kill(-process.Pid(), syscall.SIGKILL)
}

func (p *controllerPod) state() podState {
	if p == nil {
		return podState{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return podState{running: p.exitedAt.IsZero(), ready: p.ready, readySince: p.readySince, runStarted: p.runStarted}
}

func (p *controllerPod) restartCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// writeTokenKubeconfig writes a kubeconfig for the shoot's API server with a bearer token.
func writeTokenKubeconfig(file string, shoot *cluster.Cluster, token string) error {
	server, err := url.Parse(shoot.Config.Host)
	if err != nil {
		return fmt.Errorf("failed parsing API server address of %s: %w", shoot.Name, err)
	}
	server.Path = shoot.Config.APIPath
	// Everything is named "default", as in the kubeconfig the kluctl controller makes of its
	// in-cluster config for the deployments it runs (KluctlDeployment spec.context "default").
	const name = "default"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server.String(), CertificateAuthorityData: shoot.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		return fmt.Errorf("failed writing kubeconfig %s: %w", file, err)
	}
	return nil
}
