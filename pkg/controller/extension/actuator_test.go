// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	reconcilerutils "github.com/gardener/gardener/pkg/controllerutils/reconciler"
	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	testutils "github.com/gardener/gardener/pkg/utils/test"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxinstall "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/monitoring"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/deploykey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/craftedkey"
)

const (
	seedNamespace    = "shoot--foo--bar"
	projectNamespace = "garden-foo"
	hostKeyLine      = "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
)

// recorder is a fake gardener-resource-manager and an API request log for the seed client.
type recorder struct {
	mu      sync.Mutex
	writes  []string
	noApply bool
	// failApply makes the resource manager report an apply failure of every write.
	failApply bool
	failures  map[string]error
}

func (r *recorder) record(verb string, obj client.Object) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%s %T %s", verb, obj, obj.GetName())
	r.writes = append(r.writes, key)
	if err, ok := r.failures[verb+" "+obj.GetName()]; ok {
		return err
	}
	return nil
}

func (r *recorder) reset() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

func (r *recorder) apply(ctx context.Context, c client.WithWatch, obj client.Object) error {
	mr, ok := obj.(*resourcesv1alpha1.ManagedResource)
	if !ok || r.noApply || mr.DeletionTimestamp != nil {
		return nil
	}
	// The resource manager writes after the write, which keeps the API server's answer to it.
	mr = mr.DeepCopy()
	if mr.Annotations[resourcesv1alpha1.Ignore] == "true" {
		// Like gardener-resource-manager: nothing applied, the last observed generation stays.
		mr.Status.Conditions = []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesApplied, Status: gardencorev1beta1.ConditionTrue, Reason: resourcesv1alpha1.ConditionManagedResourceIgnored}}
		return c.Update(ctx, mr)
	}
	if r.failApply {
		mr.Status.Conditions = []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesApplied, Status: gardencorev1beta1.ConditionFalse,
			Reason: resourcesv1alpha1.ConditionApplyFailed, Message: "admission webhook denied the request", LastUpdateTime: metav1.Now()}}
		return c.Update(ctx, mr)
	}
	mr.Status.ObservedGeneration = mr.Generation
	mr.Status.Conditions = []gardencorev1beta1.Condition{{Type: resourcesv1alpha1.ResourcesApplied, Status: gardencorev1beta1.ConditionTrue, Reason: resourcesv1alpha1.ConditionApplySucceeded}}
	return c.Update(ctx, mr)
}

func newSeedClient(rec *recorder, objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	Expect(kubernetes.AddSeedSchemeToScheme(scheme)).To(Succeed())
	Expect(fluxinstall.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().
		WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&extensionsv1alpha1.Extension{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := rec.record("create", obj); err != nil {
					return err
				}
				if err := c.Create(ctx, obj, opts...); err != nil {
					return err
				}
				return rec.apply(ctx, c, obj)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := rec.record("update", obj); err != nil {
					return err
				}
				if err := c.Update(ctx, obj, opts...); err != nil {
					return err
				}
				return rec.apply(ctx, c, obj)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if err := rec.record("patch", obj); err != nil {
					return err
				}
				if err := c.Patch(ctx, obj, patch, opts...); err != nil {
					return err
				}
				return rec.apply(ctx, c, obj)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := rec.record("delete", obj); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := rec.record("patch-"+sub, obj); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).
		Build()
}

func clusterObject(shoot *gardencorev1beta1.Shoot) *extensionsv1alpha1.Cluster {
	raw := func(o any) runtime.RawExtension {
		b, err := json.Marshal(o)
		Expect(err).NotTo(HaveOccurred())
		return runtime.RawExtension{Raw: b}
	}
	return &extensionsv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: seedNamespace},
		Spec: extensionsv1alpha1.ClusterSpec{
			Shoot:        raw(shoot),
			CloudProfile: raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"}),
			Seed:         new(raw(map[string]string{"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Seed"})),
		},
	}
}

func shoot() *gardencorev1beta1.Shoot {
	return &gardencorev1beta1.Shoot{
		TypeMeta:   metav1.TypeMeta{APIVersion: "core.gardener.cloud/v1beta1", Kind: "Shoot"},
		ObjectMeta: metav1.ObjectMeta{Name: "bar", Namespace: projectNamespace},
		Spec:       gardencorev1beta1.ShootSpec{Extensions: []gardencorev1beta1.Extension{{Type: constants.ExtensionType}}},
	}
}

func legacyConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: projectNamespace}, Data: data}
}

func providerConfig(s string) *runtime.RawExtension {
	return &runtime.RawExtension{Raw: []byte(s)}
}

func managedResourceObjects(c client.Client, name string) []string {
	mr := &resourcesv1alpha1.ManagedResource{}
	ExpectWithOffset(1, c.Get(context.Background(), client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
	secret := &corev1.Secret{}
	ExpectWithOffset(1, c.Get(context.Background(), client.ObjectKey{Namespace: seedNamespace, Name: mr.Spec.SecretRefs[0].Name}, secret)).To(Succeed())
	docs, err := testutils.ExtractManifestsFromManagedResourceData(secret.Data)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return docs
}

func providerStatus(ex *extensionsv1alpha1.Extension) *fluxv1alpha1.FluxStatus {
	ExpectWithOffset(1, ex.Status.ProviderStatus).NotTo(BeNil())
	status, err := helper.DecodeStatus(ex.Status.ProviderStatus)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return status
}

var _ = Describe("Actuator", func() {
	var (
		ctx      context.Context
		rec      *recorder
		seed     client.Client
		garden   client.Client
		ex       *extensionsv1alpha1.Extension
		cfg      config.ControllerConfiguration
		act      *actuator
		theShoot *gardencorev1beta1.Shoot
		scans    int
		// eventRecorder keeps the Extension's events.
		eventRecorder *events.FakeRecorder
	)

	build := func(gardenObjs []client.Object, seedObjs ...client.Object) {
		seed = newSeedClient(rec, append([]client.Object{clusterObject(theShoot), ex}, seedObjs...)...)
		garden = fake.NewClientBuilder().WithObjects(gardenObjs...).Build()
		act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)
		act.keys.Scanner = func(_ context.Context, hostPort string, _ time.Duration) ([]byte, error) {
			scans++
			if hostPort != "git.example.com:22" {
				return nil, fmt.Errorf("unexpected scan of %s", hostPort)
			}
			return []byte(hostKeyLine), nil
		}
	}

	reconcile := func() error {
		ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		return act.Reconcile(ctx, logr.Discard(), ex)
	}

	BeforeEach(func() {
		ctx = context.Background()
		rec = &recorder{}
		eventRecorder = events.NewFakeRecorder(100)
		defaults, err := loader.Defaults()
		Expect(err).NotTo(HaveOccurred())
		cfg = *defaults
		cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 5 * time.Second}
		cfg.Timeouts.Deletion = metav1.Duration{Duration: 5 * time.Second}
		theShoot = shoot()
		scans = 0
		ex = &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "shoot-flux", Namespace: seedNamespace},
			Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ExtensionType}},
		}
		DeferCleanup(func(interval time.Duration) { managedresource.PollInterval = interval }, managedresource.PollInterval)
		managedresource.PollInterval = 5 * time.Millisecond
	})

	Describe("the Kubernetes ranges of the Flux releases", func() {
		// The embedded Flux releases are v2.7.5 (Kubernetes 1.32 to 1.34) and v2.9.5 (1.34.1 to 1.36).
		It("installs the newest release in range on the first installation, with a warning", func() {
			theShoot.Spec.Kubernetes.Version = "1.33.4"
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.KubernetesVersion).To(Equal("1.33.4"))
			Expect(status.Warnings).To(ContainElement("installed Flux v2.7.5 instead: the selected Flux v2.9.5, which supports Kubernetes 1.34.1 to 1.36, " +
				"not the shoot's 1.33.4; select flux.version v2.7, which supports it"))
		})

		It("fails the first installation when no release supports the shoot's Kubernetes version, naming the ranges", func() {
			theShoot.Spec.Kubernetes.Version = "1.31.2"
			build(nil)
			err := reconcile()
			Expect(err).To(MatchError("flux.version: no embedded Flux release supports the shoot's Kubernetes 1.31.2 (v2.7.5: Kubernetes 1.32 to 1.34, " +
				"v2.9.5: Kubernetes 1.34.1 to 1.36); select a Kubernetes version in one of the ranges"))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(rec.reset()).To(BeEmpty(), "nothing is written")
		})

		It("keeps the installed release when the selection leaves the shoot's range, with a warning naming the range and the fix", func() {
			theShoot.Spec.Kubernetes.Version = "1.34.2"
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.7"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.7.5"))

			By("a Kubernetes upgrade out of v2.7's range")
			theShoot.Spec.Kubernetes.Version = "1.35.1"
			cluster := clusterObject(theShoot)
			existing := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(cluster), existing)).To(Succeed())
			existing.Spec.Shoot = cluster.Spec.Shoot
			Expect(seed.Update(ctx, existing)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.KubernetesVersion).To(Equal("1.35.1"))
			Expect(status.Warnings).To(ContainElement("keeping Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, not the shoot's 1.35.1; " +
				"select flux.version v2.9, which supports it"))

			By("a selection of a release that supports it")
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Warnings).To(BeEmpty())

			By("a selection out of range again")
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.7"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Warnings).To(ContainElement("keeping Flux v2.9.5: the selected Flux v2.7.5, which supports Kubernetes 1.32 to 1.34, " +
				"not the shoot's 1.35.1; select flux.version v2.9, which supports it"))
		})

		It("shows the native equivalent of stackit's providerConfig in the providerStatus", func() {
			theShoot.Spec.Kubernetes.Version = "1.35.1"
			ex.Spec.ProviderConfig = providerConfig(`{"apiVersion":"flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"v2.9.5"}}`)
			build(nil)
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Management).To(Equal("handover"))
			Expect(status.NativeProviderConfig).To(ContainSubstring("apiVersion: shoot-flux.extensions.gardener.cloud/v1alpha1"))
			Expect(status.NativeProviderConfig).To(ContainSubstring("management: handover"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig is stackit's FluxConfig")))
		})
	})

	Describe("releases nobody of the project asked for", func() {
		var now *testclock.FakePassiveClock

		// restart builds the actuator anew with cfg, as an extension restarted with another
		// configuration, on the same seed and garden.
		restart := func() {
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)
			act.clock = now
		}
		controllersWrites := func() []string {
			var out []string
			for _, w := range rec.reset() {
				if strings.Contains(w, constants.ManagedResourceControllers) {
					out = append(out, w)
				}
			}
			return out
		}

		BeforeEach(func() {
			theShoot.Spec.Maintenance = &gardencorev1beta1.Maintenance{TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: "220000+0000", End: "230000+0000"}}
			now = testclock.NewFakePassiveClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
			cfg.DefaultFluxVersion = "v2.7"
			build(nil)
			act.clock = now
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.7.5"))
			rec.reset()
		})

		It("keep a shoot outside its maintenance window on its release when the operator's default moves, and move it in the window", func() {
			cfg.DefaultFluxVersion = "v2.9"
			restart()
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.Pending).NotTo(BeNil())
			Expect(status.Pending.NextMaintenance).NotTo(BeNil())
			Expect(status.Pending.NextMaintenance.Time).To(BeTemporally("==", time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)))
			status.Pending.NextMaintenance = nil
			Expect(status.Pending).To(Equal(&fluxv1alpha1.PendingRelease{
				FluxVersion: "v2.9.5",
				Reason:      "Flux v2.9.5 is what the operator's default version selects now; it is installed in the shoot's maintenance time window",
			}))
			Expect(controllersWrites()).To(BeEmpty(), "the controllers stay as they are")

			By("reconciling in the window")
			now.SetTime(time.Date(2026, 11, 26, 22, 10, 0, 0, time.UTC))
			Expect(reconcile()).To(Succeed())
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Pending).To(BeNil())
			Expect(controllersWrites()).NotTo(BeEmpty())
		})

		It("apply the project's own version change at once, outside the window", func() {
			cfg.DefaultFluxVersion = "v2.9"
			restart()
			ex.Spec.ProviderConfig = providerConfig(`{"flux":{"version":"v2.9"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.9.5"))
			Expect(status.Pending).To(BeNil())
			Expect(status.Requested).To(Equal(&fluxv1alpha1.RequestedVersions{Flux: "v2.9", Kluctl: ""}))
		})

		It("apply them at once with rollout.window immediate", func() {
			cfg.DefaultFluxVersion = "v2.9"
			cfg.Rollout.Window = config.RolloutWindowImmediate
			restart()
			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.9.5"))
		})

		Context("with the installed release expired", func() {
			expired := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

			BeforeEach(func() {
				cfg.Rollout.Releases.Flux = []config.ReleaseLifecycle{{Version: "v2.7.5", Classification: config.ReleaseDeprecated, ExpirationDate: &metav1.Time{Time: expired}}}
				restart()
			})

			It("move the shoot to the next supported minor in its window, with the move in providerStatus and an event", func() {
				Expect(reconcile()).To(Succeed())
				status := providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.7.5"), "outside its window")
				Expect(status.Pending).NotTo(BeNil())
				Expect(status.Pending.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending.Reason).To(Equal("Flux v2.7.5 expired on 2026-11-20; it is replaced by v2.9.5; it is installed in the shoot's maintenance time window"))
				Expect(status.ForcedMoves).To(BeEmpty())
				Expect(controllersWrites()).To(BeEmpty(), "the controllers stay as they are")
				Expect(eventRecorder.Events).To(BeEmpty())

				By("reconciling in the window")
				inWindow := time.Date(2026, 11, 26, 22, 10, 0, 0, time.UTC)
				now.SetTime(inWindow)
				Expect(reconcile()).To(Succeed())
				status = providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1))
				move := status.ForcedMoves[0]
				Expect([]string{move.Component, move.From, move.To}).To(Equal([]string{"flux", "v2.7.5", "v2.9.5"}))
				Expect(move.ExpirationDate.Time).To(BeTemporally("==", expired))
				Expect(move.Time.Time).To(BeTemporally("==", inWindow))
				Expect(controllersWrites()).NotTo(BeEmpty())
				Expect(eventRecorder.Events).To(Receive(Equal("Normal ReleaseExpired Moved flux from v2.7.5, which expired on 2026-11-20, to v2.9.5")))

				By("reconciling again after the window, the configuration still selecting the expired minor")
				now.SetTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
				Expect(reconcile()).To(Succeed())
				status = providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1), "the move is kept")
				Expect(eventRecorder.Events).To(BeEmpty())
			})

			It("install the replacement at once on a shoot that has no release yet", func() {
				ex.Status.ProviderStatus = nil
				Expect(seed.Status().Update(ctx, ex)).To(Succeed())
				Expect(reconcile()).To(Succeed())
				status := providerStatus(ex)
				Expect(status.FluxVersion).To(Equal("v2.9.5"))
				Expect(status.Pending).To(BeNil())
				Expect(status.ForcedMoves).To(HaveLen(1))
			})
		})
	})

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

		It("generates a deploy key for a private ssh repository and delivers it with known_hosts", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			status := providerStatus(ex)
			keyName := deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.com:22/org/repo")
			identityKey, identityPub := deploykey.DataKeys(keyName)
			Expect(status.DeployKey).To(Equal(keyName))
			Expect(status.PublicKey).To(Equal(string(key.Data[identityPub])))
			Expect(status.PublicKey).To(HaveSuffix(" shoot-flux garden-foo git.example.com:22/org/repo\n"))
			Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
			fingerprint, err := sshkey.FingerprintOf(status.PublicKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.Fingerprint).To(Equal(fingerprint))
			Expect(string(ex.Status.ProviderStatus.Raw)).NotTo(ContainSubstring("PRIVATE KEY"))

			docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
			Expect(docs).To(ContainSubstring("name: " + constants.GitCredentialsSecretName))
			Expect(docs).To(ContainSubstring("host: git.example.com\n"))
			Expect(docs).To(ContainSubstring(b64(key.Data[identityKey])))
			Expect(docs).To(ContainSubstring(b64([]byte(hostKeyLine))))
			Expect(scans).To(Equal(1))

			By("telling the shoot owner in the shoot which key to register, without the private key")
			var statusCM *corev1.ConfigMap
			for _, doc := range managedResourceObjects(seed, constants.ManagedResourceBootstrap) {
				if strings.Contains(doc, "name: "+constants.StatusConfigMapName) {
					statusCM = &corev1.ConfigMap{}
					Expect(yaml.Unmarshal([]byte(doc), statusCM)).To(Succeed())
					Expect(doc).NotTo(Or(ContainSubstring("PRIVATE KEY"), ContainSubstring(b64(key.Data[identityKey]))))
				}
			}
			Expect(statusCM).NotTo(BeNil())
			Expect(statusCM.Namespace).To(Equal("kluctl-system"))
			Expect(statusCM.Data).To(Equal(map[string]string{
				"bootstrapMode": "kluctl", "fluxVersion": status.FluxVersion, "kluctlVersion": status.KluctlVersion, "management": "continuous",
				"repository": "ssh://git@git.example.com/org/repo", "ref": "branch:main",
				"publicKey": status.PublicKey, "fingerprint": fingerprint,
			}))

			By("reusing the stored key and host key on the next reconcile")
			Expect(reconcile()).To(Succeed())
			Expect(scans).To(Equal(1))
			Expect(providerStatus(ex).Fingerprint).To(Equal(fingerprint))
		})

		// Issue 20: the known_hosts of the deploy key Secret, which project admins edit, hung a
		// worker with a crafted pattern; now it is bounded, and a bad one keeps what was deployed.
		It("rejects an oversized known_hosts pattern in the deploy key Secret and keeps the deployment", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			deployed := managedResourceObjects(seed, constants.ManagedResourceBootstrap)

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			crafted := strings.Repeat("*a", 17) + "z"
			key.Data[constants.SecretKeyKnownHosts] = append(key.Data[constants.SecretKeyKnownHosts], []byte(crafted+" "+strings.SplitN(hostKeyLine, " ", 2)[1])...)
			Expect(garden.Update(ctx, key)).To(Succeed())
			rec.reset()

			err := reconcile()
			Expect(err).To(MatchError(ContainSubstring(`Secret garden-foo/shoot-flux-deploy-keys: data[known_hosts]: Invalid value: "` + crafted +
				`": line 2: host pattern has 17 wildcards (* and ?), may not have more than 3`)))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(rec.reset()).To(BeEmpty())
			Expect(managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(deployed))
		})

		It("rejects an oversized known_hosts in the credentials Secret of the shoot", func() {
			own, err := sshkey.Generate(sshkey.AlgorithmED25519, "")
			Expect(err).NotTo(HaveOccurred())
			theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})},
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
					constants.SecretKeyIdentity:   own.PrivateKey,
					constants.SecretKeyKnownHosts: []byte(strings.Repeat("# padding\n", 1001)),
				}})
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())

			err = reconcile()
			Expect(err).To(MatchError("source.secretResourceName: Secret data[known_hosts]: Too many: 1001: has 1001 lines, may not have more than 1000"))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})

		DescribeTable("refuses an oversized private key in the credentials Secret of the shoot before parsing it",
			func(identity []byte, message func(size int) string) {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})},
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity:   identity,
						constants.SecretKeyKnownHosts: []byte(hostKeyLine),
					}})
				ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
				Expect(seed.Update(ctx, ex)).To(Succeed())

				err := reconcile()
				Expect(err).To(MatchError(message(len(identity) + len(hostKeyLine) + len("identity") + len("known_hosts"))))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
			},
			// 12.9 s of CPU per parse without the limits (issue 36), on every reconcile.
			Entry("780 KiB, named by its Secret and key before the size of the Secrets the bootstrap delivers", craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0), func(int) string {
				return fmt.Sprintf(`source.secretResourceName: Secret garden-foo/my-git key "identity": private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)`, len(craftedkey.PEM(craftedkey.PKCS1, 1<<20, 0)))
			}),
			Entry("over the size of a private key", craftedkey.PEM(craftedkey.PKCS1, 24000, 0), func(int) string {
				return fmt.Sprintf(`source.secretResourceName: Secret garden-foo/my-git key "identity": private key is %d bytes, more than the operator's limit of 16384 bytes (limits.privateKeyMaxBytes)`, len(craftedkey.PEM(craftedkey.PKCS1, 24000, 0)))
			}),
			Entry("a 96,000 bit modulus in 16 KiB", craftedkey.PEM(craftedkey.PKCS1, 96000, 8), func(int) string {
				return `source.secretResourceName: Secret garden-foo/my-git key "identity": RSA private key has a modulus of 96000 bits, more than the operator's limit of 16384 bits (limits.privateKeyMaxBits)`
			}),
		)

		It("shows a prepared key in the status and the shoot, and switches to it on rotation", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := providerStatus(ex)
			Expect(before.NextPublicKey).To(BeEmpty())

			annotate := func(annotation string) {
				key := &corev1.Secret{}
				Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
				metav1.SetMetaDataAnnotation(&key.ObjectMeta, annotation, "true")
				Expect(garden.Update(ctx, key)).To(Succeed())
			}
			statusData := func() map[string]string {
				for _, doc := range managedResourceObjects(seed, constants.ManagedResourceBootstrap) {
					if strings.Contains(doc, "name: "+constants.StatusConfigMapName) {
						cm := &corev1.ConfigMap{}
						Expect(yaml.Unmarshal([]byte(doc), cm)).To(Succeed())
						return cm.Data
					}
				}
				return nil
			}

			By("preparing: the shoot keeps the current key, the next one is shown")
			annotate(constants.AnnotationRotatePrepare)
			Expect(reconcile()).To(Succeed())
			prepared := providerStatus(ex)
			Expect(prepared.Fingerprint).To(Equal(before.Fingerprint))
			Expect(prepared.PublicKey).To(Equal(before.PublicKey))
			Expect(prepared.NextPublicKey).To(HaveSuffix(" shoot-flux garden-foo git.example.com:22/org/repo\n"))
			nextFingerprint, err := sshkey.FingerprintOf(prepared.NextPublicKey)
			Expect(err).NotTo(HaveOccurred())
			Expect(prepared.NextFingerprint).To(Equal(nextFingerprint))
			Expect(prepared.NextFingerprint).NotTo(Equal(before.Fingerprint))
			Expect(statusData()).To(SatisfyAll(
				HaveKeyWithValue("fingerprint", before.Fingerprint),
				HaveKeyWithValue("nextPublicKey", prepared.NextPublicKey),
				HaveKeyWithValue("nextFingerprint", nextFingerprint),
			))

			By("rotating: the shoot switches to exactly the prepared key")
			annotate(constants.AnnotationRotate)
			Expect(reconcile()).To(Succeed())
			rotated := providerStatus(ex)
			Expect(rotated.Fingerprint).To(Equal(nextFingerprint))
			Expect(rotated.PublicKey).To(Equal(prepared.NextPublicKey))
			Expect(rotated.NextPublicKey).To(BeEmpty())
			Expect(rotated.NextFingerprint).To(BeEmpty())
			Expect(statusData()).To(SatisfyAll(
				HaveKeyWithValue("fingerprint", nextFingerprint),
				Not(HaveKey("nextPublicKey")),
			))
		})

		It("warns once about data keys a requested rotation left alone", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := providerStatus(ex).Fingerprint

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			key.Data["notes.identity"] = []byte("the project admin's")
			metav1.SetMetaDataAnnotation(&key.ObjectMeta, constants.AnnotationRotate, "true")
			Expect(garden.Update(ctx, key)).To(Succeed())

			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.Fingerprint).NotTo(Equal(before))
			Expect(status.Warnings).To(ConsistOf(`The rotation requested on Secret garden-foo/shoot-flux-deploy-keys left data keys alone that are no key pairs of the extension: "notes.identity".`))
			Expect(garden.Get(ctx, client.ObjectKeyFromObject(key), key)).To(Succeed())
			Expect(key.Data).To(HaveKeyWithValue("notes.identity", []byte("the project admin's")))

			Expect(reconcile()).To(Succeed())
			Expect(providerStatus(ex).Warnings).To(BeEmpty())
		})

		It("keeps the last good deployment when the deploy key Secret has too many data keys, as a configuration problem", func() {
			build([]client.Object{legacyConfigMap(map[string]string{
				"repositoryUrl":  "ssh://git@git.example.com/org/repo",
				"repositoryType": "private",
			})})
			Expect(reconcile()).To(Succeed())
			before := managedResourceObjects(seed, constants.ManagedResourceBootstrap)

			key := &corev1.Secret{}
			Expect(garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, key)).To(Succeed())
			for i := len(key.Data); i <= constants.DefaultDeployKeysMaxDataKeys; i++ {
				key.Data[fmt.Sprintf("dummy%d", i)] = nil
			}
			Expect(garden.Update(ctx, key)).To(Succeed())
			ex.Spec.ProviderConfig = providerConfig(`{"source":{"ref":{"branch":"other"}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())

			err := reconcile()
			Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("deploy key Secret garden-foo/shoot-flux-deploy-keys: data: %d keys, more than the %d allowed", constants.DefaultDeployKeysMaxDataKeys+1, constants.DefaultDeployKeysMaxDataKeys))))
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
			Expect(managedResourceObjects(seed, constants.ManagedResourceBootstrap)).To(Equal(before))
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

		Describe("moving the deploy keys of earlier releases", func() {
			const repoURL = "ssh://git@git.example.com/org/repo"
			var (
				inUse       *sshkey.KeyPair
				identityKey string
			)

			BeforeEach(func() {
				var err error
				inUse, err = sshkey.Generate(sshkey.AlgorithmED25519, "shoot-flux garden-foo")
				Expect(err).NotTo(HaveOccurred())
				identityKey, _ = deploykey.DataKeys(deploykey.KeyName(deploykey.ScopeRepository, "", "git.example.com:22/org/repo"))
			})

			// recordEarlierRelease writes the providerStatus an earlier release left for the shoot.
			recordEarlierRelease := func(secretName, repository string) {
				ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
				raw, err := helper.EncodeStatus(&fluxv1alpha1.FluxStatus{
					Repository: repository, Fingerprint: inUse.Fingerprint, PublicKey: inUse.AuthorizedKey,
					DeployKeySecret: projectNamespace + "/" + secretName,
				})
				ExpectWithOffset(1, err).NotTo(HaveOccurred())
				ex.Status.ProviderStatus = raw
				ExpectWithOffset(1, seed.Status().Update(ctx, ex)).To(Succeed())
			}
			storedKey := func() []byte {
				secret := &corev1.Secret{}
				ExpectWithOffset(1, garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, secret)).To(Succeed())
				return secret.Data[identityKey]
			}
			// deliver makes the seed deliver inUse to the shoot, as an earlier release did.
			deliver := func() {
				theShoot.Spec.Resources = []gardencorev1beta1.NamedResourceReference{{Name: "git", ResourceRef: autoscalingRef("my-git")}}
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"})},
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ref-my-git", Namespace: seedNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity: inUse.PrivateKey, constants.SecretKeyKnownHosts: []byte(hostKeyLine),
					}})
				ex.Spec.ProviderConfig = providerConfig(`{"source":{"secretResourceName":"git"}}`)
				ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
				ExpectWithOffset(1, reconcile()).To(Succeed())
				ex.Spec.ProviderConfig = nil
				ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
			}

			It("keeps the key of the project's old Secret for the repository the shoot used", func() {
				build([]client.Object{
					legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"}),
					&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: constants.LegacyDeployKeySecretName, Namespace: projectNamespace}, Data: map[string][]byte{
						constants.SecretKeyIdentity: inUse.PrivateKey, constants.SecretKeyIdentityPub: []byte(inUse.AuthorizedKey),
					}},
				})
				recordEarlierRelease(constants.LegacyDeployKeySecretName, "git@git.example.com:org/repo.git")
				Expect(reconcile()).To(Succeed())

				Expect(storedKey()).To(Equal(inUse.PrivateKey))
				status := providerStatus(ex)
				Expect(status.Fingerprint).To(Equal(inUse.Fingerprint))
				Expect(status.DeployKeySecret).To(Equal(projectNamespace + "/" + constants.DeployKeysSecretName))
				Expect(status.Warnings).To(BeEmpty())
				docs := strings.Join(managedResourceObjects(seed, constants.ManagedResourceBootstrap), "")
				Expect(docs).To(ContainSubstring(b64(inUse.PrivateKey)))
			})

			It("keeps the key the shoot was delivered when its old Secret cannot be read", func() {
				deliver()
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", repoURL)
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).To(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Fingerprint).To(Equal(inUse.Fingerprint))
			})

			It("generates a new key when the shoot moved to another repository", func() {
				deliver()
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", "ssh://git@git.example.com/org/other")
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).NotTo(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Warnings).To(BeEmpty())
			})

			It("generates a new key and warns when the key in use is gone", func() {
				build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": repoURL, "repositoryType": "private"})})
				recordEarlierRelease(constants.LegacyDeployKeySecretName+"-bar", repoURL)
				Expect(reconcile()).To(Succeed())
				Expect(storedKey()).NotTo(BeEmpty())
				Expect(storedKey()).NotTo(Equal(inUse.PrivateKey))
				Expect(providerStatus(ex).Warnings).To(ConsistOf(ContainSubstring("could not be moved into Secret shoot-flux-deploy-keys, so a new key was generated")))
			})
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

	Describe("#Delete", func() {
		It("deletes the bootstrap before the controllers and waits for each", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			var deletes []string
			for _, w := range rec.reset() {
				if strings.HasPrefix(w, "delete *v1alpha1.ManagedResource") {
					deletes = append(deletes, w)
				}
			}
			Expect(deletes).To(Equal([]string{
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
			}))
		})

		It("does not remove the controllers while the bootstrap is still being deleted", func() {
			cfg.Timeouts.Deletion = metav1.Duration{Duration: 50 * time.Millisecond}
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			// The kluctl controller's finalizer keeps the bootstrap ManagedResource alive.
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, mr)).To(Succeed())
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(MatchError(ContainSubstring(constants.ManagedResourceBootstrap + " was not deleted")))
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, mr)).To(Succeed())
			Expect(mr.Spec.KeepObjects).To(Equal(ptr.To(true)), "objects whose finalizers nobody removes are left in the shoot")
		})

		It("leaves the bootstrap objects of a hibernated shoot and waits for nothing", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				mr := &resourcesv1alpha1.ManagedResource{}
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, mr)).To(Succeed())
				mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
				Expect(seed.Update(ctx, mr)).To(Succeed())
			}
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			c := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, c)).To(Succeed())
			c.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, c)).To(Succeed())

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			boot := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceBootstrap}, boot)).To(Succeed())
			Expect(boot.DeletionTimestamp).NotTo(BeNil())
			Expect(boot.Spec.KeepObjects).To(Equal(ptr.To(true)))
			ctrls := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, ctrls)).To(Succeed())
			Expect(ctrls.DeletionTimestamp).NotTo(BeNil())
			Expect(ctrls.Spec.KeepObjects).NotTo(Equal(ptr.To(true)), "the controllers go; their CRDs and namespaces are kept by annotation")
		})

		It("deletes a shoot-scoped deploy key together with the shoot", func() {
			cfg.SSHKey.Scope = config.KeyScopeShoot
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "ssh://git@git.example.com/org/repo"})})
			Expect(reconcile()).To(Succeed())
			identityKey, _ := deploykey.DataKeys(deploykey.KeyName(deploykey.ScopeShoot, "bar", "git.example.com:22/org/repo"))
			keys := func() map[string][]byte {
				secret := &corev1.Secret{}
				ExpectWithOffset(1, garden.Get(ctx, client.ObjectKey{Namespace: projectNamespace, Name: constants.DeployKeysSecretName}, secret)).To(Succeed())
				return secret.Data
			}
			Expect(keys()).To(HaveKey(identityKey))

			By("keeping it when only the extension is removed")
			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(keys()).To(HaveKey(identityKey))

			By("deleting it when the shoot is deleted")
			now := metav1.Now()
			theShoot.DeletionTimestamp = &now
			c := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, c)).To(Succeed())
			c.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, c)).To(Succeed())
			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(keys()).NotTo(HaveKey(identityKey))
			Expect(keys()).To(HaveKey(constants.SecretKeyKnownHosts), "host keys stay for the project's other shoots")
		})
	})

	Describe("the shoot's monitoring", func() {
		scrapeConfigs := func() []string {
			list := &monitoringv1alpha1.ScrapeConfigList{}
			Expect(seed.List(ctx, list, client.InNamespace(seedNamespace))).To(Succeed())
			var names []string
			for _, sc := range list.Items {
				names = append(names, sc.Name)
			}
			return names
		}
		ruleExists := func() bool {
			err := seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, &monitoringv1.PrometheusRule{})
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			return err == nil
		}

		It("adds the delivered controllers and the bootstrap to the shoot's Prometheus and removes them on disable", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(ConsistOf("shoot-flux-source-controller", "shoot-flux-kluctl-controller"))
			rule := &monitoringv1.PrometheusRule{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, rule)).To(Succeed())
			var alerts []string
			for _, r := range rule.Spec.Groups[0].Rules {
				alerts = append(alerts, r.Alert)
			}
			Expect(alerts).To(ContainElement(monitoring.AlertDeploymentFailing))
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: monitoring.DashboardConfigMapName}, &corev1.ConfigMap{})).To(Succeed())

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(scrapeConfigs()).To(BeEmpty())
			Expect(ruleExists()).To(BeFalse())
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: monitoring.DashboardConfigMapName}, &corev1.ConfigMap{})).To(BeNotFoundError())
		})

		It("keeps the controller alerts only in bootstrap mode none", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			ex.Spec.ProviderConfig = providerConfig(`{"bootstrap":{"mode":"none"}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			rule := &monitoringv1.PrometheusRule{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: "shoot-flux"}, rule)).To(Succeed())
			for _, r := range rule.Spec.Groups[0].Rules {
				Expect(r.Alert).To(Or(BeEmpty(), Equal(monitoring.AlertControllerDown)))
			}
		})

		It("removes them when the project turns them off, and the shoot owner can turn them on again only within the operator's switch", func() {
			cm := legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})
			build([]client.Object{cm})
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeTrue())

			cm.Data["config.yaml"] = "monitoring:\n  shoot:\n    enabled: false\n"
			Expect(garden.Update(ctx, cm)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(BeEmpty())
			Expect(ruleExists()).To(BeFalse())
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(rec.reset()).To(BeEmpty(), "a shoot without monitoring costs no writes")

			ex.Spec.ProviderConfig = providerConfig(`{"monitoring":{"shoot":{"enabled":true}}}`)
			Expect(seed.Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeTrue())

			cfg.Monitoring.Shoot.Enabled = false
			act.config = cfg
			Expect(reconcile()).To(Succeed())
			Expect(ruleExists()).To(BeFalse())
		})

		It("keeps them while the shoot is hibernated, like the controllers", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			cluster := &extensionsv1alpha1.Cluster{}
			Expect(seed.Get(ctx, client.ObjectKey{Name: seedNamespace}, cluster)).To(Succeed())
			cluster.Spec.Shoot = clusterObject(theShoot).Spec.Shoot
			Expect(seed.Update(ctx, cluster)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(scrapeConfigs()).To(HaveLen(2))
			Expect(ruleExists()).To(BeTrue())
		})
	})

	Describe("flux.management", func() {
		controllersMR := func() *resourcesv1alpha1.ManagedResource {
			mr := &resourcesv1alpha1.ManagedResource{}
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			return mr
		}
		setProviderConfig := func(s string) {
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			ex.Spec.ProviderConfig = providerConfig(s)
			ExpectWithOffset(1, seed.Update(ctx, ex)).To(Succeed())
		}
		newest := manifests.NewestFluxVersion

		It("owns the controllers by default", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("continuous"))
			Expect(status.HandedOverAt).To(BeNil())
		})

		Describe("a repository that manages Flux itself", func() {
			// As `flux bootstrap` leaves it: the repository's Kustomization applies Flux's own manifests.
			selfManaged := func() *appsv1.Deployment {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", Labels: map[string]string{
					"kustomize.toolkit.fluxcd.io/name": "flux-system", "kustomize.toolkit.fluxcd.io/namespace": "flux-system", "app.kubernetes.io/version": "v2.4.0",
				}}}
			}

			It("leaves the controllers to it in management handover, without applying or migrating anything", func() {
				adoptionShoot.objects = []client.Object{selfManaged()}
				build(nil)
				setProviderConfig(`{"flux":{"management":"handover"}}`)
				Expect(reconcile()).To(Succeed())
				mr := controllersMR()
				Expect(mr.Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.4.0")))
				Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
				status := providerStatus(ex)
				Expect(status.HandedOverVersion).To(Equal("v2.4.0"))
				Expect(status.Warnings).To(ContainElement("Kustomization flux-system/flux-system of the shoot applies the Flux controllers (Deployment flux-system/source-controller) of Flux v2.4.0: " +
					"the extension leaves the controllers to it (flux.management handover); to have the extension manage them, remove Flux from the repository and set flux.management to continuous"))

				By("reconciling again")
				clients := adoptionShoot.clients
				rec.reset()
				Expect(reconcile()).To(Succeed())
				Expect(adoptionShoot.clients).To(Equal(clients), "checked once, when the controllers would first be applied")
				for _, w := range rec.reset() {
					Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
				}
			})

			It("refuses to fight it in management continuous, writing no controllers", func() {
				adoptionShoot.objects = []client.Object{selfManaged()}
				build(nil)
				err := reconcile()
				Expect(err).To(MatchError(ContainSubstring("flux.management is continuous, but Kustomization flux-system/flux-system of the shoot applies the Flux controllers")))
				Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
			})

			It("checks again before taking handed-over controllers back", func() {
				build(nil)
				setProviderConfig(`{"flux":{"management":"handover"}}`)
				Expect(reconcile()).To(Succeed())
				Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))

				By("the repository taking Flux over, then the owner choosing continuous")
				adoptionShoot.objects = []client.Object{selfManaged()}
				setProviderConfig(`{"flux":{"management":"continuous"}}`)
				Expect(reconcile()).To(MatchError(ContainSubstring("remove Flux from the repository, or set flux.management to handover")))
				Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), "still handed over")
			})

			It("deploys the controllers when the Kustomization does not apply them", func() {
				d := selfManaged()
				d.Labels = map[string]string{"app.kubernetes.io/version": "v2.4.0"}
				adoptionShoot.objects = []client.Object{d}
				build(nil)
				Expect(reconcile()).To(Succeed())
				Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
				Expect(adoptionShoot.clients).To(Equal(1))
			})
		})

		It("removes the condition FluxBootstrapped of stackit's extension and keeps the others", func() {
			build(nil)
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			ex.Status.Conditions = []gardencorev1beta1.Condition{
				{Type: "FluxBootstrapped", Status: gardencorev1beta1.ConditionTrue, Reason: "BootstrapSuccessful"},
				{Type: "ExtensionHealthy", Status: gardencorev1beta1.ConditionTrue, Reason: "HealthCheckSuccessful"},
			}
			Expect(seed.Status().Update(ctx, ex)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
			Expect(ex.Status.Conditions).To(ConsistOf(HaveField("Type", gardencorev1beta1.ConditionType("ExtensionHealthy"))))
		})

		It("hands the controllers over once applied and changes them no more", func() {
			oldest := manifests.FluxVersions()[0]
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover","version":"` + oldest + `"}}`)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			Expect(mr.Annotations).To(And(
				HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"),
				HaveKeyWithValue(constants.AnnotationHandedOverVersion, oldest),
				HaveKey(constants.AnnotationHandedOverAt),
			))
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("handover"))
			Expect(status.HandedOverVersion).To(Equal(oldest))
			Expect(status.HandedOverAt).NotTo(BeNil())
			Expect(status.HandedOverAt.Time).To(BeTemporally("~", time.Now(), 5*time.Second))
			Expect(status.Warnings).To(BeEmpty())
			oldImages := status.Images

			By("selecting another release")
			setProviderConfig(`{"flux":{"management":"handover","version":"` + newest() + `"}}`)
			rec.reset()
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Spec).To(Equal(mr.Spec), "the handed-over ManagedResource keeps its content")
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			status = providerStatus(ex)
			Expect(status.FluxVersion).To(Equal(oldest), "the shoot still runs the handed-over release")
			Expect(status.Images).To(Equal(oldImages))
			Expect(status.HandedOverVersion).To(Equal(oldest))
			Expect(status.Warnings).To(ConsistOf(ContainSubstring("flux.version selects " + newest() + ", but the controllers were handed over with " + oldest)))
		})

		It("hands a hibernated shoot's controllers over only after they were applied", func() {
			theShoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
			rec.noApply = true
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).NotTo(HaveKey(resourcesv1alpha1.Ignore))
			Expect(providerStatus(ex).HandedOverAt).To(BeNil())
		})

		It("takes handed-over controllers over again in mode continuous and waits for the resource manager to apply them", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())

			By("waiting in vain while the resource manager does not apply")
			cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 50 * time.Millisecond}
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)
			rec.noApply = true
			setProviderConfig(`{"flux":{"management":"continuous"}}`)
			Expect(reconcile()).To(MatchError(ContainSubstring("has not applied the ManagedResource since it was ignored")))
			Expect(controllersMR().Annotations).NotTo(Or(HaveKey(resourcesv1alpha1.Ignore), HaveKey(constants.AnnotationHandedOverAt), HaveKey(constants.AnnotationHandedOverVersion)))

			By("succeeding once it applies")
			rec.noApply = false
			Expect(seed.Update(ctx, controllersMR())).To(Succeed())
			Expect(rec.apply(ctx, seed.(client.WithWatch), controllersMR())).To(Succeed())
			Expect(reconcile()).To(Succeed())
			status := providerStatus(ex)
			Expect(status.Management).To(Equal("continuous"))
			Expect(status.HandedOverAt).To(BeNil())
			Expect(status.HandedOverVersion).To(BeEmpty())
		})

		It("leaves a ManagedResource alone that an operator paused", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			metav1.SetMetaDataAnnotation(&mr.ObjectMeta, resourcesv1alpha1.Ignore, "true")
			Expect(seed.Update(ctx, mr)).To(Succeed())
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))
		})

		It("leaves handed-over controllers in the shoot when the extension is disabled", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())
			cfg.Timeouts.Deletion = metav1.Duration{Duration: 50 * time.Millisecond}
			act = NewActuator(seed, seed, garden, eventRecorder, cfg, nil).(*actuator)

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(MatchError(ContainSubstring(constants.ManagedResourceControllers + " was not deleted")))
			mr = controllersMR()
			Expect(mr.DeletionTimestamp).NotTo(BeNil())
			Expect(mr.Spec.KeepObjects).To(Equal(ptr.To(true)))
		})

		It("keeps the handover across a control plane migration without applying the controllers again", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"handover"}}`)
			Expect(reconcile()).To(Succeed())
			handedOver := providerStatus(ex).HandedOverAt
			Expect(ex.Status.State).NotTo(BeNil(), "gardener moves the state with the shoot")

			Expect(act.Migrate(ctx, logr.Discard(), ex)).To(Succeed())
			// On the new seed the Extension has the state, not the providerStatus.
			ex.Status.ProviderStatus = nil
			Expect(seed.Status().Update(ctx, ex)).To(Succeed())
			rec.reset()
			Expect(act.Restore(ctx, logr.Discard(), ex)).To(Succeed())
			writes := rec.reset()
			Expect(writes).To(ContainElement("create *v1alpha1.ManagedResource "+constants.ManagedResourceControllers), "created ignored")
			Expect(writes).NotTo(ContainElement("patch *v1alpha1.ManagedResource "+constants.ManagedResourceControllers), "ignored from its creation on, not after the resource manager applied it")
			mr := controllersMR()
			Expect(mr.Annotations).To(And(
				HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"),
				HaveKeyWithValue(constants.AnnotationHandedOverAt, handedOver.UTC().Format(time.RFC3339)),
			))
			Expect(providerStatus(ex).HandedOverAt.Equal(handedOver)).To(BeTrue())

			By("forgetting the state when the extension takes the controllers back")
			setProviderConfig(`{"flux":{"management":"continuous"}}`)
			Expect(reconcile()).To(Succeed())
			Expect(ex.Status.State).To(BeNil())
		})

		It("rejects an unknown mode naming the field", func() {
			build(nil)
			setProviderConfig(`{"flux":{"management":"manual"}}`)
			Expect(reconcile()).To(MatchError(ContainSubstring(`flux.management: Unsupported value: "manual": supported values: "continuous", "handover"`)))
		})
	})

	Describe("a shoot switched from stackit's extension", func() {
		// stackitConfig is a providerConfig of stackit's extension as its example/shoot.yaml writes
		// it, with the Flux release pinned to version.
		stackitConfig := func(version string) string {
			return `{"apiVersion":"flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","flux":{"version":"` + version + `"},` +
				`"source":{"template":{"apiVersion":"source.toolkit.fluxcd.io/v1","kind":"GitRepository","spec":{"url":"https://git.example.com/org/repo.git","ref":{"branch":"main"}}}},` +
				`"kustomization":{"template":{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization","spec":{"path":"./clusters/production"}}}}`
		}
		controllersMR := func() *resourcesv1alpha1.ManagedResource {
			mr := &resourcesv1alpha1.ManagedResource{}
			ExpectWithOffset(1, seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			return mr
		}

		It("installs the embedded release of the shoot's Kubernetes range once for a pinned release it does not embed, with a warning naming flux.version", func() {
			theShoot.Spec.Kubernetes.Version = "1.33.4"
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.6.1"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.7.5"), "applied once, then left to the repository")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.7.5"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.version: v2.6.1 is not a Flux release this extension embeds (v2.7, v2.9)")))
			Expect(status.Warnings).To(ContainElement(HavePrefix("installed Flux v2.7.5 instead")))
			Expect(status.NativeProviderConfig).NotTo(ContainSubstring("v2.6.1"))
		})

		It("leaves a newer Flux the shoot runs as it is, without applying or migrating anything, also on the next reconciles", func() {
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.10.0"}}}}
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.10.0"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := controllersMR()
			Expect(mr.Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.10.0")))
			Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.10.0"))
			Expect(status.HandedOverVersion).To(Equal("v2.10.0"))
			Expect(status.Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.version: v2.10.0 is newer than every Flux release this extension embeds")))
			Expect(status.Warnings).To(ContainElement("the shoot runs Flux v2.10.0 (Deployment flux-system/source-controller), a newer minor than the selected v2.9.5: " +
				"the extension installs no older Flux over it and leaves the controllers as they are (flux.management handover); select flux.version v2.10 or later once this extension embeds it"))

			By("reconciling again")
			rec.reset()
			Expect(reconcile()).To(Succeed())
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			Expect(providerStatus(ex).FluxVersion).To(Equal("v2.10.0"))
		})

		It("leaves the bootstrap objects and the controllers in the shoot when the extension is disabled, as stackit's extension did", func() {
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.9"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Delete(ctx, logr.Discard(), ex)).To(Succeed())
			var writes []string
			for _, w := range rec.reset() {
				if strings.Contains(w, "*v1alpha1.ManagedResource") && !strings.Contains(w, "monitoring") {
					writes = append(writes, w)
				}
			}
			Expect(writes).To(Equal([]string{
				"patch *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceBootstrap,
				"patch *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
				"delete *v1alpha1.ManagedResource " + constants.ManagedResourceControllers,
			}), "keepObjects before each deletion")
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
			}
		})

		It("accepts the image automation controllers in componentsExtra, leaving what stackit installed of them as it is", func() {
			ex.Spec.ProviderConfig = providerConfig(strings.Replace(stackitConfig("v2.9"), `"version":"v2.9"`,
				`"version":"v2.9","componentsExtra":["image-reflector-controller","image-automation-controller"]`, 1))
			build(nil)
			Expect(reconcile()).To(Succeed())
			for _, doc := range managedResourceObjects(seed, constants.ManagedResourceControllers) {
				if strings.Contains(doc, "kind: Deployment\n") {
					Expect(doc).NotTo(ContainSubstring("name: image-"), "no image automation controller is delivered")
				}
			}
			Expect(providerStatus(ex).Warnings).To(ContainElement(HavePrefix("spec.providerConfig flux.componentsExtra: this extension does not deliver " +
				"image-reflector-controller, image-automation-controller: what stackit's extension installed of them stays in the shoot as it is")))
		})

		It("leaves the Flux the shoot runs as it is when no embedded release supports its Kubernetes version, and fails without one", func() {
			theShoot.Spec.Kubernetes.Version = "1.31.2"
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.4.0"))
			build(nil)
			err := reconcile()
			Expect(err).To(MatchError(HavePrefix("flux.version: no embedded Flux release supports the shoot's Kubernetes 1.31.2")), "no Flux to leave in place")
			Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))

			By("the shoot running the Flux stackit's extension installed")
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.4.0"}}}}
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(And(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"), HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.4.0")))
			Expect(fakeShoot.clients).To(BeZero(), "no stored-version check: the extension changes no CRD")
			status := providerStatus(ex)
			Expect(status.FluxVersion).To(Equal("v2.4.0"))
			Expect(status.Warnings).To(ContainElement("no embedded Flux release supports the shoot's Kubernetes 1.31.2 (v2.7.5: Kubernetes 1.32 to 1.34, v2.9.5: Kubernetes 1.34.1 to 1.36); " +
				"select a Kubernetes version in one of the ranges; the extension installs none and leaves the Flux the shoot runs (Deployment flux-system/source-controller, Flux v2.4.0) " +
				"as it is (flux.management handover)"))

			By("reconciling again")
			rec.reset()
			Expect(reconcile()).To(Succeed())
			for _, w := range rec.reset() {
				Expect(w).NotTo(HaveSuffix(constants.ManagedResourceControllers))
			}
			Expect(providerStatus(ex).Warnings).To(ContainElement(HavePrefix("no embedded Flux release supports the shoot's Kubernetes 1.31.2")))
		})

		It("installs its release over an older Flux the shoot runs", func() {
			adoptionShoot.objects = []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller",
				Labels: map[string]string{"app.kubernetes.io/version": "v2.4.0"}}}}
			ex.Spec.ProviderConfig = providerConfig(stackitConfig("v2.4.0"))
			build(nil)
			Expect(reconcile()).To(Succeed())
			Expect(controllersMR().Annotations).To(HaveKeyWithValue(constants.AnnotationHandedOverVersion, "v2.9.5"), "applied once, then handed over")
			Expect(providerStatus(ex).Warnings).NotTo(ContainElement(ContainSubstring("the shoot runs Flux")))
			Expect(fakeShoot.clients).NotTo(BeZero(), "the stored versions are checked before the CRDs change")
		})
	})

	Describe("#ForceDelete", func() {
		It("deletes both ManagedResources without waiting", func() {
			build(nil)
			Expect(reconcile()).To(Succeed())
			mr := &resourcesv1alpha1.ManagedResource{}
			Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: constants.ManagedResourceControllers}, mr)).To(Succeed())
			mr.Finalizers = []string{"resources.gardener.cloud/gardener-resource-manager"}
			Expect(seed.Update(ctx, mr)).To(Succeed())

			Expect(act.ForceDelete(ctx, logr.Discard(), ex)).To(Succeed())
			Expect(seed.Get(ctx, client.ObjectKeyFromObject(mr), mr)).To(Succeed())
			Expect(mr.DeletionTimestamp).NotTo(BeNil())
		})
	})

	Describe("#Migrate and #Restore", func() {
		It("keeps the shoot objects when migrating and deploys again on restore", func() {
			build([]client.Object{legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})})
			Expect(reconcile()).To(Succeed())
			rec.reset()

			Expect(act.Migrate(ctx, logr.Discard(), ex)).To(Succeed())
			writes := rec.reset()
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(BeNotFoundError())
				keep := slicesIndex(writes, "patch *v1alpha1.ManagedResource "+name)
				del := slicesIndex(writes, "delete *v1alpha1.ManagedResource "+name)
				Expect(keep).To(BeNumerically(">=", 0), "keepObjects must be set on %s", name)
				Expect(keep).To(BeNumerically("<", del), "keepObjects must be set before %s is deleted", name)
			}

			Expect(act.Restore(ctx, logr.Discard(), ex)).To(Succeed())
			for _, name := range []string{constants.ManagedResourceBootstrap, constants.ManagedResourceControllers} {
				Expect(seed.Get(ctx, client.ObjectKey{Namespace: seedNamespace, Name: name}, &resourcesv1alpha1.ManagedResource{})).To(Succeed())
			}
		})
	})
})

func b64(b []byte) string {
	return base64.StdEncoding.EncodeToString(b)
}

func autoscalingRef(name string) autoscalingv1.CrossVersionObjectReference {
	return autoscalingv1.CrossVersionObjectReference{APIVersion: "v1", Kind: "Secret", Name: name}
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func BeNotFoundError() OmegaMatcher {
	return WithTransform(apierrors.IsNotFound, BeTrue())
}

func semverParts(version string) (major, minor, patch int) {
	_, err := fmt.Sscanf(version, "v%d.%d.%d", &major, &minor, &patch)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return major, minor, patch
}
