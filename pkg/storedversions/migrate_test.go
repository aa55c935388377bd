// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

// shoot is a fake shoot API server that pages lists like a real one and records the requests.
type shoot struct {
	client client.Client
	// failPatch, if set, answers a patch instead of the fake.
	failPatch func(ctx context.Context, obj client.Object) error
	// maxPage, if set, fails lists of larger pages like the shoot client's response limit.
	maxPage int64
	// managedFields are the objects' managedFields by name, which the fake does not keep.
	managedFields map[string][]metav1.ManagedFieldsEntry

	mu      sync.Mutex
	limits  []int64
	patched []string
	bodies  map[string]string
}

func newShoot(desired []apiextensionsv1.CustomResourceDefinition, objects ...client.Object) *shoot {
	s := &shoot{bodies: map[string]string{}}
	scheme := runtime.NewScheme()
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	s.client = fake.NewClientBuilder().WithScheme(scheme).
		WithRESTMapper(storedversions.RESTMapper(desired)).
		WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}).
		WithObjects(objects...).
		WithInterceptorFuncs(interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				lo := (&client.ListOptions{}).ApplyOptions(opts)
				s.mu.Lock()
				s.limits = append(s.limits, lo.Limit)
				s.mu.Unlock()
				if s.maxPage > 0 && (lo.Limit == 0 || lo.Limit > s.maxPage) {
					return fmt.Errorf("unexpected error when reading response body: %w", &shootclient.ResponseTooLargeError{URL: "https://shoot/apis", Limit: 2 << 20})
				}
				meta, ok := list.(*metav1.PartialObjectMetadataList)
				if !ok {
					return c.List(ctx, list, opts...)
				}
				// The fake lists no metadata of objects it tracks as unstructured, and ignores
				// limit and continue.
				all := &unstructured.UnstructuredList{}
				all.SetGroupVersionKind(meta.GroupVersionKind())
				if err := c.List(ctx, all, client.InNamespace(lo.Namespace)); err != nil {
					return err
				}
				meta.Items = nil
				for _, u := range all.Items {
					meta.Items = append(meta.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
						ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), ManagedFields: s.managedFields[u.GetName()]}})
				}
				if lo.Limit == 0 {
					return nil
				}
				// The fake ignores limit and continue.
				start := 0
				if lo.Continue != "" {
					start, _ = strconv.Atoi(lo.Continue)
				}
				total := len(meta.Items)
				end := min(start+int(lo.Limit), total)
				meta.Items = meta.Items[start:end]
				meta.Continue = ""
				if end < total {
					meta.Continue = strconv.Itoa(end)
				}
				return nil
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				meta, ok := obj.(*metav1.PartialObjectMetadata)
				if !ok {
					return c.Patch(ctx, obj, patch, opts...)
				}
				data, err := patch.Data(obj)
				Expect(err).NotTo(HaveOccurred())
				s.mu.Lock()
				s.patched = append(s.patched, obj.GetName())
				s.bodies[obj.GetName()] = string(data)
				s.mu.Unlock()
				if s.failPatch != nil {
					if err := s.failPatch(ctx, obj); err != nil {
						return err
					}
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(meta.GroupVersionKind())
				u.SetNamespace(meta.Namespace)
				u.SetName(meta.Name)
				return c.Patch(ctx, u, patch, opts...)
			},
		}).Build()
	return s
}

func ociRepository(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"})
	u.SetNamespace("flux-system")
	u.SetName(name)
	return u
}

func ociRepositoryObjects(n int) []client.Object {
	var objs []client.Object
	for i := range n {
		objs = append(objs, ociRepository(fmt.Sprintf("repo-%02d", i)))
	}
	return objs
}

func (s *shoot) crd(name string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Expect(s.client.Get(context.Background(), client.ObjectKey{Name: name}, crd)).To(Succeed())
	return crd
}

var _ = Describe("Migrate", func() {
	var (
		ctx     context.Context
		desired []apiextensionsv1.CustomResourceDefinition
		stale   apiextensionsv1.CustomResourceDefinition
		limits  storedversions.Limits
	)

	BeforeEach(func() {
		ctx = context.Background()
		desired = releaseCRDs("v2.9.5")
		// v2.7.5's CRD with objects once stored at v1beta2.
		stale = live(crdNamed(releaseCRDs("v2.7.5"), ociRepositories), "v1beta2", "v1")
		limits = storedversions.Limits{MaxObjects: 100, PageSize: 3, Timeout: time.Minute}
		// The fake serves a CRD's change at once.
		DeferCleanup(func(d time.Duration) { storedversions.StorageSwitchSettle = d }, storedversions.StorageSwitchSettle)
		storedversions.StorageSwitchSettle = 0
	})

	migrate := func(s *shoot) (storedversions.Result, error) {
		plan := storedversions.Plan([]apiextensionsv1.CustomResourceDefinition{*s.crd(ociRepositories)}, desired)
		Expect(plan).To(HaveLen(1))
		return storedversions.Migrate(ctx, s.client, plan, limits)
	}

	It("rewrites every object page by page and trims storedVersions to the storage version", func() {
		s := newShoot(desired, append(ociRepositoryObjects(7), stale.DeepCopy())...)
		result, err := migrate(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Kinds).To(Equal([]storedversions.Kind{{CRD: ociRepositories, Kind: "OCIRepository", From: []string{"v1beta2"}, To: "v1", Objects: 7}}))
		Expect(s.patched).To(ConsistOf("repo-00", "repo-01", "repo-02", "repo-03", "repo-04", "repo-05", "repo-06"))
		Expect(s.bodies).To(HaveKeyWithValue("repo-03", "{}"))
		Expect(s.limits).To(Equal([]int64{3, 3, 3}))
		Expect(s.crd(ociRepositories).Status.StoredVersions).To(Equal([]string{"v1"}))
	})

	It("moves managedFields entries of another version to the storage version", func() {
		s := newShoot(desired, ociRepository("tenant"), stale.DeepCopy())
		s.managedFields = map[string][]metav1.ManagedFieldsEntry{"tenant": {
			{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "source.toolkit.fluxcd.io/v1beta2",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)},
			{Manager: "source-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "source.toolkit.fluxcd.io/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`), Subresource: "status"},
		}}
		_, err := migrate(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.bodies["tenant"]).To(ContainSubstring(`"apiVersion":"source.toolkit.fluxcd.io/v1"`))
		Expect(s.bodies["tenant"]).NotTo(ContainSubstring("v1beta2"))
		Expect(s.bodies["tenant"]).To(And(ContainSubstring(`"manager":"kustomize-controller"`), ContainSubstring(`"manager":"source-controller"`)))
	})

	It("lists in smaller pages when a page exceeds the response limit", func() {
		limits.PageSize = 8
		s := newShoot(desired, append(ociRepositoryObjects(5), stale.DeepCopy())...)
		s.maxPage = 2
		result, err := migrate(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Kinds[0].Objects).To(Equal(5))
		Expect(s.limits).To(Equal([]int64{8, 4, 2, 2, 2}))
	})

	It("fails a kind with more objects than the bound and leaves storedVersions", func() {
		limits.MaxObjects = 5
		s := newShoot(desired, append(ociRepositoryObjects(6), stale.DeepCopy())...)
		_, err := migrate(s)
		Expect(err).To(MatchError(storedversions.ErrTooManyObjects))
		Expect(err).To(MatchError(ContainSubstring("CRD ocirepositories.source.toolkit.fluxcd.io (kind OCIRepository)")))
		Expect(err).To(MatchError(ContainSubstring("the limit of 5 objects")))
		var e *storedversions.Error
		Expect(errors.As(err, &e)).To(BeTrue())
		Expect(e.Objects).To(Equal(5))
		Expect(s.crd(ociRepositories).Status.StoredVersions).To(Equal([]string{"v1beta2", "v1"}))
	})

	It("stops at its deadline and leaves storedVersions", func() {
		limits.Timeout = 50 * time.Millisecond
		s := newShoot(desired, append(ociRepositoryObjects(3), stale.DeepCopy())...)
		s.failPatch = func(ctx context.Context, _ client.Object) error {
			<-ctx.Done()
			return ctx.Err()
		}
		_, err := migrate(s)
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Expect(err).To(MatchError(ContainSubstring("exceeded its limit of 50ms")))
		Expect(err).To(MatchError(ContainSubstring("kind OCIRepository")))
		Expect(s.crd(ociRepositories).Status.StoredVersions).To(Equal([]string{"v1beta2", "v1"}))
	})

	It("fails with the cause when a webhook refuses an update and leaves storedVersions", func() {
		s := newShoot(desired, append(ociRepositoryObjects(3), stale.DeepCopy())...)
		s.failPatch = func(_ context.Context, obj client.Object) error {
			if obj.GetName() == "repo-01" {
				return apierrors.NewForbidden(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "ocirepositories"}, obj.GetName(),
					errors.New(`admission webhook "policy.example.com" denied the request`))
			}
			return nil
		}
		_, err := migrate(s)
		Expect(apierrors.IsForbidden(err)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring(`failed rewriting flux-system/repo-01`)))
		Expect(err).To(MatchError(ContainSubstring(`admission webhook "policy.example.com" denied the request`)))
		Expect(s.crd(ociRepositories).Status.StoredVersions).To(Equal([]string{"v1beta2", "v1"}))
	})

	It("gives up on a conflict storm", func() {
		s := newShoot(desired, append(ociRepositoryObjects(1), stale.DeepCopy())...)
		s.failPatch = func(_ context.Context, obj client.Object) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "source.toolkit.fluxcd.io", Resource: "ocirepositories"}, obj.GetName(), errors.New("the object has been modified"))
		}
		_, err := migrate(s)
		Expect(apierrors.IsConflict(err)).To(BeTrue())
		Expect(len(s.patched)).To(BeNumerically(">", 1), "a conflict is retried")
		Expect(s.crd(ociRepositories).Status.StoredVersions).To(Equal([]string{"v1beta2", "v1"}))
	})

	It("makes a CRD of an older release store at the desired version, keeping its versions served", func() {
		older := live(olderCRD(crdNamed(desired, ociRepositories), "v1beta2"), "v1beta2")
		s := newShoot(desired, append(ociRepositoryObjects(2), older.DeepCopy())...)
		result, err := migrate(s)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Kinds[0].Objects).To(Equal(2))
		crd := s.crd(ociRepositories)
		Expect(crd.Spec.Versions).To(ConsistOf(
			And(HaveField("Name", "v1beta2"), HaveField("Served", true), HaveField("Storage", false)),
			And(HaveField("Name", "v1"), HaveField("Served", true), HaveField("Storage", true), HaveField("Schema", Not(BeNil())))))
		Expect(crd.Status.StoredVersions).To(Equal([]string{"v1"}))
	})

	It("refuses to change the storage version of a CRD with a conversion webhook", func() {
		older := live(olderCRD(crdNamed(desired, ociRepositories), "v1beta2"), "v1beta2")
		older.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		s := newShoot(desired, older.DeepCopy())
		_, err := migrate(s)
		Expect(err).To(MatchError(ContainSubstring("converts with strategy Webhook")))
		Expect(versionNames(*s.crd(ociRepositories))).To(Equal([]string{"v1beta2"}))
	})
})
