// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package adoption_test

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/adoption"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
)

// fakeControllers is the controllers' ManagedResource as Leave sees it.
type fakeControllers struct {
	handover *managedresource.Handover
	exists   bool
	deployed []managedresource.Handover
}

func (f *fakeControllers) HandedOver(context.Context) (*managedresource.Handover, error) {
	return f.handover, nil
}

func (f *fakeControllers) Exists(context.Context) (bool, error) { return f.exists, nil }

func (f *fakeControllers) DeployHandedOver(_ context.Context, h managedresource.Handover) error {
	f.deployed = append(f.deployed, h)
	return nil
}

var _ = Describe("Leave", func() {
	var (
		ctrls *fakeControllers
		reads int
		unfit = errors.New("flux.version: Flux v2.9 supports Kubernetes 1.34 to 1.36, the shoot runs 1.33")
	)
	request := func(objs ...client.Object) adoption.Request {
		return adoption.Request{
			Controllers: ctrls,
			Shoot: func(context.Context) (client.Reader, error) {
				reads++
				scheme := runtime.NewScheme()
				Expect(appsv1.AddToScheme(scheme)).To(Succeed())
				return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), nil
			},
			Namespace: "flux-system",
			Selected:  "v2.8.3",
		}
	}
	sourceController := func(labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "source-controller", Labels: labels}}
	}
	selfManaged := map[string]string{"kustomize.toolkit.fluxcd.io/name": "flux-system", "app.kubernetes.io/version": "v2.9.2"}

	BeforeEach(func() {
		ctrls, reads = &fakeControllers{}, 0
	})

	It("reads nothing in a shoot whose controllers the extension deployed", func(ctx SpecContext) {
		ctrls.exists = true
		req := request(sourceController(selfManaged))
		warning, err := adoption.Leave(ctx, logr.Discard(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(BeEmpty())
		Expect(reads).To(BeZero())
		Expect(ctrls.deployed).To(BeEmpty())
	})

	It("hands the controllers over to a repository that manages Flux, with its release", func(ctx SpecContext) {
		warning, err := adoption.Leave(ctx, logr.Discard(), request(sourceController(selfManaged)))
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(ContainSubstring("Kustomization flux-system/flux-system of the shoot applies the Flux controllers"))
		Expect(ctrls.deployed).To(HaveLen(1))
		Expect(ctrls.deployed[0].Version).To(Equal("v2.9.2"))
	})

	It("fails in continuous management instead of fighting the repository, and writes nothing", func(ctx SpecContext) {
		req := request(sourceController(selfManaged))
		req.Continuous = true
		_, err := adoption.Leave(ctx, logr.Discard(), req)
		var cfgErr *configerror.Error
		Expect(errors.As(err, &cfgErr)).To(BeTrue(), "%v", err)
		Expect(err).To(MatchError(ContainSubstring("set flux.management to handover")))
		Expect(ctrls.deployed).To(BeEmpty())
	})

	It("leaves a Flux of a newer minor than the selection, and takes over an older one", func(ctx SpecContext) {
		warning, err := adoption.Leave(ctx, logr.Discard(), request(sourceController(map[string]string{"app.kubernetes.io/version": "v2.9.2"})))
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(ContainSubstring("a newer minor than the selected v2.8.3"))
		Expect(ctrls.deployed).To(HaveLen(1))

		ctrls = &fakeControllers{}
		warning, err = adoption.Leave(ctx, logr.Discard(), request(sourceController(map[string]string{"app.kubernetes.io/version": "v2.7.1"})))
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(BeEmpty())
		Expect(ctrls.deployed).To(BeEmpty())
	})

	It("keeps any Flux the shoot runs when no embedded release fits, and fails with the reason when it runs none", func(ctx SpecContext) {
		req := request(sourceController(map[string]string{"app.kubernetes.io/version": "v2.4.0"}))
		req.Unfit = unfit
		warning, err := adoption.Leave(ctx, logr.Discard(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(HavePrefix("Flux v2.9 supports Kubernetes 1.34 to 1.36"))
		Expect(warning).To(ContainSubstring("Flux v2.4.0"))
		Expect(ctrls.deployed).To(ConsistOf(HaveField("Version", "v2.4.0")))

		ctrls = &fakeControllers{}
		req = request()
		req.Unfit = unfit
		_, err = adoption.Leave(ctx, logr.Discard(), req)
		Expect(err).To(MatchError(unfit))
	})

	It("reads nothing in a hibernated shoot and keeps a handover made before", func(ctx SpecContext) {
		req := request(sourceController(selfManaged))
		req.Hibernated, req.Unfit = true, unfit
		_, err := adoption.Leave(ctx, logr.Discard(), req)
		Expect(err).To(MatchError(unfit))

		ctrls.handover = &managedresource.Handover{Version: "v2.4.0"}
		warning, err := adoption.Leave(ctx, logr.Discard(), req)
		Expect(err).NotTo(HaveOccurred())
		Expect(warning).To(BeEmpty())
		Expect(reads).To(BeZero())
	})
})
