// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	project    = "metrics"
	fluxRepo   = "flux"
	kluctlRepo = "kluctl"

	fluxNamespace   = "flux-system"
	kluctlNamespace = "kluctl-system"
	// metricsPort is the container port of the controllers' metrics (http-prom of the Flux
	// controllers, metrics of the kluctl controller).
	metricsPort = 8080
)

// Bounds of the waits; a state takes seconds in the sandbox.
var (
	reconcileTimeout = 3 * time.Minute
	stateTimeout     = 3 * time.Minute
	pollInterval     = 500 * time.Millisecond
)

// shoot is a shoot of the recording with the token of its Prometheus.
type shoot struct {
	h     *sandbox.ShootHandle
	token []byte
}

func (r *recorder) record(ctx context.Context) error {
	if _, err := r.sb.CreateProject(ctx, project); err != nil {
		return err
	}
	r.progress("creating the flux and the kluctl shoot")
	fluxShoot, err := r.createShoot(ctx, "flux", r.fluxConfig(gitserver.Branch))
	if err != nil {
		return err
	}
	kluctlShoot, err := r.createShoot(ctx, "kluctl", r.kluctlConfig())
	if err != nil {
		return err
	}

	r.progress("waiting for both shoots to deploy their repositories")
	if err := r.waitReady(ctx, fluxShoot, bootstrap.GitRepositoryGVK, fluxNamespace, "True", ""); err != nil {
		return err
	}
	if err := r.waitReady(ctx, fluxShoot, bootstrap.KustomizationGVK, fluxNamespace, "True", ""); err != nil {
		return err
	}
	if err := r.waitReady(ctx, kluctlShoot, bootstrap.KluctlDeploymentGVK, kluctlNamespace, "True", ""); err != nil {
		return err
	}
	// The health check runs every few seconds; its next round reports both shoots healthy.
	if err := r.waitBootstrapReady(ctx, fluxShoot, kluctlShoot); err != nil {
		return err
	}
	if err := r.scrapeAll(ctx, fluxShoot, kluctlShoot, "healthy"); err != nil {
		return err
	}

	r.progress("committing manifests that do not build")
	// kustomize-controller cannot decode the manifest; kluctl cannot render the template.
	if _, err := gitserver.CommitFile(filepath.Join(r.repos, fluxRepo), gitserver.ConfigMapPath, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [broken\n"), "Broken manifest"); err != nil {
		return err
	}
	if _, err := gitserver.CommitFile(filepath.Join(r.repos, kluctlRepo), gitserver.ConfigMapPath, []byte(gitserver.ConfigMapManifest("2")+"  broken: \"{% if args.color %}\"\n"), "Broken template"); err != nil {
		return err
	}
	if err := r.requestReconcile(ctx, fluxShoot, bootstrap.GitRepositoryGVK, fluxNamespace); err != nil {
		return err
	}
	if err := r.waitReady(ctx, fluxShoot, bootstrap.KustomizationGVK, fluxNamespace, "False", ""); err != nil {
		return err
	}
	if err := r.waitReady(ctx, kluctlShoot, bootstrap.KluctlDeploymentGVK, kluctlNamespace, "False", ""); err != nil {
		return err
	}
	if err := r.scrape(ctx, fluxShoot, fluxNamespace, "kustomize-controller", "failing"); err != nil {
		return err
	}
	if err := r.scrape(ctx, kluctlShoot, kluctlNamespace, "kluctl-controller", "failing"); err != nil {
		return err
	}

	r.progress("switching the flux shoot to a branch the repository does not have")
	if err := fluxShoot.h.UpdateProviderConfig(ctx, r.fluxConfig("no-such-branch")); err != nil {
		return err
	}
	if _, err := fluxShoot.h.WaitSucceeded(ctx, reconcileTimeout); err != nil {
		return err
	}
	if err := r.waitReady(ctx, fluxShoot, bootstrap.GitRepositoryGVK, fluxNamespace, "False", "no-such-branch"); err != nil {
		return err
	}
	if err := r.scrape(ctx, fluxShoot, fluxNamespace, "source-controller", "failing"); err != nil {
		return err
	}

	r.progress("refusing the deploy keys at the git server")
	if err := fluxShoot.h.UpdateProviderConfig(ctx, r.fluxConfig(gitserver.Branch)); err != nil {
		return err
	}
	if _, err := fluxShoot.h.WaitSucceeded(ctx, reconcileTimeout); err != nil {
		return err
	}
	if err := r.git.SetAuthorizedKeys(nil); err != nil {
		return err
	}
	if err := r.requestReconcile(ctx, fluxShoot, bootstrap.GitRepositoryGVK, fluxNamespace); err != nil {
		return err
	}
	if err := r.waitReady(ctx, fluxShoot, bootstrap.GitRepositoryGVK, fluxNamespace, "False", "unable to authenticate"); err != nil {
		return err
	}
	if err := r.scrape(ctx, fluxShoot, fluxNamespace, "source-controller", "key-refused"); err != nil {
		return err
	}
	if err := r.waitBootstrapFailing(ctx, fluxShoot, kluctlShoot); err != nil {
		return err
	}
	return r.scrapeExtension("failing")
}

// createShoot creates a shoot that runs the delivered controllers, registers its deploy key at the
// git server and gives its Prometheus access.
func (r *recorder) createShoot(ctx context.Context, name string, providerConfig []byte) (*shoot, error) {
	h, err := r.sb.CreateShoot(ctx, sandbox.ShootSpec{Project: project, Name: name, RunControllers: true, ProviderConfig: providerConfig})
	if err != nil {
		return nil, err
	}
	if _, err := h.WaitSucceeded(ctx, reconcileTimeout); err != nil {
		return nil, err
	}
	status, err := h.ProviderStatus(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.git.AddAuthorizedKey(status.PublicKey); err != nil {
		return nil, err
	}
	token, err := h.PrometheusShootAccess(ctx)
	if err != nil {
		return nil, err
	}
	return &shoot{h: h, token: token}, nil
}

func (r *recorder) fluxConfig(branch string) []byte {
	return mustJSON(map[string]any{
		"source": map[string]any{
			"url":        r.git.URL(fluxRepo),
			"ref":        map[string]any{"branch": branch},
			"path":       "configmap",
			"knownHosts": r.git.KnownHostsLine(),
		},
		"bootstrap": map[string]any{"mode": "flux"},
		"kluctl":    map[string]any{"enabled": false},
		"flux":      map[string]any{"components": []string{"source-controller", "kustomize-controller"}},
	})
}

func (r *recorder) kluctlConfig() []byte {
	return mustJSON(map[string]any{
		"source": map[string]any{
			"url":        r.git.URL(kluctlRepo),
			"ref":        map[string]any{"branch": gitserver.Branch},
			"knownHosts": r.git.KnownHostsLine(),
		},
		"bootstrap": map[string]any{"mode": "kluctl", "kluctl": map[string]any{"target": gitserver.Target, "interval": "5s", "retryInterval": "5s"}},
	})
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// waitReady waits until the bootstrap object's Ready condition has status and its message
// contains message.
func (r *recorder) waitReady(ctx context.Context, s *shoot, gvk schema.GroupVersionKind, namespace, status, message string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, stateTimeout, true, func(ctx context.Context) (bool, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		err := s.h.Shoot.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: constants.BootstrapName}, obj)
		if apierrors.IsNotFound(err) {
			last = "not found"
			return false, nil
		}
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["type"] != "Ready" {
				continue
			}
			last = fmt.Sprintf("%v: %v", m["status"], m["message"])
			msg, _ := m["message"].(string)
			return m["status"] == status && strings.Contains(msg, message), nil
		}
		last = "no Ready condition"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s %s/%s of %s not Ready=%s (%q) within %s, last: %s: %w\n%s", gvk.Kind, namespace, constants.BootstrapName, s.h.Name, status, message, stateTimeout, last, err, s.h.ControllerLogs())
	}
	r.progress(fmt.Sprintf("%s of shoot %s: Ready=%s", gvk.Kind, s.h.Name, truncate(last, 200)))
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// requestReconcile asks a Flux controller to reconcile the bootstrap object now instead of at its
// interval, as `flux reconcile` does.
func (r *recorder) requestReconcile(ctx context.Context, s *shoot, gvk schema.GroupVersionKind, namespace string) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(constants.BootstrapName)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano)))
	if err := s.h.Shoot.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("failed requesting a reconcile of %s %s/%s: %w", gvk.Kind, namespace, constants.BootstrapName, err)
	}
	return nil
}

// waitBootstrapReady waits until the health check reports BootstrapReady true for the shoots.
func (r *recorder) waitBootstrapReady(ctx context.Context, shoots ...*shoot) error {
	return r.waitBootstrap(ctx, "True", shoots)
}

// waitBootstrapFailing waits until the health check reports BootstrapReady false for the shoots.
func (r *recorder) waitBootstrapFailing(ctx context.Context, shoots ...*shoot) error {
	return r.waitBootstrap(ctx, "False", shoots)
}

func (r *recorder) waitBootstrap(ctx context.Context, status string, shoots []*shoot) error {
	for _, s := range shoots {
		var last string
		err := wait.PollUntilContextTimeout(ctx, pollInterval, stateTimeout, true, func(ctx context.Context) (bool, error) {
			ex, err := s.h.Extension(ctx)
			if err != nil {
				return false, err
			}
			for _, c := range ex.Status.Conditions {
				if c.Type == "BootstrapReady" {
					last = string(c.Status) + ": " + c.Message
					return string(c.Status) == status, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("BootstrapReady of %s not %s within %s, last: %s: %w", s.h.Name, status, stateTimeout, last, err)
		}
	}
	return nil
}

// scrapeAll writes the samples of every controller of the shoots and of the extension in state.
func (r *recorder) scrapeAll(ctx context.Context, fluxShoot, kluctlShoot *shoot, state string) error {
	for _, c := range []struct {
		s                     *shoot
		namespace, deployment string
	}{
		{fluxShoot, fluxNamespace, "source-controller"},
		{fluxShoot, fluxNamespace, "kustomize-controller"},
		{kluctlShoot, kluctlNamespace, "kluctl-controller"},
	} {
		if err := r.scrape(ctx, c.s, c.namespace, c.deployment, state); err != nil {
			return err
		}
	}
	return r.scrapeExtension(state)
}

// scrape reads the metrics of the Deployment's pod through the shoot's kube-apiserver with the
// token of the shoot's Prometheus and writes the sample <deployment>.<state>.prom. The controllers
// record their metrics at the end of a reconcile, after they wrote the status the state was read
// from: it scrapes until the reconcile that reached the state is in the metrics (settled).
func (r *recorder) scrape(ctx context.Context, s *shoot, namespace, deployment, state string) error {
	var pod string
	for _, c := range s.h.Controllers() {
		if c.Namespace == namespace && c.Deployment == deployment && c.Running {
			pod = c.Pod
		}
	}
	if pod == "" {
		return fmt.Errorf("shoot %s runs no pod of %s/%s", s.h.Name, namespace, deployment)
	}
	var text []byte
	err := wait.PollUntilContextTimeout(ctx, pollInterval, stateTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if text, err = s.h.ScrapePod(ctx, s.token, sandbox.PodMetricsPath(namespace, pod, metricsPort)); err != nil {
			return false, err
		}
		return r.settled(deployment, state, string(text)), nil
	})
	if err != nil {
		return fmt.Errorf("the metrics of %s did not show state %s within %s: %w", deployment, state, stateTimeout, err)
	}
	return r.write(deployment, state, text, controllerSelection)
}

// settled tells whether the metrics show the state: the kluctl controller's Ready condition, or
// for the Flux controllers, which export no condition, a reconcile of the bootstrap object more
// than in the last sample of the component.
func (r *recorder) settled(component, state, text string) bool {
	if component == "kluctl-controller" {
		status := "True"
		if state != "healthy" {
			status = "False"
		}
		return strings.Contains(text, `namespace="kluctl-system",status="`+status+`",type="Ready"} 1`)
	}
	count := -1.0
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, "gotk_reconcile_duration_seconds_count{"); ok && strings.Contains(rest, `name="`+constants.BootstrapName+`"`) {
			_, value, _ := strings.Cut(strings.TrimSpace(rest), "} ")
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				count = v
			}
		}
	}
	last, seen := r.reconciles[component]
	if count <= 0 || (seen && count <= last) {
		return false
	}
	r.reconciles[component] = count
	return true
}

// scrapeExtension reads the extension's /metrics and writes the sample extension.<state>.prom.
func (r *recorder) scrapeExtension(state string) error {
	url, err := r.sb.ExtensionMetricsURL()
	if err != nil {
		return err
	}
	text, err := get(url)
	if err != nil {
		return err
	}
	return r.write("extension", state, text, extensionSelection)
}
