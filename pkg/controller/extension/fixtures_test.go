// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	testutils "github.com/gardener/gardener/pkg/utils/test"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxinstall "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
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

// The Actuator specs share one fake seed, garden and actuator, built anew for each spec (build).
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

// build makes the seed (with the shoot's Cluster and the Extension), the garden and the actuator of
// a spec; its host key scanner knows git.example.com only.
func build(gardenObjs []client.Object, seedObjs ...client.Object) {
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

// reconcile runs the actuator on the Extension as the seed has it.
func reconcile() error {
	ExpectWithOffset(1, seed.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
	return act.Reconcile(ctx, logr.Discard(), ex)
}

// setUpActuator gives each spec of the calling container fresh shared state: the default
// configuration with short timeouts, the shoot and its Extension.
func setUpActuator() {
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
}

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
