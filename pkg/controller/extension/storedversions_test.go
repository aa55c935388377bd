// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"
	"strings"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

// fakeShoot is the shoot API server of the stored-version check in every spec of the package:
// without objects, a shoot whose CRDs need no migration.
var fakeShoot struct {
	objects []client.Object
	// refuse, if set, answers the migration's writes of objects.
	refuse  func(client.Object) error
	client  client.Client
	clients int
}

var _ = BeforeEach(func() {
	fakeShoot.objects, fakeShoot.refuse, fakeShoot.client, fakeShoot.clients = nil, nil, nil, 0
	DeferCleanup(func(f func(context.Context, client.Client, string, meta.RESTMapper) (client.Client, error)) {
		storedversions.NewShootClient = f
	}, storedversions.NewShootClient)
	storedversions.NewShootClient = func(_ context.Context, _ client.Client, _ string, mapper meta.RESTMapper) (client.Client, error) {
		fakeShoot.clients++
		if fakeShoot.client == nil {
			scheme := runtime.NewScheme()
			Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
			fakeShoot.client = fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
				WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}).WithObjects(fakeShoot.objects...).
				WithInterceptorFuncs(interceptor.Funcs{
					// The fake lists no metadata of objects it tracks as unstructured.
					List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
						m, ok := list.(*metav1.PartialObjectMetadataList)
						if !ok {
							return c.List(ctx, list, opts...)
						}
						all := &unstructured.UnstructuredList{}
						all.SetGroupVersionKind(m.GroupVersionKind())
						if err := c.List(ctx, all); err != nil {
							return err
						}
						for _, u := range all.Items {
							m.Items = append(m.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
								ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName()}})
						}
						return nil
					},
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						m, ok := obj.(*metav1.PartialObjectMetadata)
						if !ok {
							return c.Patch(ctx, obj, patch, opts...)
						}
						if fakeShoot.refuse != nil {
							if err := fakeShoot.refuse(obj); err != nil {
								return err
							}
						}
						u := &unstructured.Unstructured{}
						u.SetGroupVersionKind(m.GroupVersionKind())
						u.SetNamespace(m.Namespace)
						u.SetName(m.Name)
						return c.Patch(ctx, u, patch, opts...)
					},
				}).Build()
		}
		return fakeShoot.client, nil
	}
})

var _ = Describe("Stored-version migration", func() {
	const crdName = "ocirepositories.source.toolkit.fluxcd.io"
	var (
		ctx context.Context
		rec *recorder
		ex  *extensionsv1alpha1.Extension
		act *actuator
	)

	BeforeEach(func() {
		ctx = context.Background()
		rec = &recorder{}
		defaults, err := loader.Defaults()
		Expect(err).NotTo(HaveOccurred())
		cfg := *defaults
		cfg.Timeouts.ManagedResourceApplied = metav1.Duration{Duration: 5 * time.Second}
		DeferCleanup(func(interval time.Duration) { managedresource.PollInterval = interval }, managedresource.PollInterval)
		managedresource.PollInterval = 5 * time.Millisecond
		ex = &extensionsv1alpha1.Extension{
			ObjectMeta: metav1.ObjectMeta{Name: "shoot-flux", Namespace: seedNamespace},
			Spec: extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: constants.ExtensionType,
				ProviderConfig: providerConfig(`{"flux":{"version":"v2.9"}}`)}},
		}
		seed := newSeedClient(rec, clusterObject(shoot()), ex)
		act = NewActuator(seed, seed, fake.NewClientBuilder().Build(), events.NewFakeRecorder(100), cfg, nil).(*actuator)

		// The shoot ran Flux v2.7.5, whose OCIRepository stored objects at v1beta2 before v1.
		stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: "v2.7.5", Components: manifests.FluxComponents(), Namespace: "flux-system"})
		Expect(err).NotTo(HaveOccurred())
		crds, err := storedversions.CRDs(stream)
		Expect(err).NotTo(HaveOccurred())
		for _, crd := range crds {
			if crd.Name == crdName {
				crd.Status.StoredVersions = []string{"v1beta2", "v1"}
				fakeShoot.objects = append(fakeShoot.objects, crd.DeepCopy())
			}
		}
		for _, name := range []string{"a", "b", "c"} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"})
			u.SetNamespace("flux-system")
			u.SetName(name)
			fakeShoot.objects = append(fakeShoot.objects, u)
		}
	})

	reconcile := func() error {
		Expect(act.client.Get(ctx, client.ObjectKeyFromObject(ex), ex)).To(Succeed())
		return act.Reconcile(ctx, logr.Discard(), ex)
	}
	storedVersions := func() []string {
		Expect(fakeShoot.client).NotTo(BeNil(), "the shoot's CRDs were not read")
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(fakeShoot.client.Get(ctx, client.ObjectKey{Name: crdName}, crd)).To(Succeed())
		return crd.Status.StoredVersions
	}

	It("migrates before deploying the controllers, reports it, and checks once per set of releases", func() {
		Expect(reconcile()).To(Succeed())
		Expect(storedVersions()).To(Equal([]string{"v1"}))
		status := providerStatus(ex)
		Expect(status.StoredVersions).NotTo(BeNil())
		Expect(status.StoredVersions.CheckedFor).To(HavePrefix("flux v2.9.5 ("))
		Expect(status.StoredVersions.Migrated).To(Equal([]fluxv1alpha1.MigratedKind{{CRD: crdName, Kind: "OCIRepository", From: []string{"v1beta2"}, To: "v1", Objects: 3}}))
		Expect(status.StoredVersions.Time).NotTo(BeNil())
		Expect(fakeShoot.clients).To(Equal(1))

		Expect(reconcile()).To(Succeed())
		Expect(fakeShoot.clients).To(Equal(1), "a resync of the same releases reads nothing in the shoot")
		Expect(providerStatus(ex).StoredVersions).To(Equal(status.StoredVersions))
	})

	It("keeps the running controllers and names the CRD, the kind and the cause when the migration fails", func() {
		fakeShoot.refuse = func(obj client.Object) error {
			return apierrors.NewForbidden(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "ocirepositories"}, obj.GetName(),
				errors.New(`admission webhook "policy.example.com" denied the request`))
		}
		err := reconcile()
		Expect(err).To(MatchError(And(ContainSubstring("kept the running controllers"), ContainSubstring("CRD "+crdName+" (kind OCIRepository)"),
			ContainSubstring(`admission webhook "policy.example.com" denied the request`))))
		for _, w := range rec.reset() {
			Expect(w).NotTo(ContainSubstring(constants.ManagedResourceControllers), "the controllers ManagedResource is not written")
		}
		Expect(storedVersions()).To(Equal([]string{"v1beta2", "v1"}))
		Expect(ex.Status.ProviderStatus).To(BeNil())

		fakeShoot.refuse = nil
		Expect(reconcile()).To(Succeed())
		Expect(storedVersions()).To(Equal([]string{"v1"}))
		Expect(strings.Join(rec.reset(), "\n")).To(ContainSubstring(constants.ManagedResourceControllers))
	})

	It("reports a kind over the object bound as a configuration problem and keeps the running controllers", func() {
		DeferCleanup(func(l storedversions.Limits) { storedversions.ShootLimits = l }, storedversions.ShootLimits)
		storedversions.ShootLimits.MaxObjects = 2
		err := reconcile()
		Expect(err).To(MatchError(ContainSubstring("more than the limit of 2 objects")))
		Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
		for _, w := range rec.reset() {
			Expect(w).NotTo(ContainSubstring(constants.ManagedResourceControllers), "the controllers ManagedResource is not written")
		}
		Expect(storedVersions()).To(Equal([]string{"v1beta2", "v1"}))
	})
})
