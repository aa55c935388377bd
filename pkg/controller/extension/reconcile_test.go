// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var _ = Describe("Actuator", func() {
	setUpActuator()

	Describe("#Reconcile", func() {
		It("deploys only the controllers when no source is configured", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())

			docs := managedResourceObjects(seed, constants.ManagedResourceControllers)
			Expect(strings.Join(docs, "")).To(And(ContainSubstring("name: source-controller"), ContainSubstring("kluctldeployments.gitops.kluctl.io")))
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())

			status := providerStatus(ex)
			Expect(status.Message).To(ContainSubstring("No source configured"))
			Expect(status.ProjectConfigHash).To(BeEmpty(), "the project has no ConfigMap")
			// The defaults are minors; the status names the releases they selected.
			Expect(status.FluxVersion).To(Equal(manifests.NewestFluxVersion()))
			Expect(status.KluctlVersion).To(Equal(manifests.NewestKluctlVersion()))
		})

		It("reports the release a selector chose and the image of every installed controller", func() {
			oldest := manifests.FluxVersions()[0]
			cfg.Registry = "my.mirror:5000/cache"
			build(nil)
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"` + oldest + `","components":["source-controller","helm-controller"]}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())

			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal(oldest))
			Expect(status.Images).To(HaveLen(3))
			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceControllers), "")
			for _, component := range []string{"source-controller", "helm-controller", "kluctl-controller"} {
				name := "flux-" + component
				release := oldest
				if component == "kluctl-controller" {
					name, release = fluximagevector.KluctlController, status.KluctlVersion
				}
				image, err := fluximagevector.ImageVector().FindImage(name, gardenerimagevector.TargetVersion(release))
				Expect(err).NotTo(HaveOccurred())
				want := "my.mirror:5000/cache/" + strings.SplitN(image.String(), "/", 2)[1]
				Expect(status.Images).To(HaveKeyWithValue(component, want))
				Expect(docs).To(ContainSubstring("image: "+want), "the reported image of %s is the deployed one", component)
			}
		})

		It("bootstraps a public repository from the legacy ConfigMap keys", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"fluxVersion":      "2.9.5",
				"repositoryUrl":    "https://git.example.com/org/repo.git",
				"repositoryBranch": "develop",
				"repositoryType":   "public",
			})})
			Expect(reconcile()).To(Succeed())

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(ContainSubstring("kind: KluctlDeployment"))
			Expect(docs).To(ContainSubstring("url: https://git.example.com/org/repo.git"))
			Expect(docs).To(ContainSubstring("branch: develop"))
			Expect(docs).NotTo(ContainSubstring(constants.GitCredentialsSecretName))
			Expect(scans).To(BeZero())

			status := providerStatus(ex)
			Expect(status.Repository).To(Equal("https://git.example.com/org/repo.git"))
			Expect(status.Ref).To(Equal("branch:develop"))
			cm := &corev1.ConfigMap{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.ProjectConfigMapName}, cm)).To(Succeed())
			Expect(status.ProjectConfigHash).To(Equal(fluxconfig.ConfigMapHash(cm)))
			Expect(status.PublicKey).To(BeEmpty())
		})

		It("delivers the shoot's identity and follows changes of the Cluster", func() {
			theShoot.Spec.Kubernetes.Version = "1.33.2"
			theShoot.Spec.Region = "eu-1"
			theShoot.Status.TechnicalID = seedNamespace
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "---\n")
			Expect(docs).To(And(ContainSubstring("name: shoot-info"), ContainSubstring("SHOOT_PROJECT: foo"), ContainSubstring("SHOOT_NAME: bar"),
				ContainSubstring("SHOOT_REGION: eu-1"), ContainSubstring("SHOOT_KUBERNETES_VERSION: 1.33.2")))
			Expect(docs).To(ContainSubstring("kubernetesVersion: 1.33.2"), "the kluctl argument shoot")

			By("reconciling after a Kubernetes upgrade")
			theShoot.Spec.Kubernetes.Version = "1.34.0"
			cluster := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, cluster)).To(Succeed())
			cluster.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, cluster)).To(Succeed())
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(rec.reset()).To(ContainElement(HavePrefix("create *v1.Secret managedresource-" + constants.ManagedResourceBootstrap)))
			docs = strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "---\n")
			Expect(docs).To(And(ContainSubstring("SHOOT_KUBERNETES_VERSION: 1.34.0"), ContainSubstring("kubernetesVersion: 1.34.0")))
			Expect(docs).NotTo(ContainSubstring("1.33.2"))
		})

		It("delivers no identity to a shoot that opts out", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl": "https://git.example.com/org/repo.git",
				"config.yaml":   "bootstrap:\n  shootInfo: false\n",
			})})
			Expect(reconcile()).To(Succeed())
			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "---\n")
			Expect(docs).To(ContainSubstring("kind: KluctlDeployment"))
			Expect(docs).NotTo(Or(ContainSubstring("shoot-info"), ContainSubstring("SHOOT_"), ContainSubstring("args:")))
			Expect(docs).To(ContainSubstring("name: shoot-flux-status"), "the status is no identity")
		})

		It("lets the providerConfig override the project ConfigMap field by field", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "https://git.example.com/org/repo.git",
				"repositoryType": "public",
			})})
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"ref":{"tag":"v1.2.3"},"path":"clusters/bar"},"flux":{"components":["source-controller","kustomize-controller"]},"bootstrap":{"kluctl":{"target":"prod","args":{"env":"prod"}}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(And(ContainSubstring("tag: v1.2.3"), ContainSubstring("path: clusters/bar"), ContainSubstring("target: prod"), ContainSubstring("env: prod")))
			Expect(docs).To(ContainSubstring("url: https://git.example.com/org/repo.git"))
			Expect(docs).NotTo(ContainSubstring("branch:"))
			Expect(strings.Join(managedResourceObjects(seed, constants.ManagedResourceControllers), "")).To(ContainSubstring("name: kustomize-controller"))
		})

		It("delivers a GitRepository and a Kustomization that orphans workloads in flux mode", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			ex.Spec.ProviderConfig = providerConfig(`{"bootstrap":{"mode":"flux","flux":{"path":"./deploy","targetNamespace":"apps"}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(And(ContainSubstring("kind: GitRepository"), ContainSubstring("kind: Kustomization"), ContainSubstring("deletionPolicy: Orphan"), ContainSubstring("targetNamespace: apps")))
			Expect(docs).NotTo(ContainSubstring("KluctlDeployment"))
		})

		It("uses user credentials from a referenced resource", func() {
			theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret")}})
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(And(ContainSubstring(b64([]byte("bot"))), ContainSubstring(b64([]byte("s3cret")))))
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, &corev1.Secret{})).To(BeNotFoundError())
		})

		DescribeTable("takes the OCI registry credentials of a referenced resource",
			func(data map[string][]byte, delivered []string, message string) {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "registry", ResourceRef: autoscalingRef("my-registry")}}
				build(nil, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-registry", Namespace: seedNamespace}, Data: data})
				ex.Spec.ProviderConfig = providerConfig(`{"source":{"oci":{"url":"oci://ghcr.io/org/fleet","secretResourceName":"registry"}}}`)
				Expect(seed.Update(ctx, ex)).To(Succeed())
				err := reconcile()
				if message != "" {
					Expect(err).To(MatchError(ContainSubstring(message)))
					Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
					return
				}
				Expect(err).NotTo(HaveOccurred())
				Expect(providerStatus(ex).Repository).To(Equal("oci://ghcr.io/org/fleet"))
				Expect(providerStatus(ex).Ref).To(Equal("tag:latest"))
				docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
				Expect(docs).To(ContainSubstring("name: " + constants.OCICredentialsSecretName))
				for _, value := range delivered {
					Expect(docs).To(ContainSubstring(b64([]byte(value))))
				}
				Expect(docs).NotTo(ContainSubstring(b64([]byte("other"))), "keys other than the credentials stay in the seed")
			},
			Entry("username and password", map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret"), "other": []byte("other")}, []string{"bot", "s3cret"}, ""),
			Entry("a token", map[string][]byte{"token": []byte("t0ken"), "other": []byte("other")}, []string{"t0ken"}, ""),
			Entry("both", map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret"), "token": []byte("t0ken")}, nil,
				`source.oci.secretResourceName: Secret must contain either "username" and "password" or "token", not both`),
			Entry("neither", map[string][]byte{"identity": []byte("KEY")}, nil,
				`source.oci.secretResourceName: Secret must contain non-empty "username" and "password", or "token"`),
		)

		It("disables host key checking only when the operator allows it", func() {
			cfg.AllowInsecureHostKeys = true
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})})
			act.keys.Scanner = func(context.Context, string, time.Duration) ([]byte, error) {
				return nil, errors.New("connection refused")
			}
			Expect(reconcile()).To(Succeed())
			Expect(strings.Join(managedResourceObjects(seed, constants.ManagedResourceControllers), "")).To(ContainSubstring("KLUCTL_SSH_DISABLE_STRICT_HOST_KEY_CHECKING"))
			Expect(providerStatus(ex).Warnings).To(ContainElement(ContainSubstring("not verified")))
		})

		It("does not write anything when nothing changed", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})})
			Expect(reconcile()).To(Succeed())
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(rec.reset()).To(BeEmpty())
		})

		It("keeps the revision the health check recorded while the bootstrap stays, and drops it with the bootstrap", func() {
			const applied = "main@sha1:0123456789abcdef0123456789abcdef01234567"
			cm := legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})
			build([]client.Object{cm})
			Expect(reconcile()).To(Succeed())
			Expect(seed.Status().Patch(ctx, ex, client.RawPatch(types.MergePatchType,
				[]byte(`{"status":{"providerStatus":{"lastAppliedRevision":"`+applied+`"}}}`)))).To(Succeed())

			By("a reconcile that changes other fields of the status")
			cm.Data["repositoryBranch"] = "release"
			Expect(garden.Update(ctx, cm)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).Ref).To(Equal("branch:release"))
			Expect(providerStatus(ex).LastAppliedRevision).To(Equal(applied))

			By("removing the source, and with it the bootstrap")
			Expect(garden.Delete(ctx, cm)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).Repository).To(BeEmpty())
			Expect(providerStatus(ex).LastAppliedRevision).To(BeEmpty())
		})

		It("does not wait for a hibernated shoot", func() {
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			rec.noApply = true
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
		})

		// A project admin's loop of ConfigMap edits must not pile up ManagedResource Secrets in the
		// seed, also not while the shoot is hibernated and nothing collects them.
		It("keeps one Secret per ManagedResource across content changes, hibernated or not", func() {
			cm := legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})
			build([]client.Object{cm})
			secretNames := func() []string {
				GinkgoHelper()
				list := &corev1.SecretList{}
				Expect(seed.List(ctx, list, client.InNamespace(seedNamespace))).To(Succeed())
				var names []string
				for _, s := range list.Items {
					if strings.HasPrefix(s.Name, "managedresource-") {
						names = append(names, s.Name)
					}
				}
				return names
			}
			referenced := func() []string {
				GinkgoHelper()
				var names []string
				for _, name := range []string{constants.ManagedResourceControllers, constants.ManagedResourceBootstrap} {
					mr := &resourcesv1alpha1.ManagedResource{}
					Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
					for _, ref := range mr.Spec.SecretRefs {
						names = append(names, ref.Name)
					}
				}
				return names
			}
			change := func(branch string) {
				GinkgoHelper()
				cm.Data["repositoryBranch"] = branch
				Expect(garden.Update(ctx, cm)).To(Succeed())
				Expect(reconcile()).To(Succeed())
				Expect(secretNames()).To(ConsistOf(referenced()))
			}

			Expect(reconcile()).To(Succeed())
			for i := range 3 {
				change(fmt.Sprintf("awake-%d", i))
			}

			By("changing the content while every apply fails in the shoot")
			DeferCleanup(func(grace time.Duration) { managedresource.ApplyFailedGrace = grace }, managedresource.ApplyFailedGrace)
			managedresource.ApplyFailedGrace = 0
			rec.failApply = true
			for i := range 3 {
				cm.Data["repositoryBranch"] = fmt.Sprintf("failing-%d", i)
				Expect(garden.Update(ctx, cm)).To(Succeed())
				err := reconcile()
				Expect(err).To(MatchError(ContainSubstring("admission webhook denied the request")))
				var requeue *reconcilerutils.RequeueAfterError
				Expect(errors.As(err, &requeue)).To(BeTrue(), "the retry waits instead of following within milliseconds: %v", err)
				Expect(requeue.RequeueAfter).To(Equal(ApplyFailedRetry))
				Expect(requeue.Cause).To(MatchError(ContainSubstring("admission webhook denied the request")), "lastError shows the resource manager's message")
				Expect(secretNames()).To(ConsistOf(referenced()), "a failed apply leaves no Secret behind")
			}
			rec.failApply = false

			By("hibernating the shoot")
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			cluster := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, cluster)).To(Succeed())
			cluster.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, cluster)).To(Succeed())
			rec.noApply = true
			for i := range 3 {
				change(fmt.Sprintf("hibernated-%d", i))
			}
		})

		It("fails with a timeout when the resource manager does not apply the ManagedResource", func() {
			cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 50 * time.Millisecond}
			rec.noApply = true
			build(nil)
			Expect(reconcile()).To(MatchError(ContainSubstring("was not applied within 50ms")))
		})

		DescribeTable("names the legacy ConfigMap key of a problem as a configuration problem",
			func(data map[string]string, message string) {
				build([]client.Object{legacyConfigMap(data)})
				err := reconcile()
				Expect(err).To(MatchError(HavePrefix(message)))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(rec.reset()).To(BeEmpty())
			},
			Entry("a repository type without URL", map[string]string{"repositoryType": "private"},
				"ConfigMap garden-foo/flux-config: repositoryUrl: Required value: repositoryType set but no configuration layer sets the repository URL"),
			Entry("a private https repository", map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git", "repositoryType": "private"},
				`ConfigMap garden-foo/flux-config: repositoryType: Invalid value: "private": a private https repository needs username/password credentials from a Shoot resource in source.secretResourceName; generated deploy keys only work with ssh URLs`),
			Entry("an unsupported version", map[string]string{"fluxVersion": "0.29.5"},
				`ConfigMap garden-foo/flux-config: fluxVersion: Unsupported value: "0.29.5": supported values: "`),
		)

		DescribeTable("keeps the last good deployment on bad input",
			func(providerCfg, message string) {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "present", ResourceRef: autoscalingRef("present")}}
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
				Expect(reconcile()).To(Succeed())
				before := [2][]string{managedResourceObjects(seed, constants.ManagedResourceControllers), managedResourceObjects(seed, constants.ManagedResourceBootstrap)}
				statusBefore := string(ex.Status.ProviderStatus.Raw)
				rec.reset()

				ex.Spec.ProviderConfig = providerConfig(providerCfg)
				Expect(seed.Update(ctx, ex)).To(Succeed())
				rec.reset()
				err := reconcile()
				Expect(err).To(MatchError(ContainSubstring(message)))
				Expect(rec.reset()).To(BeEmpty())
				Expect(managedResourceObjects(seed, constants.ManagedResourceControllers)).To(Equal(before[0]))
				Expect(managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(before[1]))
				Expect(string(ex.Status.ProviderStatus.Raw)).To(Equal(statusBefore))
			},
			Entry("invalid URL", `{"source":{"url":"ftp://git.example.com/repo"}}`, "Extension providerConfig: source.url"),
			Entry("unknown field", `{"source":{"uri":"x"}}`, `Extension providerConfig: source.uri: Forbidden: unknown field`),
			Entry("unsupported version", `{"flux":{"version":"v0.29.5"}}`, "v2.9.5"),
			Entry("broken args", `{"bootstrap":{"kluctl":{"args":["a"]}}}`, "bootstrap.kluctl.args"),
			Entry("missing referenced resource", `{"source":{"secretResourceName":"absent"}}`, `source.secretResourceName: Shoot garden-foo/bar has no resource "absent"`),
			Entry("referenced secret not copied", `{"source":{"secretResourceName":"present"}}`, `Secret "present" referenced by resource "present" was not found`),
			Entry("missing OCI credentials resource", `{"source":{"oci":{"url":"oci://ghcr.io/org/fleet","secretResourceName":"absent"}}}`, `source.oci.secretResourceName: Shoot garden-foo/bar has no resource "absent"`),
			Entry("OCI credentials secret not copied", `{"source":{"oci":{"url":"oci://ghcr.io/org/fleet","secretResourceName":"present"}}}`, `source.oci.secretResourceName: Secret "present" referenced by resource "present" was not found`),
		)

		Describe("versions the shoot runs", func() {
			newestFlux := manifests.NewestFluxVersion()
			newestKluctl := manifests.NewestKluctlVersion()

			// installed records the providerStatus of a reconcile that installed these releases.
			installed := func(flux, kluctl string) {
				ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
				raw, err := helper.EncodeStatus(&fluxv1alpha1.FluxStatus{FluxVersion: flux, KluctlVersion: kluctl})
				ExpectWithOffset(1, err).NotTo(HaveOccurred())
				ex.Status.ProviderStatus = raw
				ExpectWithOffset(1, seed.Status().Update(ctx, ex)).To(Succeed())
			}

			It("refuses an older minor than the shoot runs, writing nothing", func() {
				build(nil)
				installed("v2.99.0", newestKluctl)
				rec.reset()
				err := reconcile()
				Expect(err).To(MatchError("flux.version: selects Flux " + newestFlux + ", but the shoot runs v2.99.0 (providerStatus.fluxVersion); " +
					"downgrading Flux to an older minor is not supported, as the older CRDs would drop what the newer release stored in the shoot's objects: select v2.99 or a newer release"))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(rec.reset()).To(BeEmpty())
				Expect(providerStatus(ex).FluxVersion).To(Equal("v2.99.0"))
			})

			It("refuses an older kluctl minor while kluctl is installed", func() {
				build(nil)
				installed(newestFlux, "v2.99.0")
				Expect(reconcile()).To(MatchError(HavePrefix("kluctl.version: selects kluctl " + newestKluctl + ", but the shoot runs v2.99.0 (providerStatus.kluctlVersion)")))

				ex.Spec.ProviderConfig = providerConfig(`{"kluctl":{"enabled":false}}`)
				Expect(seed.Update(ctx, ex)).To(Succeed())
				Expect(reconcile()).To(Succeed())
			})

			It("accepts an older patch of the installed minor, as a rolled-back extension installs it", func() {
				build(nil)
				major, minor, patch := semverParts(newestFlux)
				installed(fmt.Sprintf("v%d.%d.%d", major, minor, patch+1), newestKluctl)
				Expect(reconcile()).To(Succeed())
				Expect(providerStatus(ex).FluxVersion).To(Equal(newestFlux))
			})

			It("upgrades from an older minor", func() {
				build(nil)
				installed("v2.0.0", "v2.0.0")
				Expect(reconcile()).To(Succeed())
				Expect(providerStatus(ex).FluxVersion).To(Equal(newestFlux))
				Expect(providerStatus(ex).KluctlVersion).To(Equal(newestKluctl))
			})
		})
	})
})
