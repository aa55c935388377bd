// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command sandbox runs the shoot-flux extension against local API servers (see package
// test/sandbox). KUBEBUILDER_ASSETS must point at kube-apiserver and etcd, which
// hack/build-envtest.sh builds; the Makefile sets it.
//
//	sandbox demo   runs the extension as deployed (the binary with the chart's args, volumes,
//	               read-only root and identities; see sandbox.Options.Deployed; needs root) for a
//	               demo shoot, prints what it delivered and exits
//	sandbox up     runs the clusters for `make start` until interrupted
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

const (
	project       = "demo"
	shootName     = "local"
	fluxShootName = "flux"
	repoName      = "fleet"
)

var (
	// demoTimeout bounds the whole demo.
	demoTimeout = 5 * time.Minute
	// reconcileTimeout bounds the wait for the demo shoot's Extension.
	reconcileTimeout = 3 * time.Minute
	// setupTimeout bounds the start of the sandbox in up mode.
	setupTimeout = 3 * time.Minute
)

func main() {
	fs := flag.NewFlagSet("sandbox", flag.ExitOnError)
	dir := fs.String("dir", "dev", "directory for kubeconfigs (up) and the controller log")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "usage: %s [-dir dev] demo|up\n", os.Args[0])
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch fs.Arg(0) {
	case "demo":
		err = demo(ctx, *dir)
	case "up":
		err = up(ctx, *dir)
	default:
		fs.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox: %v\n", err)
		os.Exit(1)
	}
}

// env is what both modes set up: the sandbox with the demo project and shoot, and the git server
// with the demo repository.
type env struct {
	dir     string
	sandbox *sandbox.Sandbox
	git     *gitserver.Server
	shoot   *sandbox.ShootHandle
	// fluxShoot runs bootstrap mode flux with the real Flux controllers; demo mode only.
	fluxShoot *sandbox.ShootHandle
	logPath   string
	cleanup   []func() error
}

func (e *env) close() error {
	var errs []error
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		errs = append(errs, e.cleanup[i]())
	}
	return errors.Join(errs...)
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

// setup starts everything; the controllers' logs go to a file in dir, the terminal shows progress.
// binary is the extension binary demo runs as deployed; empty starts no extension (up).
func setup(ctx context.Context, dir, binary string) (*env, error) {
	withExtension := binary != ""
	e := &env{dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return e, fmt.Errorf("failed creating %s: %w", dir, err)
	}
	e.logPath = filepath.Join(dir, "sandbox.log")
	logFile, err := os.Create(e.logPath)
	if err != nil {
		return e, fmt.Errorf("failed creating log file: %w", err)
	}
	e.cleanup = append(e.cleanup, logFile.Close)
	log := logzap.New(logzap.WriteTo(logFile))
	logf.SetLogger(log)
	step("controller logs go to %s", e.logPath)

	repoRoot, err := os.MkdirTemp("", "shoot-flux-sandbox-git-")
	if err != nil {
		return e, fmt.Errorf("failed creating git directory: %w", err)
	}
	e.cleanup = append(e.cleanup, func() error { return os.RemoveAll(repoRoot) })
	commit, err := gitserver.NewKluctlProjectRepo(filepath.Join(repoRoot, repoName))
	if err != nil {
		return e, err
	}
	if e.git, err = gitserver.Start(gitserver.Options{RepoRoot: repoRoot}); err != nil {
		return e, err
	}
	e.cleanup = append(e.cleanup, e.git.Close)
	step("git server serves %s (commit %s)", e.git.URL(repoName), commit[:12])

	start := time.Now()
	if withExtension {
		step("starting garden and seed API servers and the extension as deployed by its chart")
	} else {
		step("starting garden and seed API servers")
	}
	opts := sandbox.Options{WithoutExtension: !withExtension, Deployed: withExtension, ExtensionBinary: binary,
		ExtensionLogPath: filepath.Join(dir, "extension.log"), Log: log.WithName("sandbox")}
	if withExtension {
		// make demo hands over the source- and kustomize-controller of the newest release, which
		// the flux shoot of the demo runs.
		if opts.FluxControllers, err = kubelet.ParseControllers(kubelet.FluxControllersEnv, os.Getenv(kubelet.FluxControllersEnv)); err != nil {
			return e, err
		}
		if len(opts.FluxControllers) == 0 {
			return e, fmt.Errorf("%s must list the Flux controller binaries (hack/build-flux-controllers.sh)", kubelet.FluxControllersEnv)
		}
		// and the kluctl controller, which the demo's kluctl shoot (the default mode) runs.
		if opts.KluctlControllers, err = kubelet.ParseControllers(kubelet.KluctlControllersEnv, os.Getenv(kubelet.KluctlControllersEnv)); err != nil {
			return e, err
		}
		if len(opts.KluctlControllers) == 0 {
			return e, fmt.Errorf("%s must list the kluctl controller binary (hack/build-kluctl-controller.sh)", kubelet.KluctlControllersEnv)
		}
	}
	e.sandbox, err = sandbox.Start(ctx, opts)
	if err != nil {
		return e, err
	}
	e.cleanup = append(e.cleanup, e.sandbox.Stop)
	step("sandbox up in %s", time.Since(start).Round(100*time.Millisecond))
	if withExtension {
		namespace, err := e.sandbox.ExtensionNamespace(ctx)
		if err != nil {
			return e, err
		}
		conditions, err := e.sandbox.ControllerInstallationConditions(ctx)
		if err != nil {
			return e, err
		}
		step("gardenlet installed the published chart into %s and reports the ControllerInstallation:", namespace)
		for _, c := range conditions {
			step("  %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		step("the extension runs read-only in %s and as the garden ServiceAccount of %s; its log: %s",
			namespace, sandbox.GardenRBACFile, e.sandbox.ExtensionLogPath())
	}

	if err := createDemoShoot(ctx, e, withExtension); err != nil {
		return e, err
	}
	if withExtension {
		if err := createFluxShoot(ctx, e); err != nil {
			return e, err
		}
	}
	return e, nil
}

// createDemoShoot creates the project and its shoot in the default mode, kluctl; runControllers
// runs the delivered source- and kluctl-controller in it (demo mode; `make start` has none).
func createDemoShoot(ctx context.Context, e *env, runControllers bool) error {
	namespace, err := e.sandbox.CreateProject(ctx, project)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: constants.ProjectConfigMapName},
		Data: map[string]string{
			constants.ConfigMapKeyFluxVersion:      "2.9.5",
			constants.ConfigMapKeyRepositoryURL:    e.git.URL(repoName),
			constants.ConfigMapKeyRepositoryBranch: gitserver.Branch,
			constants.ConfigMapKeyRepositoryType:   "private",
		},
	}
	if err := e.sandbox.Garden.Client.Create(ctx, cm); err != nil {
		return fmt.Errorf("failed creating project ConfigMap: %w", err)
	}
	step("project %s: ConfigMap %s/%s (legacy keys, private repository)", project, namespace, cm.Name)
	go e.authorizeDeployKeys(ctx, namespace)

	start := time.Now()
	// The demo repository defines a kluctl target, and kluctl refuses to guess one.
	e.shoot, err = e.sandbox.CreateShoot(ctx, sandbox.ShootSpec{
		Project:        project,
		Name:           shootName,
		RunControllers: runControllers,
		ProviderConfig: []byte(`{"bootstrap":{"kluctl":{"target":"` + gitserver.Target + `"}}}`),
	})
	if err != nil {
		return err
	}
	step("shoot %s/%s: seed namespace %s, Cluster and Extension created in %s", project, shootName, e.shoot.SeedNamespace, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// createFluxShoot adds a shoot of the demo project in bootstrap mode flux whose delivered source-
// and kustomize-controller run (sandbox ShootSpec.RunControllers), so the demo shows the whole
// chain: the repository's objects appear in that shoot.
func createFluxShoot(ctx context.Context, e *env) error {
	start := time.Now()
	var err error
	e.fluxShoot, err = e.sandbox.CreateShoot(ctx, sandbox.ShootSpec{
		Project:        project,
		Name:           fluxShootName,
		RunControllers: true,
		ProviderConfig: []byte(`{"source":{"path":"configmap"},"bootstrap":{"mode":"flux"},"kluctl":{"enabled":false},` +
			`"flux":{"components":["source-controller","kustomize-controller"]}}`),
	})
	if err != nil {
		return err
	}
	step("shoot %s/%s: bootstrap mode flux, the delivered source- and kustomize-controller run; created in %s",
		project, fluxShootName, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// authorizedKeysFile is where a developer adds keys that may fetch from the sandbox's git server,
// one authorized_keys line each.
const authorizedKeysFile = "git-authorized-keys"

// authorizeDeployKeys plays the developer who registers the generated deploy keys at the git host:
// until ctx ends, every public key in the project's deploy key Secret, and every line of
// authorizedKeysFile in the env's directory, may fetch from the git server.
func (e *env) authorizeDeployKeys(ctx context.Context, namespace string) {
	known := map[string]bool{}
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		// A failed read is retried at the next tick.
		keys, _ := e.sandbox.DeployPublicKeys(ctx, namespace)
		if data, err := os.ReadFile(filepath.Join(e.dir, authorizedKeysFile)); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					keys = append(keys, line)
				}
			}
		}
		var valid []string
		for _, key := range keys {
			if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key)); err != nil {
				if !known[key] {
					step("git server: ignoring %q, not an authorized_keys line: %v", key, err)
					known[key] = true
				}
				continue
			}
			valid = append(valid, key)
			if !known[key] {
				step("git server: %s may fetch", key)
				known[key] = true
			}
		}
		if err := e.git.SetAuthorizedKeys(valid); err != nil {
			step("git server: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func demo(ctx context.Context, dir string) (err error) {
	started := time.Now()
	// The build comes first and outside demoTimeout, which is meant for the clusters: a first
	// build on a fresh machine compiles gardener and Kubernetes and takes longer than a demo.
	binary, err := buildExtension(ctx, dir)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	e, err := setup(ctx, dir, binary)
	defer func() {
		step("stopping")
		err = errors.Join(err, e.close())
		if err == nil {
			step("done in %s", time.Since(started).Round(100*time.Millisecond))
		}
	}()
	if err != nil {
		return err
	}

	start := time.Now()
	step("waiting for the Extension to succeed")
	if _, err := e.shoot.WaitSucceeded(ctx, reconcileTimeout); err != nil {
		return fmt.Errorf("%w (see %s)", err, e.logPath)
	}
	step("Extension succeeded in %s", time.Since(start).Round(100*time.Millisecond))
	if err := report(ctx, e.shoot); err != nil {
		return err
	}
	start = time.Now()
	step("waiting for the kluctl shoot's kluctl controller to deploy the repository")
	if err := waitKluctlDeployed(ctx, e.shoot); err != nil {
		return fmt.Errorf("%w\ncontroller logs:\n%s", err, e.shoot.ControllerLogs())
	}
	step("the repository is deployed in shoot %s/%s (waited %s for it)", project, shootName, time.Since(start).Round(100*time.Millisecond))
	if err := reportKluctl(ctx, e.shoot); err != nil {
		return err
	}

	start = time.Now()
	step("waiting for the flux shoot's controllers to deploy the repository")
	if _, err := e.fluxShoot.WaitSucceeded(ctx, reconcileTimeout); err != nil {
		return fmt.Errorf("%w (see %s)", err, e.logPath)
	}
	if err := waitFluxDeployed(ctx, e.fluxShoot); err != nil {
		return fmt.Errorf("%w\ncontroller logs:\n%s", err, e.fluxShoot.ControllerLogs())
	}
	step("the repository is deployed in shoot %s/%s (waited %s for it)", project, fluxShootName, time.Since(start).Round(100*time.Millisecond))
	if err := reportFlux(ctx, e.fluxShoot); err != nil {
		return err
	}
	for _, h := range []*sandbox.ShootHandle{e.shoot, e.fluxShoot} {
		if err := reportGardenlet(ctx, h); err != nil {
			return err
		}
	}
	denied, err := e.sandbox.DeniedRequests()
	if err != nil {
		return err
	}
	if len(denied) > 0 {
		return fmt.Errorf("the extension's identities lack permissions:\n  %s", strings.Join(denied, "\n  "))
	}
	step("no request of the extension was denied by the seed or the garden")
	return nil
}

// buildExtension builds the extension binary into dir and says how long it took.
func buildExtension(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("failed creating %s: %w", dir, err)
	}
	root, err := sandbox.RepoRoot()
	if err != nil {
		return "", err
	}
	binary, err := filepath.Abs(filepath.Join(dir, "gardener-extension-shoot-flux"))
	if err != nil {
		return "", fmt.Errorf("failed locating %s: %w", dir, err)
	}
	start := time.Now()
	step("building the extension binary (the first build compiles gardener and Kubernetes: about 5 minutes on two cores; later ones take seconds)")
	if err := sandbox.BuildExtension(ctx, root, binary); err != nil {
		return "", err
	}
	step("built %s in %s", binary, time.Since(start).Round(100*time.Millisecond))
	return binary, nil
}

func up(ctx context.Context, dir string) (err error) {
	setupCtx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	e, err := setup(setupCtx, dir, "")
	defer func() {
		step("stopping")
		err = errors.Join(err, e.close())
	}()
	if err != nil {
		return err
	}
	if err := e.sandbox.WriteKubeconfigs(dir); err != nil {
		return err
	}
	if err := e.sandbox.WriteExtensionConfig(filepath.Join(dir, "config.yaml")); err != nil {
		return err
	}

	fmt.Printf(`
The sandbox is up. The extension does not run: start it in another terminal with

    make start        # or: make debug

It uses %[1]s/seed.kubeconfig, %[1]s/garden.kubeconfig and %[1]s/config.yaml (the host policy lets
it scan the local git server) and reconciles the Extension of shoot
%[2]s/%[3]s, whose repository is served by the sandbox's git server. Inspect the clusters with

    KUBECONFIG=%[1]s/seed.kubeconfig   kubectl -n %[4]s get extensions,managedresources
    KUBECONFIG=%[1]s/garden.kubeconfig kubectl -n garden-%[2]s get configmaps,secrets
    KUBECONFIG=%[1]s/shoot.kubeconfig  kubectl get namespaces,deployments -A

The git server lets every deploy key the extension generates for project %[2]s fetch, as if you had
registered it. To let another key fetch, add its public key to %[1]s/%[5]s (one authorized_keys
line each); the file is read every half second.

Press Ctrl-C to stop.
`, dir, project, shootName, e.shoot.SeedNamespace, authorizedKeysFile)

	<-ctx.Done()
	fmt.Println()
	return nil
}

// report prints what the extension delivered into the demo shoot.
func report(ctx context.Context, h *sandbox.ShootHandle) error {
	c := h.Shoot.Client

	namespaces := &corev1.NamespaceList{}
	if err := c.List(ctx, namespaces); err != nil {
		return fmt.Errorf("failed listing shoot namespaces: %w", err)
	}
	fmt.Println("\nShoot namespaces:")
	for _, ns := range namespaces.Items {
		fmt.Printf("  %s\n", ns.Name)
	}

	if err := printDeployments(ctx, c); err != nil {
		return err
	}
	if err := printKluctlDeployment(ctx, c); err != nil {
		return err
	}

	status, err := h.ProviderStatus(ctx)
	if err != nil {
		return err
	}
	if status == nil {
		return fmt.Errorf("the Extension has no providerStatus")
	}
	fmt.Printf("\nRegister this deploy key (read-only) at the git host of %s:\n  %s\n  fingerprint %s, stored in garden Secret %s\n",
		status.Repository, strings.TrimSpace(status.PublicKey), status.Fingerprint, status.DeployKeySecret)
	for _, w := range status.Warnings {
		fmt.Printf("  warning: %s\n", w)
	}
	fmt.Println()
	return nil
}

// reportGardenlet prints a shoot's extension state as Gardener sees it: gardenlet's Extension
// component waits for the Extension with gardenlet's rules, and the Shoot comes from
// gardener-apiserver.
func reportGardenlet(ctx context.Context, h *sandbox.ShootHandle) error {
	if err := h.WaitExtensionReady(ctx, reconcileTimeout); err != nil {
		return fmt.Errorf("gardenlet's Extension component does not see shoot %s/%s ready: %w", h.Project, h.Name, err)
	}
	shoot, err := h.GardenShoot(ctx)
	if err != nil {
		return err
	}
	ex, err := h.Extension(ctx)
	if err != nil {
		return err
	}
	op := ex.Status.LastOperation
	step("gardenlet: Extension %s of Shoot %s/%s (gardener-apiserver, generation %d, seed %s) is ready: %s %s, %q",
		ex.Name, shoot.Namespace, shoot.Name, shoot.Generation, ptr.Deref(shoot.Spec.SeedName, ""), op.Type, op.State, op.Description)
	return nil
}
