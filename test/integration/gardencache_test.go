package integration

import (
	"context"
	"strings"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
)

var _ = Describe("Garden cache", func() {
	It("keeps only the project ConfigMaps named flux-config, and of them only what the extension reads", func(ctx SpecContext) {
		projectNamespace := newProject(ctx, "gcache")
		// kubectl apply keeps the whole object in an annotation: a copy the cache must not keep.
		lastApplied := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 100000)}
		other := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: "other"},
			Data:       map[string]string{constants.ConfigMapKeyConfig: "flux: {}"},
		}
		Expect(sb.Garden.Client.Create(ctx, other)).To(Succeed())
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: constants.ProjectConfigMapName, Annotations: lastApplied, Labels: map[string]string{"team": "a"}},
			Data:       map[string]string{constants.ConfigMapKeyConfig: "flux: {}"},
			BinaryData: map[string][]byte{"blob": make([]byte, 100000)},
		}
		Expect(sb.Garden.Client.Create(ctx, cm)).To(Succeed())

		garden, err := gardencluster.New(sb.Garden.Config, logr.Discard())
		Expect(err).NotTo(HaveOccurred())
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- garden.Start(runCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).Should(Receive(BeNil()))
		})
		Eventually(garden.Synced()).WithTimeout(shootTimeout).Should(BeClosed())

		expectTrimmed := func(g Gomega, want map[string]string) {
			cached := &corev1.ConfigMap{}
			g.Expect(garden.Client().Get(ctx, client.ObjectKeyFromObject(cm), cached)).To(Succeed())
			g.Expect(cached.Data).To(Equal(want))
			g.Expect(cached.BinaryData).To(HaveKeyWithValue("blob", BeEmpty()))
			g.Expect(cached.Annotations).To(BeEmpty())
			g.Expect(cached.Labels).To(BeEmpty())
			g.Expect(cached.ManagedFields).To(BeEmpty())
		}
		By("listing")
		expectTrimmed(Default, cm.Data)
		err = garden.Client().Get(ctx, client.ObjectKeyFromObject(other), &corev1.ConfigMap{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a ConfigMap of another name is not cached, got %v", err)

		By("watching")
		Expect(sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data = map[string]string{constants.ConfigMapKeyConfig: "flux: {version: v2}"}
		cm.Annotations["more"] = strings.Repeat("y", 1000)
		Expect(sb.Garden.Client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) { expectTrimmed(g, cm.Data) }).Should(Succeed())
	})
})
