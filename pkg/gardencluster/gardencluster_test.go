// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gardencluster_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

// failFast bounds a request that must not wait for the garden.
const failFast = time.Second

var _ = Describe("Cluster", func() {
	var ctx context.Context

	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.Background())
		DeferCleanup(cancel)
	})

	// start runs the garden access against host until the spec ends.
	start := func(host string) *gardencluster.Cluster {
		GinkgoHelper()
		c, err := gardencluster.New(&rest.Config{Host: host}, logr.Discard(), 0)
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.Start(runCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(BeNil()))
		})
		return c
	}

	configMapKey := client.ObjectKey{Namespace: "garden-foo", Name: constants.ProjectConfigMapName}

	It("fails requests at once with the garden's refusal as the reason", func() {
		c := start("https://" + closedPort())

		Eventually(func() error {
			return c.Client().Get(ctx, configMapKey, &corev1.ConfigMap{})
		}).Should(MatchError(ContainSubstring("connection refused")))
		err := c.Client().Get(ctx, configMapKey, &corev1.ConfigMap{})
		Expect(err).To(MatchError(gardencluster.ErrNotReachable))
		Expect(err.Error()).To(HavePrefix("garden cluster is not reachable: "))
		Expect(c.Err()).To(MatchError(gardencluster.ErrNotReachable))
		Expect(c.Synced()).NotTo(BeClosed())
	})

	It("reports a reset connection, which client-go retries, within a probe's timeout", func() {
		DeferCleanup(func(timeout time.Duration) { gardencluster.ProbeTimeout = timeout }, gardencluster.ProbeTimeout)
		gardencluster.ProbeTimeout = 500 * time.Millisecond
		c := start("https://" + resettingListener())

		Eventually(func() error {
			return c.Client().Get(ctx, configMapKey, &corev1.ConfigMap{})
		}).WithTimeout(5 * time.Second).Should(MatchError(ContainSubstring("connection reset by peer")))
		Expect(c.Err()).To(MatchError(gardencluster.ErrNotReachable))
	})

	It("fails requests at once while the garden does not answer", func() {
		c := start("https://" + silentListener())

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-foo", Name: "shoot-flux-deploy-key"}}
		requests := map[string]func() error{
			"get configmap": func() error { return c.Client().Get(ctx, configMapKey, &corev1.ConfigMap{}) },
			"list configmaps": func() error {
				return c.Client().List(ctx, &corev1.ConfigMapList{}, client.InNamespace("garden-foo"))
			},
			"get secret":    func() error { return c.Client().Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}) },
			"create secret": func() error { return c.Client().Create(ctx, secret.DeepCopy()) },
			"update secret": func() error { return c.Client().Update(ctx, secret.DeepCopy()) },
			"delete secret": func() error { return c.Client().Delete(ctx, secret.DeepCopy()) },
			"patch status": func() error {
				return c.Client().Status().Patch(ctx, secret.DeepCopy(), client.MergeFrom(secret))
			},
		}
		for name, request := range requests {
			began := time.Now()
			err := request()
			Expect(time.Since(began)).To(BeNumerically("<", failFast), name)
			Expect(err).To(MatchError(gardencluster.ErrNotReachable), name)
			Expect(err).To(MatchError(ContainSubstring("no answer yet")), name)
		}
	})

	It("starts a source only once the garden cache synced", func() {
		c := start("https://" + closedPort())
		started := make(chan struct{})
		src := c.WhenSynced(source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			close(started)
			return nil
		}))
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		DeferCleanup(queue.ShutDown)

		Expect(src.Start(ctx, queue)).To(Succeed())
		Consistently(started).WithTimeout(2 * time.Second).ShouldNot(BeClosed())
	})
})

// closedPort returns a loopback address nothing listens on.
func closedPort() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	return addr
}

// resettingListener returns a loopback address that accepts connections and resets them at once.
func resettingListener() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	})
	DeferCleanup(func() {
		Expect(l.Close()).To(Succeed())
		wg.Wait()
	})
	return l.Addr().String()
}

// silentListener returns a loopback address that accepts connections and never answers, like a
// garden behind a network that drops packets after the handshake.
func silentListener() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	DeferCleanup(func() {
		Expect(l.Close()).To(Succeed())
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

var _ = Describe("TransformProjectConfigMap", func() {
	It("keeps what the extension reads and drops the rest", func() {
		now := metav1.Now()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: constants.ProjectConfigMapName, Namespace: "garden-foo", UID: "1", ResourceVersion: "7", DeletionTimestamp: &now,
				Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 100000)},
				Labels:          map[string]string{"team": "a"},
				ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				OwnerReferences: []metav1.OwnerReference{{Name: "owner"}},
				Finalizers:      []string{"example.com/keep"},
			},
			Data:       map[string]string{"config.yaml": "flux: {}"},
			BinaryData: map[string][]byte{"blob": make([]byte, 100000)},
		}
		out, err := gardencluster.TransformProjectConfigMap(0)(cm)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: "garden-foo", UID: "1", ResourceVersion: "7", DeletionTimestamp: &now},
			Data:       map[string]string{"config.yaml": "flux: {}"},
			BinaryData: map[string][]byte{"blob": nil},
		}))
	})

	It("passes on what is not a ConfigMap", func() {
		tombstone := toolscache.DeletedFinalStateUnknown{Key: "garden-foo/flux-config"}
		Expect(gardencluster.TransformProjectConfigMap(1)(tombstone)).To(Equal(tombstone))
	})

	It("keeps only the size of a ConfigMap over the limit, which the limit check reports as before", func() {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: "garden-foo", UID: "1", ResourceVersion: "7"},
			Data:       map[string]string{"config.yaml": strings.Repeat("x", 990)},
			BinaryData: map[string][]byte{"blob": make([]byte, 10)},
		}
		Expect(gardencluster.TransformProjectConfigMap(1015)(cm)).To(HaveField("Data", cm.Data), "at the limit: 11 + 990 + 4 + 10 bytes")
		out, err := gardencluster.TransformProjectConfigMap(1014)(cm)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: constants.ProjectConfigMapName, Namespace: "garden-foo", UID: "1", ResourceVersion: "7",
				Annotations: map[string]string{constants.AnnotationDroppedDataBytes: "1015"}},
		}))
		limits := configv1alpha1.DefaultLimits()
		limits.ProjectConfigMapMaxBytes = 1014
		Expect(fluxconfig.ValidateConfigMapLimits(out.(*corev1.ConfigMap), limits)).To(MatchError(ContainSubstring(
			"ConfigMap garden-foo/flux-config: data: Too long: the keys and values of data and binaryData have 1015 bytes, more than the operator's limit of 1014 bytes (limits.projectConfigMapMaxBytes)")))
	})
})
