// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package projectconfig

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	handlerpkg "sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"encoding/json"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
)

var _ = Describe("Handler", func() {
	var (
		ctx     context.Context
		cm      *corev1.ConfigMap
		handler = func(c client.Client) handlerpkg.EventHandler { return Handler(NewMapper(c)) }
	)

	BeforeEach(func() {
		ctx = context.Background()
		cm = legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/repo.git"})
		DeferCleanup(func(old time.Duration) { CoalesceWindow = old }, CoalesceWindow)
		CoalesceWindow = 100 * time.Millisecond
	})

	// seedWith returns a seed client with a Cluster and a shoot-flux Extension per shoot name;
	// recorded maps shoot names to the ConfigMap hash in their Extension's providerStatus, with
	// "-" for no providerStatus at all.
	seedWith := func(recorded map[string]string) client.Client {
		scheme := runtime.NewScheme()
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		b := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&extensionsv1alpha1.Cluster{}, IndexShootNamespace, ShootNamespaceOf)
		for name, hash := range recorded {
			s := shoot()
			s.Name = name
			cluster := clusterObject(s)
			cluster.Name = "shoot--foo--" + name
			ex := &extensionsv1alpha1.Extension{
				ObjectMeta: metav1.ObjectMeta{Name: "shoot-flux", Namespace: cluster.Name},
				Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ExtensionType}},
			}
			if hash != "-" {
				ex.Status.ProviderStatus = encodeStatus(&fluxv1alpha1.FluxStatus{ProjectConfigHash: hash})
			}
			other := &extensionsv1alpha1.Extension{
				ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: cluster.Name},
				Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: "other"}},
			}
			b = b.WithObjects(cluster, ex, other)
		}
		return b.Build()
	}

	// queued returns what is in the queue (not what waits for its backoff) once n items are ready.
	queued := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], n int) []string {
		GinkgoHelper()
		Eventually(q.Len).WithTimeout(5 * time.Second).Should(Equal(n))
		var names []string
		for q.Len() > 0 {
			req, _ := q.Get()
			names = append(names, req.Namespace)
			q.Done(req)
		}
		return names
	}
	newQueue := func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	}

	It("enqueues only shoots built from other ConfigMap data on the initial list after a start", func() {
		h := handler(seedWith(map[string]string{
			"current":   fluxconfig.ConfigMapHash(cm),
			"outdated":  fluxconfig.ConfigMapHash(legacyConfigMap(map[string]string{"repositoryUrl": "https://git.example.com/org/old.git"})),
			"unknown":   "-",
			"no-config": "",
		}))
		q := newQueue()
		h.Create(ctx, event.CreateEvent{Object: cm, IsInInitialList: true}, q)
		Expect(queued(q, 3)).To(ConsistOf("shoot--foo--outdated", "shoot--foo--unknown", "shoot--foo--no-config"))
	})

	It("enqueues all shoots of the project on later events, as a reconcile with older data may be running", func() {
		h := handler(seedWith(map[string]string{"a": fluxconfig.ConfigMapHash(cm), "b": "-"}))
		all := []any{"shoot--foo--a", "shoot--foo--b"}

		q := newQueue()
		h.Create(ctx, event.CreateEvent{Object: cm}, q)
		Expect(queued(q, 2)).To(ConsistOf(all...))
		h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, q)
		Expect(queued(q, 2)).To(ConsistOf(all...))
		h.Delete(ctx, event.DeleteEvent{Object: cm}, q)
		Expect(queued(q, 2)).To(ConsistOf(all...))
	})

	It("keeps the backoff of shoots whose reconciles are failing", func() {
		h := handler(seedWith(map[string]string{"healthy": "-", "failing": "-"}))
		limiter := workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
		q := workqueue.NewTypedRateLimitingQueue(limiter)
		failing := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shoot--foo--failing", Name: "shoot-flux"}}
		// Twelve failed reconciles, as the controller records them: each one doubles the delay.
		for range 12 {
			limiter.When(failing)
		}

		h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, q)
		Expect(queued(q, 1)).To(ConsistOf("shoot--foo--healthy"), "the failing shoot waits for its backoff (about 20s by now)")
		Expect(q.NumRequeues(failing)).To(BeNumerically(">", 12))
	})

	It("enqueues nothing for another project", func() {
		h := handler(seedWith(map[string]string{"a": "-"}))
		other := cm.DeepCopy()
		other.Namespace = "garden-other"
		q := newQueue()
		h.Create(ctx, event.CreateEvent{Object: other, IsInInitialList: true}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: other, ObjectNew: other}, q)
		Consistently(q.Len).WithTimeout(3 * CoalesceWindow).Should(BeZero())
	})

	It("enqueues each shoot of the project once for a burst of events within the window", func() {
		shoots := map[string]string{}
		for i := range 20 {
			shoots[fmt.Sprintf("s%02d", i)] = "-"
		}
		h := handler(seedWith(shoots))
		q := &countingQueue{TypedRateLimitingInterface: newQueue()}
		CoalesceWindow = time.Second

		start := time.Now()
		for i := range 100 {
			changed := cm.DeepCopy()
			changed.Data["repositoryUrl"] = fmt.Sprintf("https://git.example.com/org/repo-%d.git", i)
			h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: changed}, q)
		}
		Expect(time.Since(start)).To(BeNumerically("<", CoalesceWindow), "the burst must fit into the window for this spec to tell anything")
		Expect(q.Len()).To(BeZero(), "nothing before the window ends")

		Eventually(q.Len).WithTimeout(5 * time.Second).Should(Equal(20))
		Consistently(q.Len).WithTimeout(2 * CoalesceWindow).Should(Equal(20))
		Expect(q.adds()).To(HaveLen(20))
		Expect(q.adds()).To(HaveEach(1))

		// The next event opens a new window: the change after the burst is not lost.
		h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, q)
		Eventually(q.adds).WithTimeout(5 * time.Second).Should(HaveEach(2))
	})

	// A loop of edits must not make one reconcile per shoot and CoalesceWindow for as long as it
	// runs: each may write a new ManagedResource Secret per shoot.
	It("lengthens the window of a project that keeps editing", func() {
		DeferCleanup(func(old time.Duration) { MaxCoalesceWindow = old }, MaxCoalesceWindow)
		MaxCoalesceWindow = 4 * CoalesceWindow
		h := handler(seedWith(map[string]string{"a": "-", "b": "-"}))
		q := &countingQueue{TypedRateLimitingInterface: newQueue()}

		// Ten windows of CoalesceWindow long; growing windows end after 1, 3, 7 and 11 of them.
		stream := 10 * CoalesceWindow
		start := time.Now()
		for time.Since(start) < stream {
			h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, q)
			time.Sleep(CoalesceWindow / 10)
		}
		Eventually(q.adds).WithTimeout(5 * time.Second).Should(HaveKeyWithValue("shoot--foo--a", BeNumerically(">=", 3)))
		Consistently(q.adds).WithTimeout(2 * MaxCoalesceWindow).Should(HaveEach(BeNumerically("<=", 5)))
		Expect(q.adds()).To(HaveLen(2))
	})

	It("returns to CoalesceWindow once a project was quiet for its last window", func() {
		DeferCleanup(func(old time.Duration) { MaxCoalesceWindow = old }, MaxCoalesceWindow)
		MaxCoalesceWindow = 4 * CoalesceWindow
		m := &Mapper{last: map[string]lastWindow{}}
		now := time.Now()
		Expect(m.nextWindow("p", now)).To(Equal(CoalesceWindow), "first event")
		m.last["p"] = lastWindow{length: CoalesceWindow, end: now}
		Expect(m.nextWindow("p", now.Add(CoalesceWindow/2))).To(Equal(2 * CoalesceWindow))
		m.last["p"] = lastWindow{length: 2 * CoalesceWindow, end: now}
		Expect(m.nextWindow("p", now.Add(CoalesceWindow))).To(Equal(4 * CoalesceWindow))
		m.last["p"] = lastWindow{length: 4 * CoalesceWindow, end: now}
		Expect(m.nextWindow("p", now.Add(CoalesceWindow))).To(Equal(MaxCoalesceWindow), "bounded")
		Expect(m.nextWindow("p", now.Add(4*CoalesceWindow))).To(Equal(CoalesceWindow), "quiet for the last window")
		Expect(m.nextWindow("other", now)).To(Equal(CoalesceWindow), "another project")
	})

	It("enqueues the shoots of every project of a burst", func() {
		h := handler(seedWith(map[string]string{"a": "-"}))
		q := &countingQueue{TypedRateLimitingInterface: newQueue()}
		other := cm.DeepCopy()
		other.Namespace = "garden-other"
		h.Update(ctx, event.UpdateEvent{ObjectOld: other, ObjectNew: other}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, q)
		Expect(queued(q, 1)).To(ConsistOf("shoot--foo--a"), "the other project's window does not swallow this one's")
	})
})

// countingQueue counts the requests added to a queue, delayed or not.
type countingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]

	mu    sync.Mutex
	added map[string]int
}

func (q *countingQueue) count(req reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.added == nil {
		q.added = map[string]int{}
	}
	q.added[req.Namespace]++
}

func (q *countingQueue) adds() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return maps.Clone(q.added)
}

func (q *countingQueue) Add(req reconcile.Request) {
	q.count(req)
	q.TypedRateLimitingInterface.Add(req)
}

func (q *countingQueue) AddAfter(req reconcile.Request, d time.Duration) {
	q.count(req)
	q.TypedRateLimitingInterface.AddAfter(req, d)
}

func (q *countingQueue) AddRateLimited(req reconcile.Request) {
	q.count(req)
	q.TypedRateLimitingInterface.AddRateLimited(req)
}

var _ = Describe("extensionsWithDeletedConfigMap", func() {
	It("finds the shoots built from a project ConfigMap that no longer exists", func() {
		ctx := context.Background()
		scheme := runtime.NewScheme()
		Expect(extensionsv1alpha1.AddToScheme(scheme)).To(Succeed())
		withHash := func(ex *extensionsv1alpha1.Extension, hash string) *extensionsv1alpha1.Extension {
			ex.Status.ProviderStatus = encodeStatus(&fluxv1alpha1.FluxStatus{ProjectConfigHash: hash})
			return ex
		}
		var objs []client.Object
		add := func(name, project string, ex *extensionsv1alpha1.Extension) {
			s := shoot()
			s.Name, s.Namespace = name, project
			cluster := clusterObject(s)
			cluster.Name = "shoot--" + name
			ex.Namespace = cluster.Name
			objs = append(objs, cluster, ex)
		}
		newExtension := func(typ string) *extensionsv1alpha1.Extension {
			return &extensionsv1alpha1.Extension{
				ObjectMeta: metav1.ObjectMeta{Name: typ},
				Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: typ}},
			}
		}
		add("deleted", "garden-gone", withHash(newExtension(constants.ExtensionType), "abc"))
		add("present", "garden-here", withHash(newExtension(constants.ExtensionType), "abc"))
		add("never", "garden-gone2", newExtension(constants.ExtensionType))
		add("empty-hash", "garden-gone3", withHash(newExtension(constants.ExtensionType), ""))
		add("other-type", "garden-gone4", withHash(newExtension("other"), "abc"))
		seed := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
		present := legacyConfigMap(nil)
		present.Namespace = "garden-here"
		garden := fake.NewClientBuilder().WithObjects(present).Build()

		orphans, err := extensionsWithDeletedConfigMap(ctx, seed, garden)
		Expect(err).NotTo(HaveOccurred())
		Expect(orphans).To(HaveLen(1))
		Expect(orphans[0].Namespace).To(Equal("shoot--deleted"))
	})
})

func encodeStatus(status *fluxv1alpha1.FluxStatus) *runtime.RawExtension {
	raw, err := helper.EncodeStatus(status)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return raw
}

const projectNamespace = "garden-foo"

func legacyConfigMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: projectNamespace}, Data: data}
}

const seedNamespace = "shoot--foo--bar"

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
