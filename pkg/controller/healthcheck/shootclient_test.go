// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package healthcheck_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/gardener/gardener/extensions/pkg/controller/healthcheck"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// hugeDiscoveryBytes is the size of the discovery document of the hostile shoot: tens of MB, as
// one CRD with many versions and categories makes it.
const hugeDiscoveryBytes = 32 << 20

var (
	hugeDiscoveryOnce sync.Once
	hugeDiscovery     []byte
)

// hugeGroupList is an /apis document of hugeDiscoveryBytes that also lists the bootstrap kinds'
// groups, so that a client that discovers can find them.
func hugeGroupList() []byte {
	hugeDiscoveryOnce.Do(func() {
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gvk := range bootstrap.AllObjectKinds() {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gvk.GroupVersion().String(), Version: gvk.Version}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gvk.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
		}
		raw, err := json.Marshal(list)
		Expect(err).NotTo(HaveOccurred())
		var b strings.Builder
		b.Grow(hugeDiscoveryBytes + 1024)
		b.Write(raw[:len(raw)-2]) // up to the end of the groups list: `]}`
		b.WriteString(`,{"name":"huge.example.com","versions":[`)
		for i := 0; b.Len() < hugeDiscoveryBytes; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"groupVersion":"huge.example.com/v%d","version":"v%d"}`, i, i)
		}
		b.WriteString(`],"preferredVersion":{"groupVersion":"huge.example.com/v0","version":"v0"}}]}`)
		hugeDiscovery = []byte(b.String())
	})
	return hugeDiscovery
}

// fakeShoot is a shoot API server that serves the bootstrap objects, a huge discovery document,
// and records the paths it was asked for and the bytes it sent.
type fakeShoot struct {
	server *httptest.Server

	mu      sync.Mutex
	paths   []string
	sent    int64
	objects map[string][]byte
	// lengthless sends object responses without Content-Length.
	lengthless bool
}

func newFakeShoot() *fakeShoot {
	s := &fakeShoot{objects: map[string][]byte{}}
	s.server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	s.server.Config.ErrorLog = log.New(io.Discard, "", 0)
	DeferCleanup(s.server.Close)
	return s
}

// plural is the resource of a bootstrap kind, as its CRD names it.
func plural(kind string) string {
	return strings.Replace(strings.ToLower(kind)+"s", "repositorys", "repositories", 1)
}

func objectPath(gvk schema.GroupVersionKind, namespace string) string {
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s/%s", gvk.Group, gvk.Version, namespace, plural(gvk.Kind), constants.BootstrapName)
}

// add serves a ready bootstrap object of gvk in namespace, with extra bytes in its status.
func (s *fakeShoot) add(gvk schema.GroupVersionKind, namespace string, extra int) {
	obj := map[string]any{
		"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
		"metadata": map[string]any{"name": constants.BootstrapName, "namespace": namespace},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded"}},
			"padding":    strings.Repeat("x", extra),
		},
	}
	raw, err := json.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	s.objects[objectPath(gvk, namespace)] = raw
}

func (s *fakeShoot) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	body, found := s.objects[r.URL.Path]
	lengthless := s.lengthless
	s.mu.Unlock()
	status := http.StatusOK
	switch {
	case r.URL.Path == "/api":
		body = []byte(`{"kind":"APIVersions","versions":["v1"]}`)
	case r.URL.Path == "/apis":
		body = hugeGroupList()
	case found:
		if !lengthless {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
	default:
		body = s.resourceList(r.URL.Path)
		if body == nil {
			status = http.StatusNotFound
			body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// Written in pieces, so that a response without Content-Length goes out chunked.
	for len(body) > 0 {
		n, err := w.Write(body[:min(len(body), 64<<10)])
		s.mu.Lock()
		s.sent += int64(n)
		s.mu.Unlock()
		if err != nil {
			return
		}
		body = body[n:]
	}
}

// resourceList is the discovery of one of the bootstrap kinds' group versions.
func (s *fakeShoot) resourceList(path string) []byte {
	for _, gvk := range bootstrap.AllObjectKinds() {
		if path != "/apis/"+gvk.GroupVersion().String() {
			continue
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gvk.GroupVersion().String()}
		for _, other := range bootstrap.AllObjectKinds() {
			if other.GroupVersion() == gvk.GroupVersion() {
				list.APIResources = append(list.APIResources, metav1.APIResource{Name: plural(other.Kind), Namespaced: true, Kind: other.Kind, Verbs: []string{"get"}})
			}
		}
		raw, err := json.Marshal(list)
		Expect(err).NotTo(HaveOccurred())
		return raw
	}
	return nil
}

func (s *fakeShoot) requested() ([]string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...), s.sent
}

var _ = Describe("Health check shoot client", func() {
	const namespace = "shoot--foo--hostile"
	request := types.NamespacedName{Namespace: namespace, Name: "shoot-flux"}

	var shoot *fakeShoot

	BeforeEach(func() {
		shoot = newFakeShoot()
	})

	// checker returns a run of the health check of the Extension with status, the seed ready.
	checker := func(status *fluxv1alpha1.FluxStatus) func() healthcheck.Result {
		ex := &extensionsv1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: request.Name}}
		raw, err := json.Marshal(status)
		Expect(err).NotTo(HaveOccurred())
		ex.Status.ProviderStatus = &k8sruntime.RawExtension{Raw: raw}
		access := shootAccessTo(namespace, shoot.server.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: shoot.server.Certificate().Raw}))
		mgr := seedManager{client: fake.NewClientBuilder().WithScheme(kubernetes.SeedScheme).WithObjects(access, ex).Build()}
		actuator := NewActuator(mgr, BootstrapChecks(nil), extensionsconfigv1alpha1.RESTOptions{Timeout: ptr.To(10 * time.Second)}, nil)
		return func() healthcheck.Result {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			results, err := actuator.ExecuteHealthCheckFunctions(ctx, logr.Discard(), request)
			Expect(err).NotTo(HaveOccurred())
			Expect(*results).To(HaveLen(1))
			return (*results)[0]
		}
	}
	run := func(status *fluxv1alpha1.FluxStatus) healthcheck.Result { return checker(status)() }

	// Before, every check discovered the shoot's API: with this document one check allocated
	// several times its 32 MiB, and ten workers at once more than the chart's memory limit.
	DescribeTable("reads the bootstrap objects and no discovery document, whatever its size",
		func(status *fluxv1alpha1.FluxStatus, namespace string, kinds ...schema.GroupVersionKind) {
			hugeGroupList()
			var objects []string
			for _, gvk := range kinds {
				shoot.add(gvk, namespace, 0)
				objects = append(objects, objectPath(gvk, namespace))
			}
			check := checker(status)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			result := check()
			runtime.ReadMemStats(&after)

			Expect(result.Status).To(Equal(gardencorev1beta1.ConditionTrue), result.GetDetails())
			paths, sent := shoot.requested()
			GinkgoWriter.Printf("check allocated %d bytes, shoot sent %d bytes\n", after.TotalAlloc-before.TotalAlloc, sent)
			Expect(paths).To(Equal(objects), "the check asks for its objects only, no discovery")
			Expect(sent).To(BeNumerically("<", 64<<10))
			// Everything this process allocated during the run, a fraction of the document.
			Expect(after.TotalAlloc - before.TotalAlloc).To(BeNumerically("<", uint64(hugeDiscoveryBytes/4)))
		},
		Entry("kluctl", &fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"},
			fluxv1alpha1.DefaultKluctlNamespace, bootstrap.KluctlDeploymentGVK),
		Entry("flux with a git repository", &fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "flux"},
			fluxv1alpha1.DefaultFluxNamespace, bootstrap.GitRepositoryGVK, bootstrap.KustomizationGVK),
		Entry("flux with an OCI artifact", &fluxv1alpha1.FluxStatus{Repository: "oci://registry.example.com/fleet", BootstrapMode: "flux"},
			fluxv1alpha1.DefaultFluxNamespace, bootstrap.OCIRepositoryGVK, bootstrap.KustomizationGVK),
	)

	// No object the check reads is over etcd's limit; a larger response fails the check with the
	// limit instead of being read into memory.
	DescribeTable("fails the check on a bootstrap object over the response limit",
		func(lengthless bool) {
			shoot.lengthless = lengthless
			shoot.add(bootstrap.KluctlDeploymentGVK, fluxv1alpha1.DefaultKluctlNamespace, shootclient.MaxResponseBytes+1)
			result := run(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"})
			Expect(result.FailedChecks).To(Equal(1))
			Expect(result.GetDetails()).To(ContainSubstring(fmt.Sprintf("exceeds the limit of %d bytes (2 MiB)", shootclient.MaxResponseBytes)))
		},
		Entry("with Content-Length", false),
		Entry("without Content-Length", true),
	)

	It("reads a bootstrap object just below the response limit", func() {
		shoot.add(bootstrap.KluctlDeploymentGVK, fluxv1alpha1.DefaultKluctlNamespace, shootclient.MaxResponseBytes-1024)
		result := run(&fluxv1alpha1.FluxStatus{Repository: "ssh://git@example.com/repo", BootstrapMode: "kluctl"})
		Expect(result.Status).To(Equal(gardencorev1beta1.ConditionTrue), result.GetDetails())
	})
})
