// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/secrets"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// healthCheckControllerPrefix starts the name gardener's health check library gives its
// controller (healthcheck-Extension-extensions.gardener.cloud-v1alpha1-<random>), which labels its
// controller-runtime and workqueue metrics.
const healthCheckControllerPrefix = "healthcheck-"

// healthCheckPollInterval is how often the extension's metrics are read while the first round of
// health checks runs.
var healthCheckPollInterval = time.Second

func isHealthCheckController(l map[string]string) bool {
	return strings.HasPrefix(l["controller"], healthCheckControllerPrefix)
}

// extensionConfig is the sandbox's configuration of the extension with the benchmark's health
// check sync period.
func (b *bench) extensionConfig() config.ControllerConfiguration {
	cfg := b.sb.ExtensionConfig()
	if b.opts.healthSyncPeriod > 0 {
		cfg.HealthCheckConfig = &healthcheckconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: b.opts.healthSyncPeriod}}
	}
	return cfg
}

// healthCheckSyncPeriod is the period the benchmark's extension checks every shoot with.
func (b *bench) healthCheckSyncPeriod() time.Duration {
	if cfg := b.extensionConfig(); cfg.HealthCheckConfig != nil && cfg.HealthCheckConfig.SyncPeriod.Duration > 0 {
		return cfg.HealthCheckConfig.SyncPeriod.Duration
	}
	return healthcheck.DefaultAddOptions.HealthCheckConfig.SyncPeriod.Duration
}

// healthChecks measures whether the health check keeps up with all shoots, first with every
// shoot's API server answering at once, then with -hung-shoots of them hung.
//
// What tells that a shoot was checked is the status update that ends every check (gardener's
// health check library replaces the Extension's status after each check, changed or not), taken
// from the seed API server's audit log: the conditions' lastUpdateTime moves only when a
// condition's reason, message or codes change, so it cannot show a check of a shoot whose health
// stays the same.
func (b *bench) healthChecks(ctx context.Context) error {
	if err := b.followHealthChecks(ctx, nil); err != nil {
		return err
	}
	if b.opts.hungShoots == 0 {
		return nil
	}
	hung, err := b.hangShoots(ctx, b.opts.hungShoots)
	if err != nil {
		return err
	}
	return b.followHealthChecks(ctx, hung)
}

// hangShoots points the shoot access Secrets of n shoots, spread over the projects, at a hung API
// server (hungAPIServer), and returns their seed namespaces.
func (b *bench) hangShoots(ctx context.Context, n int) ([]string, error) {
	var err error
	if b.hung, err = startHungAPIServer(); err != nil {
		return nil, err
	}
	kubeconfig, err := b.hung.kubeconfig()
	if err != nil {
		return nil, err
	}
	var namespaces []string
	for i := range n {
		ns := b.namespaces[(i*len(b.namespaces))/n]
		for _, name := range []string{v1beta1constants.SecretNameGardener, v1beta1constants.SecretNameGardenerInternal} {
			secret := &corev1.Secret{}
			if err := b.sb.Seed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
				return nil, fmt.Errorf("failed reading shoot access Secret %s/%s: %w", ns, name, err)
			}
			secret.Data[secrets.DataKeyKubeconfig] = kubeconfig
			if err := b.sb.Seed.Client.Update(ctx, secret); err != nil {
				return nil, fmt.Errorf("failed updating shoot access Secret %s/%s: %w", ns, name, err)
			}
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, nil
}

// followHealthChecks restarts the extension, which enqueues every Extension's check at once as
// after any restart or change of leader, and times the first round until every shoot was checked.
// Then it follows the checks for -health-window, at least 2.5 sync periods, and reports the
// longest time any shoot went unchecked, the work of one round and the extension's CPU. The
// shoots in hung have a hung API server; the goal holds for the others.
func (b *bench) followHealthChecks(ctx context.Context, hung []string) error {
	n := len(b.shoots)
	period := b.healthCheckSyncPeriod()
	window := max(b.opts.healthWindow, 2*period+period/2)
	step("restarting the extension and following the health checks of %d shoots (%d hung) for %s after the first round", n, len(hung), window)
	var (
		started, steady, end time.Time
		before, after        metrics
		cpu                  cpuUse
		list                 = &extensionsv1alpha1.ExtensionList{}
	)
	stats, err := b.measure(ctx, func(ctx context.Context) error {
		if _, err := b.restartExtension(ctx); err != nil {
			return err
		}
		started = b.ext.started
		// The first round ends once the controller has reconciled every shoot; the audit log
		// tells exactly when each was checked.
		for {
			m, err := b.ext.scrape(ctx)
			if err != nil {
				return err
			}
			if m.value("controller_runtime_reconcile_total", isHealthCheckController) >= float64(n) {
				before = m
				break
			}
			if err := sandbox.Sleep(ctx, healthCheckPollInterval); err != nil {
				return fmt.Errorf("the first round of health checks did not end: %w", err)
			}
		}
		steady = time.Now()
		cpuBefore, err := takeCPUSnapshot(b.ext.process.Pid())
		if err != nil {
			return err
		}
		if err := sandbox.Sleep(ctx, window); err != nil {
			return err
		}
		cpuAfter, err := takeCPUSnapshot(b.ext.process.Pid())
		if err != nil {
			return err
		}
		cpu = cpuAfter.since(cpuBefore)
		if after, err = b.ext.scrape(ctx); err != nil {
			return err
		}
		end = time.Now()
		if err := b.sb.Seed.Client.List(ctx, list); err != nil {
			return fmt.Errorf("failed listing the Extensions: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}

	answering := slices.DeleteFunc(slices.Clone(b.namespaces), func(ns string) bool { return slices.Contains(hung, ns) })
	times := healthCheckTimes(stats.seedEvents)
	checks := analyzeChecks(times, answering, started, steady, end)
	checksInWindow := after.value("controller_runtime_reconcile_total", isHealthCheckController) -
		before.value("controller_runtime_reconcile_total", isHealthCheckController)
	meanCheck := meanSeconds(before, after, "controller_runtime_reconcile_time_seconds", isHealthCheckController)
	workers := after.value("controller_runtime_max_concurrent_reconciles", isHealthCheckController)

	r := b.report
	if len(hung) == 0 {
		r.section("Health checks of %d shoots (sync period %s, %.0f worker(s))", n, period, workers)
	} else {
		r.section("Health checks of %d shoots, %d of them with a hung API server that answers after %s (sync period %s, %.0f worker(s))", n, len(hung), hungAnswerAfter, period, workers)
	}
	r.add(fmt.Sprintf("first round after a restart: start → all %d answering shoots checked", len(answering)), dur(checks.firstRound), "≤ "+period.String(),
		verdict(checks.unchecked == 0 && checks.firstRound <= period))
	if checks.unchecked > 0 {
		r.add("  answering shoots not checked at all", fmt.Sprint(checks.unchecked), "0", verdict(false))
	}
	busy := time.Duration(float64(n) * float64(meanCheck) / max(workers, 1))
	r.add(fmt.Sprintf("work of one round (%d × mean check / workers)", n), dur(busy), "≤ "+period.String(), verdict(busy <= period))
	r.add("  mean check (reconcile) duration", dur(meanCheck), "", "")
	// A shoot is checked again a sync period after its check ended, so even an idle worker
	// checks every period plus the check's own duration.
	slack := period / 10
	r.add(fmt.Sprintf("steady state (%s): oldest check of an answering shoot", dur(end.Sub(steady))), dur(checks.oldest),
		"≤ "+(period+slack).String(), verdict(checks.unchecked == 0 && checks.oldest <= period+slack))
	r.add("  interval between two checks of a shoot: p50 / p99 / max", fmt.Sprintf("%s / %s / %s",
		dur(percentile(checks.intervals, 0.5)), dur(percentile(checks.intervals, 0.99)), dur(percentile(checks.intervals, 1))), "", "")
	if len(hung) > 0 {
		hungChecks := analyzeChecks(times, hung, started, steady, end)
		r.add("  oldest check of a hung shoot (a check ends with the answer or a request timeout)", dur(hungChecks.oldest), "", "")
	}
	oldestUpdate, conditions := oldestConditionUpdate(list.Items, healthcheck.ConditionTypeBootstrapReady, end)
	r.add(fmt.Sprintf("oldest %s lastUpdateTime (%d Extensions with the condition)", healthcheck.ConditionTypeBootstrapReady, conditions), dur(oldestUpdate), "",
		"moves only when the condition changes, not on a check")
	if checksInWindow > 0 {
		extensionCPU := cpu.groups[roleExtension] * end.Sub(steady).Seconds()
		r.add("extension CPU in steady state: cores / per check", fmt.Sprintf("%.3f / %s", cpu.groups[roleExtension],
			dur(time.Duration(extensionCPU/checksInWindow*float64(time.Second)))), "", "")
		steadyRequests := requestCounts(after, b.seedHost, b.gardenHost).minus(requestCounts(before, b.seedHost, b.gardenHost))
		shootRequests := after.value("rest_client_requests_total", b.isShootHost) - before.value("rest_client_requests_total", b.isShootHost)
		r.add("requests per check: seed reads / seed writes / shoot", fmt.Sprintf("%.2f / %.2f / %.2f",
			steadyRequests.SeedReads/checksInWindow, steadyRequests.SeedWrites/checksInWindow, shootRequests/checksInWindow), "", "")
	}
	r.add(fmt.Sprintf("CPU busy in steady state (machine, %.0f cores)", cpu.cores), fmt.Sprintf("%.0f%%", 100*cpu.machine), "", "")
	var ours float64
	for _, g := range cpu.sortedGroups() {
		ours += cpu.groups[g]
		if cpu.groups[g] >= 0.005 {
			r.add("  cores used by "+g, fmt.Sprintf("%.3f", cpu.groups[g]), "", "")
		}
	}
	if other := cpu.machine*cpu.cores - ours; other >= 0.1 {
		r.add("  cores used by processes outside the benchmark", fmt.Sprintf("%.2f", other), "", "the machine was shared")
	}
	if len(hung) == 0 {
		r.note("A check counts when the health check library writes its result: it replaces the Extension's " +
			"status after every check, changed or not (the seed API server's audit log gives the time). The " +
			"conditions' lastUpdateTime is no heartbeat: gardener's condition builder moves it only when the " +
			"reason, message or codes change. The shoots' API server is the sandbox's shared shoot API server " +
			"on loopback.")
	} else {
		r.note("The hung shoots' access Secrets point at a stand-in API server that accepts every request and "+
			"answers it after %s with a 504, as a kube-apiserver whose etcd does not answer gives up after its "+
			"request timeout. Without a request timeout of the shoot client, a check's request waits for the "+
			"answer until the check's deadline (the sync period).", hungAnswerAfter)
	}
	return nil
}

// isShootHost tells the requests to a shoot's API server from those to the seed and the garden.
func (b *bench) isShootHost(l map[string]string) bool {
	return l["host"] != "" && l["host"] != b.seedHost && l["host"] != b.gardenHost
}

// healthCheckTimes returns, per seed namespace, when the health check library wrote an
// Extension's status (its update of extensions/status), in order.
func healthCheckTimes(events []sandbox.AuditEvent) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, ev := range events {
		if _, owner := classify(ev); owner != ownerHealthCheck {
			continue
		}
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300 {
			continue
		}
		out[ev.ObjectRef.Namespace] = append(out[ev.ObjectRef.Namespace], ev.StageTimestamp)
	}
	for _, times := range out {
		slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// checkStats are the health checks of all shoots from start (the extension started) to end.
type checkStats struct {
	// firstRound is how long after start the last shoot was checked for the first time.
	firstRound time.Duration
	// unchecked counts the shoots without any check.
	unchecked int
	// oldest is the longest time any shoot went unchecked in the steady state from steady to end:
	// the age of the oldest check at the worst moment.
	oldest time.Duration
	// intervals are the times between two checks of a shoot that ended in the steady state.
	intervals []time.Duration
}

func analyzeChecks(times map[string][]time.Time, namespaces []string, start, steady, end time.Time) checkStats {
	var s checkStats
	for _, ns := range namespaces {
		var checked []time.Time
		for _, t := range times[ns] {
			if !t.Before(start) && !t.After(end) {
				checked = append(checked, t)
			}
		}
		if len(checked) == 0 {
			s.unchecked++
			s.oldest = max(s.oldest, end.Sub(start))
			continue
		}
		s.firstRound = max(s.firstRound, checked[0].Sub(start))
		last := start
		for _, t := range checked {
			if t.After(steady) {
				s.oldest = max(s.oldest, t.Sub(last))
				if last != start {
					s.intervals = append(s.intervals, t.Sub(last))
				}
			}
			last = t
		}
		s.oldest = max(s.oldest, end.Sub(last))
	}
	slices.Sort(s.intervals)
	return s
}

// oldestConditionUpdate returns the age at now of the oldest lastUpdateTime of the condition
// among the Extensions, and how many have it.
func oldestConditionUpdate(items []extensionsv1alpha1.Extension, conditionType string, now time.Time) (time.Duration, int) {
	var (
		oldest time.Duration
		count  int
	)
	for _, ex := range items {
		for _, c := range ex.Status.Conditions {
			if c.Type != gardencorev1beta1.ConditionType(conditionType) {
				continue
			}
			count++
			oldest = max(oldest, now.Sub(c.LastUpdateTime.Time))
		}
	}
	return oldest, count
}

// hungAnswerAfter is when the hung API server answers a request: kube-apiserver's default
// --request-timeout, after which it gives up on a request whose storage does not answer.
var hungAnswerAfter = time.Minute

// hungAPIServer is a stand-in for a shoot API server that accepts connections and requests and
// answers each only after hungAnswerAfter, with kube-apiserver's 504 of a timed-out request.
type hungAPIServer struct {
	server *httptest.Server
	stop   chan struct{}
}

func startHungAPIServer() (*hungAPIServer, error) {
	stop := make(chan struct{})
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return
		case <-time.After(hungAnswerAfter):
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"request did not complete within the allowed duration","reason":"Timeout","code":504}`)
	}))
	// TLS handshake errors of the aborted requests are expected.
	server.Config.ErrorLog = log.New(io.Discard, "", 0)
	server.StartTLS()
	return &hungAPIServer{server: server, stop: stop}, nil
}

// kubeconfig is a shoot access kubeconfig for the hung API server.
func (h *hungAPIServer) kubeconfig() ([]byte, error) {
	const name = "hung"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   h.server.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.server.Certificate().Raw}),
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: name}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("failed serializing the hung API server's kubeconfig: %w", err)
	}
	return out, nil
}

func (h *hungAPIServer) close() {
	if h == nil {
		return
	}
	close(h.stop)
	h.server.Close()
}
