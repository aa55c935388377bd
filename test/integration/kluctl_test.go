// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"filippo.io/age"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/gitserver"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// kluctlFinalizer is what the kluctl controller puts on the KluctlDeployments it reconciles.
const kluctlFinalizer = "finalizers.gitops.kluctl.io"

// kluctlRetryInterval is the bootstrap.kluctl.retryInterval of the scenarios: the first clone
// fails until the scenario registered the deploy key the extension generated, and kluctl would
// otherwise retry only after the interval.
const kluctlRetryInterval = "3s"

// With the shoot's kubelet stand-in (ShootSpec.RunControllers) the delivered kluctl controller runs
// as delivered, in kluctl mode, the default: it clones the private repository over SSH with the
// delivered credentials and known_hosts, renders the configured target with the delivered
// arguments and deploys into the shoot as its ServiceAccount; the extension's health check reads
// what it reports.
var _ = Describe("GitOps with the delivered kluctl controller running", func() {
	It("deploys the configured target with the arguments and the shoot identity", Label(labelDeployed), func(ctx SpecContext) {
		h, commit, _ := kluctlShoot(ctx, "ktarget", kluctlShootSpec{kluctl: map[string]any{
			"target": gitserver.TargetGreen,
			"args":   map[string]any{"greeting": "hi"},
		}})

		By("checking the objects of the configured target in the shoot")
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "spec", "target")).To(Equal(gitserver.TargetGreen))
		expectAppConfigMap(ctx, h, gitserver.TargetGreen, map[string]string{
			"color":    gitserver.TargetGreen,
			"greeting": "hi",
			"shoot":    h.Project + "/" + h.Name,
			"revision": "1",
		})
		err = get(ctx, h.Shoot.Client, &corev1.ConfigMap{}, gitserver.AppConfigMapNamespace, gitserver.AppConfigMapName(gitserver.TargetBlue))
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the other target was deployed: %v", err)

		By("waiting for the health check to report what the controller reported")
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionTrue, "")
		expectLastAppliedRevision(ctx, h, commit)
	})

	It("deploys a new commit within the interval and keeps the last good objects when a commit does not render", func(ctx SpecContext) {
		h, _, logs := kluctlShoot(ctx, "kcommits", kluctlShootSpec{kluctl: map[string]any{
			"target":   gitserver.TargetBlue,
			"interval": "5s",
		}})
		repo := filepath.Join(gitRepoRoot, h.Project)

		By("committing a new revision")
		second, err := gitserver.CommitFile(repo, gitserver.AppConfigMapPath, []byte(gitserver.AppConfigMap("2")), "Revision 2")
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Eventually(func(g Gomega) {
			cm := &corev1.ConfigMap{}
			g.Expect(get(ctx, h.Shoot.Client, cm, gitserver.AppConfigMapNamespace, gitserver.AppConfigMapName(gitserver.TargetBlue))).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("revision", "2"))
		}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
		AddReportEntry("new commit deployed", fmt.Sprintf("%s after the commit, interval 5s", time.Since(start).Round(time.Millisecond)))
		expectLastAppliedRevision(ctx, h, second)

		By("committing a revision that does not render")
		broken := gitserver.AppConfigMap("3") + "  broken: \"{% if args.color %}\"\n"
		_, err = gitserver.CommitFile(repo, gitserver.AppConfigMapPath, []byte(broken), "Revision 3, broken")
		Expect(err).NotTo(HaveOccurred())
		// kluctl's error, as the health check hands it on; its Jinja2 cause follows the long path
		// of the template, beyond the condition's 400 characters.
		expectBootstrapReady(ctx, h, gardencorev1beta1.ConditionFalse, "(PrepareFailed): 1 error occurred:\n\t* failed rendering template")
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(kd, "status", "lastPrepareError")).To(And(ContainSubstring(gitserver.AppConfigMapPath), ContainSubstring("Unexpected end of template")))
		expectAppConfigMap(ctx, h, gitserver.TargetBlue, map[string]string{"revision": "2"})
		expectLastAppliedRevision(ctx, h, second)
	})
})

// Disabling in kluctl mode removes the bootstrap KluctlDeployment with delete: false, so the real
// kluctl controller finalizes it without deleting what it deployed.
var _ = Describe("Disabling the extension with the delivered kluctl controller", func() {
	It("keeps the deployed objects while the controller finalizes the KluctlDeployment", func(ctx SpecContext) {
		// The sandbox's extension leaves the bootstrap objects 5s after the request, for scenarios
		// that play a stopped controller; the real one may need longer on a loaded machine.
		cfg := sb.ExtensionConfig()
		cfg.Timeouts.BootstrapFinalizers.Duration = controllersTimeout
		restartExtension(ctx, sandbox.ExtensionSettings{Config: &cfg})
		h, _, logs := kluctlShoot(ctx, "kdisable", kluctlShootSpec{kluctl: map[string]any{"target": gitserver.TargetBlue}})
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(kd.GetFinalizers()).To(ContainElement(kluctlFinalizer))
		// The default, stated: a KluctlDeployment with delete: true would take the objects along.
		Expect(kd.Object["spec"]).To(HaveKeyWithValue("delete", false))

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		AddReportEntry("disable with the kluctl controller running", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))
		Eventually(h.Controllers).WithTimeout(shootTimeout).Should(BeEmpty(), logs)

		By("checking that the controller finalized the KluctlDeployment and kept the objects")
		_, err = kluctlDeployment(ctx, h)
		Expect(apierrors.IsNotFound(err) || meta.IsNoMatchError(err)).To(BeTrue(), "the KluctlDeployment is still there: %v\n%s", err, logs())
		expectAppConfigMap(ctx, h, gitserver.TargetBlue, map[string]string{"revision": "1"})
	})

	It("completes when the controller was stopped before", func(ctx SpecContext) {
		h, _, logs := kluctlShoot(ctx, "kdisstop", kluctlShootSpec{kluctl: map[string]any{"target": gitserver.TargetBlue}})

		By("stopping the controller: the operator pauses the ManagedResource and scales it to 0")
		mr, err := h.ManagedResource(ctx, constants.ManagedResourceControllers)
		Expect(err).NotTo(HaveOccurred())
		patch := client.MergeFrom(mr.DeepCopy())
		metav1.SetMetaDataAnnotation(&mr.ObjectMeta, resourcesv1alpha1.Ignore, "true")
		Expect(sb.Seed.Client.Patch(ctx, mr, patch)).To(Succeed())
		d := &appsv1.Deployment{}
		Expect(get(ctx, h.Shoot.Client, d, kluctlNamespace, "kluctl-controller")).To(Succeed())
		dPatch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To[int32](0)
		Expect(h.Shoot.Client.Patch(ctx, d, dPatch)).To(Succeed())
		Eventually(func() []string { return runningComponents(h) }).WithTimeout(shootTimeout).ShouldNot(ContainElement("kluctl"), logs)

		By("disabling the extension")
		start := time.Now()
		Expect(h.Delete(ctx, deleteTimeout)).To(Succeed(), logs)
		AddReportEntry("disable with the kluctl controller stopped", fmt.Sprintf("the Extension was deleted %s after the request", time.Since(start).Round(time.Millisecond)))

		By("checking that the objects stay and the KluctlDeployment was left to nobody")
		expectAppConfigMap(ctx, h, gitserver.TargetBlue, map[string]string{"revision": "1"})
		kd, err := kluctlDeployment(ctx, h)
		Expect(err).NotTo(HaveOccurred())
		Expect(kd.GetFinalizers()).To(ContainElement(kluctlFinalizer), "nobody processed the KluctlDeployment")
	})
})

// An age key delivered as shoot-flux-sops decrypts the SOPS-encrypted Secret of the repository.
var _ = Describe("SOPS decryption with the delivered kluctl controller running", func() {
	It("deploys an encrypted Secret decrypted with the age key of a Shoot resource", func(ctx SpecContext) {
		identity, err := age.GenerateX25519Identity()
		Expect(err).NotTo(HaveOccurred())
		files := gitserver.KluctlTargetsProject("1")
		files["app/secret.yaml"], err = gitserver.SOPSSecret("app-secret", gitserver.AppConfigMapNamespace, map[string]string{"password": "decrypted by kluctl"}, identity.Recipient().String())
		Expect(err).NotTo(HaveOccurred())
		Expect(files["app/secret.yaml"]).NotTo(ContainSubstring("decrypted by kluctl"))

		project := "kluctlsops"
		key := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: sandbox.ProjectNamespace(project), Name: "sops-key"},
			Data:       map[string][]byte{"identity.agekey": []byte(identity.String() + "\n")},
		}
		DeferCleanup(func(ctx SpecContext) error { return client.IgnoreNotFound(sb.Garden.Client.Delete(ctx, key)) })
		// The Secret goes into the project namespace kluctlShoot creates, before the shoot references it.
		h, _, logs := kluctlShoot(ctx, project, kluctlShootSpec{
			files:  files,
			kluctl: map[string]any{"target": gitserver.TargetBlue, "decryption": map[string]any{"secretResourceName": "sops"}},
			resources: []gardencorev1beta1.NamedResourceReference{{
				Name:        "sops",
				ResourceRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: key.Name},
			}},
			beforeShoot: func() { Expect(sb.Garden.Client.Create(ctx, key)).To(Succeed()) },
		})

		delivered := &corev1.Secret{}
		Expect(get(ctx, h.Shoot.Client, delivered, kluctlNamespace, constants.DecryptionSecretName)).To(Succeed())
		Expect(delivered.Data).To(HaveKeyWithValue("identity.agekey", key.Data["identity.agekey"]))
		secret := &corev1.Secret{}
		Expect(get(ctx, h.Shoot.Client, secret, gitserver.AppConfigMapNamespace, "app-secret")).To(Succeed(), logs)
		Expect(secret.Data).To(HaveKeyWithValue("password", []byte("decrypted by kluctl")))
	})
})

// A rotated deploy key reaches the kluctl controller through the delivered credentials: the user
// replaces the registered key, and the next clone succeeds with the new one only.
var _ = Describe("Deploy key rotation with the delivered kluctl controller running", func() {
	It("clones with the new key, which replaced the old one at the git server", func(ctx SpecContext) {
		server, err := gitserver.Start(gitserver.Options{RepoRoot: gitRepoRoot})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		h, _, logs := kluctlShoot(ctx, "krotate", kluctlShootSpec{server: server, kluctl: map[string]any{"target": gitserver.TargetBlue, "interval": "5s"}})
		before, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		old, err := credentials(ctx, h, kluctlNamespace)
		Expect(err).NotTo(HaveOccurred())

		By("rotating the key and registering the new one in place of the old one")
		rotateDeployKey(ctx, h, before.DeployKey)
		after, err := h.ProviderStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.PublicKey).NotTo(Equal(before.PublicKey))
		Expect(server.SetAuthorizedKeys([]string{after.PublicKey})).To(Succeed())
		Eventually(func(g Gomega) {
			secret, err := credentials(ctx, h, kluctlNamespace)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(secret.Data[constants.SecretKeyIdentity]).NotTo(Equal(old.Data[constants.SecretKeyIdentity]))
		}).WithTimeout(shootTimeout).Should(Succeed())
		Expect(server.Authenticate(old.Data[constants.SecretKeyIdentity])).To(MatchError(ContainSubstring("unable to authenticate")), "the old key is refused")

		By("committing a new revision, which only the new key can fetch")
		second, err := gitserver.CommitFile(filepath.Join(gitRepoRoot, h.Project), gitserver.AppConfigMapPath, []byte(gitserver.AppConfigMap("2")), "Revision 2")
		Expect(err).NotTo(HaveOccurred())
		expectKluctlDeployed(ctx, h, logs, second)
		expectAppConfigMap(ctx, h, gitserver.TargetBlue, map[string]string{"revision": "2"})
	})
})

// Migration and restoration hand the ManagedResources over without touching the shoot: the
// running kluctl controller and what it deployed stay as they are. Hibernation and wake-up
// reconcile around it.
var _ = Describe("Shoot operations with the delivered kluctl controller running", func() {
	It("migrates and restores without restarting the controller, and hibernates and wakes up", func(ctx SpecContext) {
		h, commit, logs := kluctlShoot(ctx, "kops", kluctlShootSpec{kluctl: map[string]any{"target": gitserver.TargetBlue}})
		uids := func() map[string]types.UID {
			GinkgoHelper()
			kd, err := kluctlDeployment(ctx, h)
			Expect(err).NotTo(HaveOccurred())
			d := &appsv1.Deployment{}
			Expect(get(ctx, h.Shoot.Client, d, kluctlNamespace, "kluctl-controller")).To(Succeed())
			cm := &corev1.ConfigMap{}
			Expect(get(ctx, h.Shoot.Client, cm, gitserver.AppConfigMapNamespace, gitserver.AppConfigMapName(gitserver.TargetBlue))).To(Succeed())
			return map[string]types.UID{"KluctlDeployment": kd.GetUID(), "Deployment": d.UID, "ConfigMap": cm.UID}
		}
		before, processes := uids(), h.Controllers()
		expectMigrateAndRestoreKeep(ctx, h, uids, logs)
		// The in-process health check does not resume after a migration of the same Extension
		// (on a new seed, a new one starts), so the controller's own status tells.
		expectKluctlDeployed(ctx, h, logs, commit)

		By("hibernating and waking up")
		Expect(h.SetHibernated(ctx, true)).To(Succeed())
		_, err := h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.SetHibernated(ctx, false)).To(Succeed())
		_, err = h.WaitSucceeded(ctx, reconcileTimeout)
		Expect(err).NotTo(HaveOccurred())
		for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
			Expect(appliedManagedResource(ctx, h, name)).To(Succeed())
		}
		Expect(uids()).To(Equal(before))
		Expect(h.Controllers()).To(Equal(processes), "no controller was stopped, replaced or restarted\n%s", logs())
		expectKluctlDeployed(ctx, h, logs, commit)
	})
})

// kluctlShootSpec describes the shoot and repository of kluctlShoot.
type kluctlShootSpec struct {
	// server serves the repository; nil means the suite's. It must serve gitRepoRoot.
	server *gitserver.Server
	// files are the repository's; nil means gitserver.KluctlTargetsProject("1").
	files map[string]string
	// kluctl are the bootstrap.kluctl settings; retryInterval defaults to kluctlRetryInterval.
	kluctl map[string]any
	// resources are the Shoot's spec.resources.
	resources []gardencorev1beta1.NamedResourceReference
	// beforeShoot, if set, runs after the project was created and before the shoot, e.g. to
	// create the project Secrets of resources.
	beforeShoot func()
}

// kluctlShoot creates a repository named after the project and a shoot in kluctl mode that runs
// the delivered controllers and deploys it; it waits until the kluctl controller deployed the
// first commit. It returns the shoot, the commit and the controllers' logs for failure messages.
func kluctlShoot(ctx context.Context, project string, spec kluctlShootSpec) (*sandbox.ShootHandle, string, func() string) {
	GinkgoHelper()
	server := cmp.Or(spec.server, git)
	files := spec.files
	if files == nil {
		files = gitserver.KluctlTargetsProject("1")
	}
	commit, err := gitserver.NewRepo(filepath.Join(gitRepoRoot, project), files, "Add the kluctl project")
	Expect(err).NotTo(HaveOccurred())
	newProject(ctx, project)
	if spec.beforeShoot != nil {
		spec.beforeShoot()
	}
	kluctl := map[string]any{"retryInterval": kluctlRetryInterval}
	maps.Copy(kluctl, spec.kluctl)
	h := createShootSucceeded(ctx, sandbox.ShootSpec{
		Project:        project,
		Name:           "one",
		RunControllers: true,
		Resources:      spec.resources,
		ProviderConfig: mustJSON(map[string]any{
			"source": map[string]any{
				"url":        server.URL(project),
				"ref":        map[string]any{"branch": gitserver.Branch},
				"knownHosts": server.KnownHostsLine(),
			},
			"bootstrap": map[string]any{"mode": "kluctl", "kluctl": kluctl},
		}),
	})
	Expect(server.AddAuthorizedKey(authorizedKey(ctx, h))).To(Succeed())
	logs := func() string { return "controller logs:\n" + h.ControllerLogs() }

	By("waiting for the delivered controllers to become available")
	expectDeploymentsAvailable(ctx, h, logs, map[types.NamespacedName]string{
		{Namespace: fluxNamespace, Name: "source-controller"}:   "source-controller",
		{Namespace: kluctlNamespace, Name: "kluctl-controller"}: "kluctl",
	})

	By("waiting for the kluctl controller to deploy the commit")
	expectKluctlDeployed(ctx, h, logs, commit)
	return h, commit, logs
}

// expectKluctlDeployed waits until the bootstrap KluctlDeployment is Ready with commit deployed.
func expectKluctlDeployed(ctx context.Context, h *sandbox.ShootHandle, logs func() string, commit string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		ready := readyConditionOf(g, ctx, h, kluctlDeploymentGVK, kluctlNamespace, constants.BootstrapName)
		g.Expect(ready["status"]).To(Equal("True"), "Ready condition of the KluctlDeployment: %v", ready)
		kd, err := kluctlDeployment(ctx, h)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nestedString(kd, "status", "lastDeployResult", "gitInfo", "commit")).To(Equal(commit))
	}).WithTimeout(gitopsTimeout).Should(Succeed(), logs)
}

// expectAppConfigMap checks the data of the ConfigMap gitserver.KluctlTargetsProject deploys for
// a color.
func expectAppConfigMap(ctx context.Context, h *sandbox.ShootHandle, color string, data map[string]string) {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Expect(get(ctx, h.Shoot.Client, cm, gitserver.AppConfigMapNamespace, gitserver.AppConfigMapName(color))).To(Succeed())
	for k, v := range data {
		Expect(cm.Data).To(HaveKeyWithValue(k, v))
	}
}
