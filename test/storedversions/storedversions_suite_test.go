// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package storedversions_test migrates stored versions in a real kube-apiserver: the API server
// is what refuses a CRD that drops a stored version and what re-encodes an object on a write.
package storedversions_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

func TestStoredVersions(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Stored Versions Migration Suite")
}

var (
	restConfig *rest.Config
	// k8s discovers the API server's kinds, like a user's kubectl.
	k8s client.Client
	// desired are the CRDs of the newest embedded Flux release.
	desired []apiextensionsv1.CustomResourceDefinition
	scheme  = runtime.NewScheme()
)

var _ = BeforeSuite(func() {
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	api, err := cluster.Start("storedversions", scheme, nil, cluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(api.Stop)
	restConfig, k8s = api.Config, api.Client

	stream, err := manifests.RenderFlux(manifests.FluxOptions{Version: manifests.NewestFluxVersion(), Components: manifests.FluxComponents(), Namespace: "flux-system"})
	Expect(err).NotTo(HaveOccurred())
	desired, err = storedversions.CRDs(stream)
	Expect(err).NotTo(HaveOccurred())
})

// shootClient returns a client like the extension's shoot client: a static mapper and responses
// bounded by shootclient.MaxResponseBytes.
func shootClient() client.Client {
	cfg := rest.CopyConfig(restConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return shootclient.LimitResponses(rt, shootclient.MaxResponseBytes)
	})
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: storedversions.RESTMapper(desired), HTTPClient: httpClient})
	Expect(err).NotTo(HaveOccurred())
	return c
}
