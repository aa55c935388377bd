// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/gardencluster"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

// startGardenCache starts the extension's garden access against the sandbox's garden, its
// ConfigMaps bounded by maxConfigMapBytes, until the spec ends, and waits for its sync.
func startGardenCache(ctx context.Context, maxConfigMapBytes int) *gardencluster.Cluster {
	GinkgoHelper()
	garden, err := gardencluster.New(sb.Garden.Config, logr.Discard(), maxConfigMapBytes)
	Expect(err).NotTo(HaveOccurred())
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- garden.Start(runCtx) }()
	DeferCleanup(func() {
		stop()
		Eventually(done).Should(Receive(BeNil()))
	})
	Eventually(garden.Synced()).WithTimeout(shootTimeout).Should(BeClosed())
	return garden
}

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

		garden := startGardenCache(ctx, 0)

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
		err := garden.Client().Get(ctx, client.ObjectKeyFromObject(other), &corev1.ConfigMap{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a ConfigMap of another name is not cached, got %v", err)

		By("watching")
		Expect(sb.Garden.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data = map[string]string{constants.ConfigMapKeyConfig: "flux: {version: v2}"}
		cm.Annotations["more"] = strings.Repeat("y", 1000)
		Expect(sb.Garden.Client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) { expectTrimmed(g, cm.Data) }).Should(Succeed())
	})

	// With the admission down (the sandbox's garden runs none), a project admin can write a
	// ConfigMap of up to the API server's limit; the seed keeps its size, not its data.
	It("keeps only the size of a project ConfigMap over the limit, and the project's shoots report the limit", func(ctx SpecContext) {
		project := "gbig"
		projectNamespace := newProject(ctx, project)
		limit := int(sb.ExtensionConfig().Limits.ProjectConfigMapMaxBytes)
		big := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: projectNamespace, Name: constants.ProjectConfigMapName},
			Data:       legacyConfig(publicURL, "main", "public"),
			BinaryData: map[string][]byte{"blob": make([]byte, 900<<10)},
		}
		Expect(sb.Garden.Client.Create(ctx, big)).To(Succeed())
		size := fluxconfig.ConfigMapDataSize(big)

		garden := startGardenCache(ctx, limit)
		cached := &corev1.ConfigMap{}
		Expect(garden.Client().Get(ctx, client.ObjectKeyFromObject(big), cached)).To(Succeed())
		Expect(cached.Data).To(BeEmpty())
		Expect(cached.BinaryData).To(BeEmpty())
		Expect(cached.Annotations).To(Equal(map[string]string{constants.AnnotationDroppedDataBytes: strconv.Itoa(size)}))

		h := createShoot(ctx, sandbox.ShootSpec{Project: project, Name: "one", SharedControlPlane: true})
		lastErr, err := h.WaitError(ctx, errorTimeout)
		Expect(err).NotTo(HaveOccurred())
		Expect(lastErr.Description).To(ContainSubstring(fmt.Sprintf("ConfigMap %s/%s: data: Too long: the keys and values of data and binaryData have %d bytes, more than the operator's limit of %d bytes (limits.projectConfigMapMaxBytes)",
			projectNamespace, constants.ProjectConfigMapName, size, limit)))
		Expect(lastErr.Codes).To(ContainElement(gardencorev1beta1.ErrorConfigurationProblem))
	})
})
