// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package integration runs the shoot-flux extension against real API servers: a garden, a seed
// and per shoot an API server with gardener-resource-manager (see package sandbox). Every scenario
// uses its own project, so scenarios do not depend on each other.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/leak"
)

// Timeouts of the scenarios. A reconcile in the sandbox takes a few seconds; the bounds leave room
// for a loaded machine without letting a hanging scenario block the suite for long.
var (
	// startTimeout bounds the start of the sandbox.
	startTimeout = 3 * time.Minute
	// reconcileTimeout bounds one Extension operation, including retries after errors.
	reconcileTimeout = 2 * time.Minute
	// errorTimeout bounds the wait for a reconcile to report a configuration error.
	errorTimeout = time.Minute
	// shootTimeout bounds the wait for objects to appear in or vanish from a shoot.
	shootTimeout = time.Minute
	// latencyBudgets says where a tenant's latency beside an attack is held to a budget: specs
	// bound it by the timeouts above, which hold on a loaded machine (CI ran the two suites side
	// by side on 2 cores), the bench on an idle one.
	latencyBudgets = "budgets on an idle machine: make bench, noisy neighbour"
	// deleteTimeout bounds the deletion of an Extension, including the ordered ManagedResource
	// deletion.
	deleteTimeout = 3 * time.Minute
	// gitopsTimeout bounds the wait for the source-controller to fetch a repository.
	gitopsTimeout = 3 * time.Minute
	// controllersTimeout bounds the wait for the Flux controllers a shoot runs
	// (ShootSpec.RunControllers) to start and their Deployments to become available.
	controllersTimeout = 2 * time.Minute
	// healthTimeout bounds the wait for the health check to report a state; it runs every 5s.
	healthTimeout = time.Minute
	// consistentlyDuration is how long a state is watched for not changing.
	consistentlyDuration = 3 * time.Second
	// pollInterval is the polling interval of Eventually and Consistently.
	pollInterval = 250 * time.Millisecond
	// leakSettle is how long the leak check waits for the last events and status changes to reach
	// the recorder.
	leakSettle = 2 * time.Second
)

var (
	suiteCtx    context.Context
	sb          *sandbox.Sandbox
	leaks       *leak.Recorder
	git         *gitserver.Server
	gitRepoRoot string
	gitCommit   string
	// fluxBinaries are the Flux controller binaries of the sandbox, by image (Options.FluxControllers).
	fluxBinaries map[string]string
	// kluctlBinaries are the kluctl controller binaries of the sandbox, by image
	// (Options.KluctlControllers).
	kluctlBinaries map[string]string
)

// repoName is the repository of the suite's git server that holds the kluctl project.
const repoName = "fleet"

// The scenarios labelled labelDeployed also run with the extension as deployed (sandbox
// Options.Deployed) when envDeployed is "true": make test-deployed. Those labelled labelLandscape
// are about the installation (ControllerRegistration, ControllerInstallation), which only the
// deployed extension has: they run only then.
const (
	labelDeployed  = "deployed"
	labelLandscape = "landscape"
	envDeployed    = "SHOOT_FLUX_DEPLOYED"
)

// deployed tells whether this run drives the extension as deployed.
func deployed() bool {
	return os.Getenv(envDeployed) == "true"
}

func TestIntegration(t *testing.T) {
	RegisterFailHandler(Fail)
	suiteConfig, reporterConfig := GinkgoConfiguration()
	if !deployed() {
		// The in-process extension has no installation for these scenarios to look at.
		filter := "!" + labelLandscape
		if suiteConfig.LabelFilter != "" {
			filter = "(" + suiteConfig.LabelFilter + ") && " + filter
		}
		suiteConfig.LabelFilter = filter
	}
	RunSpecs(t, "Integration Suite", suiteConfig, reporterConfig)
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(shootTimeout)
	SetDefaultEventuallyPollingInterval(pollInterval)
	SetDefaultConsistentlyDuration(consistentlyDuration)
	SetDefaultConsistentlyPollingInterval(pollInterval)

	// Every log line of the sandbox's controllers, the extension's among them, is recorded for the
	// leak check at the end of the suite.
	leaks = leak.NewRecorder()
	log := logr.New(leaks.LogSink(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)).GetSink()))
	logf.SetLogger(log)

	// make test-integration provides them all; a missing one is a broken setup, not a reason to skip.
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS must point at the envtest binaries (hack/build-envtest.sh)")
	// Every embedded Flux release runs its own controllers: the upgrade scenarios switch between them.
	var err error
	fluxBinaries, err = kubelet.ParseControllers(kubelet.FluxControllersEnv, os.Getenv(kubelet.FluxControllersEnv))
	Expect(err).NotTo(HaveOccurred())
	images, err := kubelet.FluxControllerImages()
	Expect(err).NotTo(HaveOccurred())
	for _, image := range images {
		Expect(fluxBinaries).To(HaveKey(image), "%s must list a binary for %s (hack/build-flux-controllers.sh)", kubelet.FluxControllersEnv, image)
		Expect(fluxBinaries[image]).To(BeAnExistingFile())
	}
	// kluctl, the default bootstrap mode, runs its real controller too.
	kluctlBinaries, err = kubelet.ParseControllers(kubelet.KluctlControllersEnv, os.Getenv(kubelet.KluctlControllersEnv))
	Expect(err).NotTo(HaveOccurred())
	images, err = kubelet.KluctlControllerImages()
	Expect(err).NotTo(HaveOccurred())
	for _, image := range images {
		Expect(kluctlBinaries).To(HaveKey(image), "%s must list a binary for %s (hack/build-kluctl-controller.sh)", kubelet.KluctlControllersEnv, image)
		Expect(kluctlBinaries[image]).To(BeAnExistingFile())
	}

	suiteCtx = context.Background()
	ctx, cancel := context.WithTimeout(suiteCtx, startTimeout)
	defer cancel()

	gitRepoRoot = GinkgoT().TempDir()
	gitCommit, err = gitserver.NewKluctlProjectRepo(filepath.Join(gitRepoRoot, repoName))
	Expect(err).NotTo(HaveOccurred())
	git, err = gitserver.Start(gitserver.Options{RepoRoot: gitRepoRoot})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(git.Close)

	// The extension is driven by gardenlet's operation annotations, as in production: with
	// IgnoreOperationAnnotation gardener's extension library drops Cluster changes and
	// migrate/restore requests (see the sandbox package documentation).
	if deployed() {
		cfg, _ := GinkgoConfiguration()
		Expect(cfg.LabelFilter).To(ContainSubstring(labelDeployed), "%s=true runs only the scenarios labelled %q", envDeployed, labelDeployed)
		// Building the binary is part of the start.
		var cancelBuild context.CancelFunc
		ctx, cancelBuild = context.WithTimeout(suiteCtx, startTimeout+sandbox.BuildTimeout)
		defer cancelBuild()
	}
	sb, err = sandbox.Start(ctx, sandbox.Options{
		FluxControllers:         fluxBinaries,
		KluctlControllers:       kluctlBinaries,
		MaxConcurrentReconciles: 5,
		HealthCheck:             true,
		Deployed:                deployed(),
		Log:                     log,
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(sb.Stop)

	recordCtx, stopRecording := context.WithCancel(suiteCtx)
	DeferCleanup(stopRecording)
	Expect(leaks.WatchGarden(recordCtx, sb.Garden.Config, sb.Garden.Client.Scheme())).To(Succeed())
	Expect(leaks.WatchSeed(recordCtx, sb.Seed.Config, sb.Seed.Client.Scheme())).To(Succeed())
})

// The scenarios create deploy keys and user credentials; none of them may show up in a log line,
// an event or an Extension status of any scenario. The sandbox is still up here: BeforeSuite's
// cleanups run after AfterSuite.
var _ = AfterSuite(func(ctx SpecContext) {
	if leaks == nil || sb == nil {
		return
	}
	time.Sleep(leakSettle)
	if deployed() && sb != nil {
		Expect(leaks.RecordLogFile(sb.ExtensionLogPath())).To(Succeed())
	}
	texts, keys := leaks.Counts()
	// Every event still stored must have reached the recorder.
	for _, c := range []struct {
		cluster *cluster.Cluster
		source  string
	}{{sb.Seed, leak.SourceSeedEvent}, {sb.Garden, leak.SourceGardenEvent}} {
		events := &corev1.EventList{}
		Expect(c.cluster.Client.List(ctx, events)).To(Succeed())
		Expect(texts[c.source]).To(BeNumerically(">=", len(events.Items)), "events of the %s were not recorded", c.cluster.Name)
	}
	By(fmt.Sprintf("scanning %v recorded texts for %d private keys", texts, keys))
	findings := leaks.Scan()
	Expect(findings).To(BeEmpty(), "private key material leaked")
	// A scan of nothing proves nothing: a full run records keys, logs and statuses. A focused run
	// may have run no scenario with a private key.
	if cfg, _ := GinkgoConfiguration(); len(cfg.FocusStrings)+len(cfg.FocusFiles)+len(cfg.SkipStrings)+len(cfg.SkipFiles) == 0 && cfg.LabelFilter == "" {
		Expect(keys).To(BeNumerically(">", 0), "no private keys were recorded")
		Expect(texts[leak.SourceLog]).To(BeNumerically(">", 0), "no log lines were recorded")
		Expect(texts[leak.SourceExtensionStatus]).To(BeNumerically(">", 0), "no Extension statuses were recorded")
	}
})

// With the extension as deployed, every scenario also proves the packaging: a request the chart's
// roles or example/garden-rbac.yaml do not allow fails the scenario with the permission it lacked,
// and a failing scenario shows the end of the extension's log.
var _ = AfterEach(func() {
	if !deployed() || sb == nil {
		return
	}
	denied, err := sb.DeniedRequests()
	Expect(err).NotTo(HaveOccurred())
	// A scenario that failed already reports its own error first; the denials say why.
	if CurrentSpecReport().Failed() {
		AddReportEntry("extension log", logTail(sb.ExtensionLogPath(), 60))
		if len(denied) > 0 {
			AddReportEntry("requests denied to the extension", strings.Join(denied, "\n"))
		}
	}
	Expect(denied).To(BeEmpty(), "the extension's identities lack permissions")
})

// logTail returns the last lines of a file.
func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
