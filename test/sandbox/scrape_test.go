// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	logzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/kubelet"
)

// The components of the controllers the kubelet stand-in runs, by the names of their images
// (kubelet.ControllerProcess.Component).
const (
	sourceController = fluxapi.ComponentSourceController
	kluctlController = "kluctl"
)

// scrapeTimeout bounds the scenario: the start of the sandbox, the shoot's reconcile, the start
// of its controllers and their first reconciles.
var scrapeTimeout = 5 * time.Minute

// The shoot's Prometheus scrapes what runs in the shoot through the shoot's kube-apiserver (pod
// role service discovery and the pod proxy, gardener's ClusterComponentScrapeConfigSpec) with the
// token of shoot-access-prometheus-shoot. This runs that path against the delivered controllers:
// the kubelet stand-in's Pods, the API server's egress through the VPN stand-in to the processes.
var _ = Describe("Scraping the delivered controllers through the shoot's API server", Label("sandbox"), func() {
	It("lists their pods and reads their metrics with the token of the shoot's Prometheus", func(spec SpecContext) {
		flux, kluctl, err := kubelet.ControllersFromEnv()
		Expect(err).NotTo(HaveOccurred())
		// make test-integration sets them; without them the spec cannot prove anything.
		Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS must point at the envtest binaries (hack/build-envtest.sh)")
		Expect(flux).NotTo(BeEmpty(), kubelet.FluxControllersEnv+" must name the Flux controllers (hack/build-flux-controllers.sh)")
		Expect(kluctl).NotTo(BeEmpty(), kubelet.KluctlControllersEnv+" must name the kluctl controller (hack/build-kluctl-controller.sh)")
		logf.SetLogger(logzap.New(logzap.WriteTo(GinkgoWriter), logzap.UseDevMode(true)))
		ctx, cancel := context.WithTimeout(spec, scrapeTimeout)
		defer cancel()

		root := GinkgoT().TempDir()
		_, err = gitserver.NewKluctlProjectRepo(filepath.Join(root, "fleet"))
		Expect(err).NotTo(HaveOccurred())
		git, err := gitserver.Start(gitserver.Options{RepoRoot: root})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(git.Close)

		sb, err := Start(ctx, Options{FluxControllers: flux, KluctlControllers: kluctl, Log: logf.Log})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sb.Stop)
		_, err = sb.CreateProject(ctx, "scrape")
		Expect(err).NotTo(HaveOccurred())
		h, err := sb.CreateShoot(ctx, ShootSpec{
			Project:        "scrape",
			Name:           "one",
			RunControllers: true,
			ProviderConfig: []byte(`{"source":{"url":"` + git.URL("fleet") + `","ref":{"branch":"` + gitserver.Branch + `"},"knownHosts":"` + git.KnownHostsLine() + `"},"bootstrap":{"mode":"kluctl"}}`),
		})
		if h != nil {
			DeferCleanup(func(ctx SpecContext) error { return h.Stop(ctx) })
		}
		Expect(err).NotTo(HaveOccurred())
		_, err = h.WaitSucceeded(ctx, scrapeTimeout)
		Expect(err).NotTo(HaveOccurred())
		status, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(git.AddAuthorizedKey(status.PublicKey)).To(Succeed())
		logs := func() string { return h.ControllerLogs() }

		By("waiting for the controllers' pods")
		byComponent := func(g Gomega) map[string]kubelet.ControllerProcess {
			running := map[string]kubelet.ControllerProcess{}
			for _, c := range h.Controllers() {
				if c.Running && c.Ready && c.PodIP != "" {
					running[c.Component] = c
				}
			}
			g.Expect(running).To(HaveKey(sourceController))
			g.Expect(running).To(HaveKey(kluctlController))
			return running
		}
		var processes map[string]kubelet.ControllerProcess
		Eventually(func(g Gomega) { processes = byComponent(g) }).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), logs)

		token, err := h.PrometheusShootAccess(ctx)
		Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		Expect(sb.Seed.Client.Get(ctx, client.ObjectKey{Namespace: h.SeedNamespace, Name: PrometheusShootAccessSecret}, secret)).To(Succeed())
		Expect(secret.Data).To(HaveKeyWithValue("token", token))
		prometheus, err := client.New(h.TokenConfig(token), client.Options{})
		Expect(err).NotTo(HaveOccurred())

		for _, target := range []struct {
			namespace, component, container, port string
			families                              []string
		}{
			// In kluctl mode source-controller has no source of its own to reconcile, so its gotk_
			// families have no series yet; record-metrics records them in flux mode.
			{"flux-system", sourceController, "manager", "http-prom", []string{`controller_runtime_reconcile_total{controller="gitrepository"`}},
			{"kluctl-system", kluctlController, "controller", "metrics", []string{`controller_runtime_reconcile_total{controller="kluctl-controller"`}},
		} {
			By("scraping " + target.component + " as the shoot's Prometheus")
			process := processes[target.component]
			// What the pod role of kubernetes service discovery lists, with the Prometheus token.
			pods := &corev1.PodList{}
			Expect(prometheus.List(ctx, pods, client.InNamespace(target.namespace))).To(Succeed())
			i := slices.IndexFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == process.Pod })
			Expect(i).NotTo(BeNumerically("<", 0), "pod %s not listed", process.Pod)
			pod := pods.Items[i]
			Expect(pod.Status.PodIP).To(Equal(process.PodIP))
			Expect(pod.Spec.NodeName).To(Equal(kubelet.NodeName))
			Expect(pod.OwnerReferences).To(ContainElement(HaveField("Name", process.Deployment)))
			Expect(pod.Status.Conditions).To(ContainElement(And(HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionTrue))))
			c := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == target.container })
			Expect(c).NotTo(BeNumerically("<", 0))
			p := slices.IndexFunc(pod.Spec.Containers[c].Ports, func(p corev1.ContainerPort) bool { return p.Name == target.port })
			Expect(p).NotTo(BeNumerically("<", 0), "container %s has no port %s", target.container, target.port)
			port := pod.Spec.Containers[c].Ports[p].ContainerPort
			Expect(port).To(Equal(int32(8080)))

			var metrics []byte
			Eventually(func(g Gomega) {
				metrics, err = h.ScrapePod(ctx, token, PodMetricsPath(target.namespace, pod.Name, port))
				g.Expect(err).NotTo(HaveOccurred())
				for _, family := range target.families {
					g.Expect(string(metrics)).To(ContainSubstring("\n"+family), "family %s", family)
				}
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), logs)
			AddReportEntry("families of "+target.component, strings.Join(families(metrics), " "))

			By("refusing ports no listener of the pod serves")
			_, err := h.ScrapePod(ctx, token, PodMetricsPath(target.namespace, pod.Name, 9999))
			// kube-apiserver answers 503 with the VPN's refusal.
			Expect(err).To(MatchError(And(ContainSubstring("503"), ContainSubstring("code 403"))))
		}

		By("replacing a deleted pod, as its ReplicaSet would")
		old := processes[sourceController]
		Expect(h.Shoot.Client.Delete(ctx, podKey(old))).To(Succeed())
		Eventually(func(g Gomega) {
			now := byComponent(g)[sourceController]
			g.Expect(now.Pod).NotTo(Equal(old.Pod))
			g.Expect(now.PodIP).NotTo(Equal(old.PodIP))
			err := h.Shoot.Client.Get(ctx, client.ObjectKeyFromObject(podKey(old)), &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old Pod is gone: %v", err)
			_, err = h.ScrapePod(ctx, token, PodMetricsPath("flux-system", now.Pod, 8080))
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), logs)

		By("scraping again after a restart of the shoot's API server, which keeps its egress")
		Expect(h.Shoot.StopAPIServer()).To(Succeed())
		Expect(h.Shoot.StartAPIServer()).To(Succeed())
		Eventually(func(g Gomega) {
			now := byComponent(g)[kluctlController]
			_, err := h.ScrapePod(ctx, token, PodMetricsPath("kluctl-system", now.Pod, 8080))
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), logs)
	})
})

// families lists the metric families of an exposition text by their TYPE lines.
func families(metrics []byte) []string {
	var out []string
	for line := range strings.Lines(string(metrics)) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			out = append(out, strings.Fields(rest)[0])
		}
	}
	return out
}

func podKey(c kubelet.ControllerProcess) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = c.Namespace, c.Pod
	return pod
}
