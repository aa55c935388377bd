// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package publish_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/gardener/gardener/pkg/api/core/validation"
	operatorvalidation "github.com/gardener/gardener/pkg/api/operator/v1alpha1/validation"
	"github.com/gardener/gardener/pkg/apis/core"
	"github.com/gardener/gardener/pkg/apis/core/install"
	gardencorev1 "github.com/gardener/gardener/pkg/apis/core/v1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/gardener/gardener/pkg/chartrenderer"
	chartutils "github.com/gardener/gardener/pkg/utils/chart"
	"github.com/gardener/gardener/pkg/utils/oci"
	secretsutils "github.com/gardener/gardener/pkg/utils/secrets"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/ociregistry"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	extensionName = "gardener-extension-shoot-flux"
	admissionName = extensionName + "-admission"
	// tlsSecretName is the Secret example/extension/patch-admission.yaml references.
	tlsSecretName = "shoot-flux-admission-tls"
)

// registryAuth lets the spec read the registry like a client logged in.
func registryAuth() remote.Option {
	return remote.WithAuth(&authn.Basic{Username: username, Password: password})
}

// digestOf is the digest of the manifest the tag names in the registry.
func digestOf(ctx context.Context, tagRef string) string {
	GinkgoHelper()
	tag, err := name.NewTag(tagRef, name.StrictValidation)
	Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Head(tag, registryAuth(), remote.WithContext(ctx))
	Expect(err).NotTo(HaveOccurred(), "%s is not in the registry", tagRef)
	return desc.Digest.String()
}

var (
	dockerPush = regexp.MustCompile(`^\S*docker push (\S+)$`)
	helmPush   = regexp.MustCompile(`^\S*helm push \S+/([a-z0-9-]+)-(\S+)\.tgz oci://(\S+)$`)
)

// makePushRefs are the image and chart refs `make push` pushes for the same REGISTRY and VERSION.
func makePushRefs() (images, charts []string) {
	GinkgoHelper()
	cmd := exec.Command("make", "-n", "--no-print-directory", "push", "REGISTRY="+registry.Host()+"/"+registryPath, "VERSION="+version)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	for _, l := range strings.Split(string(out), "\n") {
		if m := dockerPush.FindStringSubmatch(l); m != nil {
			images = append(images, m[1])
		}
		if m := helmPush.FindStringSubmatch(l); m != nil {
			charts = append(charts, m[3]+"/"+m[1]+":"+m[2])
		}
	}
	Expect(images).To(HaveLen(2))
	Expect(charts).To(HaveLen(4))
	return images, charts
}

// imageRepository and chartRepository are where make publish pushes.
func imageRepository(binary string) string {
	return registry.Host() + "/" + registryPath + "/extensions/" + binary
}

func chartRepository(chart string) string {
	return registry.Host() + "/" + registryPath + "/charts/extensions/" + chart
}

// readInstallFile decodes the documents of a file make publish wrote.
func readInstallFile(file string) [][]byte {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(installDir, file))
	Expect(err).NotTo(HaveOccurred())
	var docs [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		Expect(err).NotTo(HaveOccurred())
		if len(bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("---")))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// gardenClient holds what the garden (gardenlet) or runtime cluster (gardener-operator) holds in
// the garden namespace for the install: the chart pull Secret and the admission's TLS Secret.
func gardenClient(certs tlsCertificates) client.Client {
	return fakeclient.NewClientBuilder().WithObjects(
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: v1beta1constants.GardenNamespace, Name: pullSecretName,
				Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleHelmPullSecret}},
			Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: v1beta1constants.GardenNamespace, Name: tlsSecretName,
				Labels: map[string]string{v1beta1constants.GardenRole: v1beta1constants.GardenRoleResourceReference}},
			Data: map[string][]byte{"ca": []byte(certs.ca), "crt": []byte(certs.crt), "key": []byte(certs.key)},
		},
	).Build()
}

// pullChart pulls a chart with gardener's chart puller, the one gardenlet and gardener-operator use.
func pullChart(ctx context.Context, c client.Client, repo *gardencorev1.OCIRepository) []byte {
	GinkgoHelper()
	Expect(repo).NotTo(BeNil())
	Expect(repo.PullSecretRef).To(HaveValue(HaveField("Name", pullSecretName)))
	archive, err := oci.NewHelmRegistry(c).Pull(ctx, repo)
	Expect(err).NotTo(HaveOccurred())
	return archive
}

// render renders a chart archive with gardener's chart renderer and decodes the objects.
func render(archive []byte, releaseName, namespace string, values map[string]any) []*unstructured.Unstructured {
	GinkgoHelper()
	rendered, err := chartrenderer.NewWithServerVersion(sandbox.ServerVersion).RenderArchive(archive, releaseName, namespace, values)
	Expect(err).NotTo(HaveOccurred())
	objs, err := sandbox.DecodeObjects(rendered.Manifest())
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// the returns the one object of a kind.
func the[T any](objs []*unstructured.Unstructured, kind string) *T {
	GinkgoHelper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	Expect(found).To(HaveLen(1), "want one %s", kind)
	out := new(T)
	Expect(kruntime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, out)).To(Succeed())
	return out
}

// expectPushedImage checks that the image is the one pushed for the binary: in the registry by
// this digest, with the binary as the Dockerfile places it, built with the published version.
func expectPushedImage(ctx context.Context, image, binary string) {
	GinkgoHelper()
	Expect(image).To(Equal(imageRepository(binary) + "@" + digestOf(ctx, imageRepository(binary)+":"+version)))
	ref, err := name.NewDigest(image, name.StrictValidation)
	Expect(err).NotTo(HaveOccurred())
	img, err := remote.Image(ref, registryAuth(), remote.WithContext(ctx))
	Expect(err).NotTo(HaveOccurred())

	cfg, err := img.ConfigFile()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg.Config.Entrypoint).To(Equal([]string{"/" + binary}))
	Expect(cfg.Config.User).To(Equal("65532"), "the nonroot user of the Dockerfile's distroless base")
	Expect(cfg.Config.WorkingDir).To(Equal("/"))

	layers, err := img.Layers()
	Expect(err).NotTo(HaveOccurred())
	// BASE_IMAGE=scratch: the binary's layer is the only one.
	Expect(layers).To(HaveLen(1))
	path := extractFile(layers[0], binary)
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	Expect(string(out)).To(ContainSubstring(version), "the binary carries the version of the Makefile's ldflags")
}

// extractFile writes the file of a layer to a temporary file and checks its mode.
func extractFile(layer v1.Layer, file string) string {
	GinkgoHelper()
	rc, err := layer.Uncompressed()
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		names = append(names, hdr.Name)
		if hdr.Name != file {
			continue
		}
		Expect(hdr.Typeflag).To(Equal(byte(tar.TypeReg)))
		Expect(hdr.Mode & 0o777).To(Equal(int64(0o755)))
		path := filepath.Join(GinkgoT().TempDir(), file)
		out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		Expect(err).NotTo(HaveOccurred())
		_, err = io.Copy(out, tr)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Close()).To(Succeed())
		return path
	}
	Fail("the layer holds " + strings.Join(names, ", ") + ", not " + file)
	return ""
}

// expectPushedChart checks that the ref names the chart pushed with the version, by digest.
func expectPushedChart(ctx context.Context, repo *gardencorev1.OCIRepository, chart string) {
	GinkgoHelper()
	Expect(repo.Ref).To(HaveValue(Equal(chartRepository(chart) + ":" + version + "@" + digestOf(ctx, chartRepository(chart)+":"+version))))
}

type tlsCertificates struct{ ca, crt, key string }

func newCertificates() tlsCertificates {
	GinkgoHelper()
	ca, err := (&secretsutils.CertificateSecretConfig{Name: "ca", CommonName: "shoot-flux-admission-ca", CertType: secretsutils.CACert}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	server, err := (&secretsutils.CertificateSecretConfig{
		Name: "server", CommonName: admissionName, DNSNames: []string{admissionName + ".garden"},
		CertType: secretsutils.ServerCert, SigningCA: ca,
	}).GenerateCertificate()
	Expect(err).NotTo(HaveOccurred())
	return tlsCertificates{ca: string(ca.CertificatePEM), crt: string(server.CertificatePEM), key: string(server.PrivateKeyPEM)}
}

func noFieldErrors(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return errs.ToAggregate()
}

func unmarshalValues(raw []byte) map[string]any {
	GinkgoHelper()
	values := map[string]any{}
	if raw != nil {
		Expect(json.Unmarshal(raw, &values)).To(Succeed())
	}
	return values
}

var _ = Describe("make publish", func() {
	var gardenAPI client.Client

	BeforeEach(func() {
		gardenAPI = gardenClient(newCertificates())
	})

	It("pushes the images and charts make push names, with the given version", func(ctx SpecContext) {
		images, charts := makePushRefs()
		for _, ref := range append(images, charts...) {
			Expect(ref).To(HavePrefix(registry.Host() + "/" + registryPath + "/"))
			digestOf(ctx, ref)
		}
		reg, err := name.NewRegistry(registry.Host(), name.StrictValidation)
		Expect(err).NotTo(HaveOccurred())
		repos, err := remote.Catalog(ctx, reg, registryAuth())
		Expect(err).NotTo(HaveOccurred())
		var pushed []string
		for _, r := range repos {
			tags, err := remote.List(reg.Repo(r), registryAuth(), remote.WithContext(ctx))
			Expect(err).NotTo(HaveOccurred())
			for _, t := range tags {
				pushed = append(pushed, registry.Host()+"/"+r+":"+t)
			}
		}
		Expect(pushed).To(ConsistOf(append(images, charts...)))
	})

	It("writes a ControllerRegistration and ControllerDeployment that make gardenlet run the pushed image from the pushed chart", func(ctx SpecContext) {
		scheme := kruntime.NewScheme()
		install.Install(scheme)
		decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()
		var deployment *gardencorev1.ControllerDeployment
		kinds := 0
		for _, doc := range readInstallFile("controller-registration.yaml") {
			obj, _, err := decoder.Decode(doc, nil, nil)
			Expect(err).NotTo(HaveOccurred())
			kinds++
			switch o := obj.(type) {
			case *core.ControllerDeployment:
				Expect(noFieldErrors(validation.ValidateControllerDeployment(o))).To(Succeed())
				deployment = &gardencorev1.ControllerDeployment{}
				Expect(yaml.UnmarshalStrict(doc, deployment)).To(Succeed())
			case *core.ControllerRegistration:
				Expect(noFieldErrors(validation.ValidateControllerRegistration(o))).To(Succeed())
				Expect(o.Spec.Deployment.DeploymentRefs).To(ConsistOf(HaveField("Name", "shoot-flux")))
			default:
				Fail("unexpected object")
			}
		}
		Expect(kinds).To(Equal(2))
		Expect(deployment).NotTo(BeNil())
		Expect(deployment.Helm.RawChart).To(BeEmpty(), "the pushed chart, not an embedded one")
		Expect(deployment.InjectGardenKubeconfig).To(HaveValue(BeTrue()))
		expectPushedChart(ctx, deployment.Helm.OCIRepository, extensionName)

		// gardenlet merges its own values over the ControllerDeployment's.
		values := unmarshalValues(deployment.Helm.Values.Raw)
		archive := pullChart(ctx, gardenAPI, deployment.Helm.OCIRepository)
		objs := render(archive, "shoot-flux", "extension-shoot-flux-x", sandbox.MergeValues(values, sandbox.GardenletValues()))
		d := the[appsv1.Deployment](objs, "Deployment")
		expectPushedImage(ctx, d.Spec.Template.Spec.Containers[0].Image, extensionName)

		// Without image values the pushed chart runs the image pushed with it: its default
		// repository is the pushed one, its appVersion the published version.
		objs = render(archive, "shoot-flux", "extension-shoot-flux-x", sandbox.GardenletValues())
		Expect(the[appsv1.Deployment](objs, "Deployment").Spec.Template.Spec.Containers[0].Image).To(Equal(imageRepository(extensionName) + ":" + version))
	})

	Describe("operator Extension", func() {
		var ext *operatorv1alpha1.Extension

		BeforeEach(func() {
			docs := readInstallFile("extension.yaml")
			Expect(docs).To(HaveLen(1))
			ext = &operatorv1alpha1.Extension{}
			Expect(yaml.UnmarshalStrict(docs[0], ext)).To(Succeed())
			Expect(noFieldErrors(operatorvalidation.ValidateExtension(ext))).To(Succeed())
			Expect(ext.Spec.Deployment.ExtensionDeployment.InjectGardenKubeconfig).To(HaveValue(BeTrue()), "the overlay of example/extension")
		})

		It("makes gardenlet run the pushed extension image from the pushed chart", func(ctx SpecContext) {
			repo := ext.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository
			expectPushedChart(ctx, repo, extensionName)
			// gardener-operator hands chart and values to gardenlet in a ControllerDeployment.
			values := unmarshalValues(ext.Spec.Deployment.ExtensionDeployment.Values.Raw)
			objs := render(pullChart(ctx, gardenAPI, repo), ext.Name, "extension-shoot-flux-x", sandbox.MergeValues(values, sandbox.GardenletValues()))
			expectPushedImage(ctx, the[appsv1.Deployment](objs, "Deployment").Spec.Template.Spec.Containers[0].Image, extensionName)
		})

		// admissionValues are the admission values with the resources substituted, as
		// gardener-operator renders them for both admission charts.
		admissionValues := func(ctx context.Context) map[string]any {
			GinkgoHelper()
			Expect(ext.Spec.Deployment.AdmissionDeployment).NotTo(BeNil())
			values, err := chartutils.RenderHelmValues(ctx, gardenAPI, unmarshalValues(ext.Spec.Deployment.AdmissionDeployment.Values.Raw),
				v1beta1constants.GardenNamespace, ext.Spec.Deployment.Resources)
			Expect(err).NotTo(HaveOccurred())
			return values
		}

		It("makes gardener-operator run the pushed admission image from the pushed runtime chart", func(ctx SpecContext) {
			repo := ext.Spec.Deployment.AdmissionDeployment.RuntimeCluster.Helm.OCIRepository
			expectPushedChart(ctx, repo, admissionName+"-runtime")
			// The values gardener-operator adds for the runtime chart.
			operatorValues := map[string]any{"gardener": map[string]any{
				"runtimeCluster": map[string]any{"priorityClassName": v1beta1constants.PriorityClassNameGardenSystem400},
				"virtualCluster": map[string]any{"enabled": true, "namespace": "extension-shoot-flux"},
			}}
			objs := render(pullChart(ctx, gardenAPI, repo), ext.Name, v1beta1constants.GardenNamespace, sandbox.MergeValues(admissionValues(ctx), operatorValues))
			expectPushedImage(ctx, the[appsv1.Deployment](objs, "Deployment").Spec.Template.Spec.Containers[0].Image, admissionName)
			Expect(the[corev1.Secret](objs, "Secret").Data).To(ContainElement(BeEquivalentTo(gardenTLSCert(ctx, gardenAPI))), "the TLS certificate of the referenced Secret")
		})

		It("makes gardener-operator install the webhooks from the pushed application chart", func(ctx SpecContext) {
			repo := ext.Spec.Deployment.AdmissionDeployment.VirtualCluster.Helm.OCIRepository
			expectPushedChart(ctx, repo, admissionName+"-application")
			operatorValues := map[string]any{"gardener": map[string]any{"virtualCluster": map[string]any{
				"enabled":        true,
				"serviceAccount": map[string]any{"name": "extension-admission-shoot-flux", "namespace": "kube-system"},
			}}}
			objs := render(pullChart(ctx, gardenAPI, repo), ext.Name, "extension-shoot-flux", sandbox.MergeValues(admissionValues(ctx), operatorValues))
			webhooks := the[admissionregistrationv1.ValidatingWebhookConfiguration](objs, "ValidatingWebhookConfiguration")
			Expect(webhooks.Webhooks).NotTo(BeEmpty())
			secret := &corev1.Secret{}
			Expect(gardenAPI.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: tlsSecretName}, secret)).To(Succeed())
			for _, w := range webhooks.Webhooks {
				Expect(w.ClientConfig.CABundle).To(Equal(secret.Data["ca"]), "the CA of the referenced Secret")
			}
		})
	})
})

// gardenTLSCert is the serving certificate in the admission's TLS Secret.
func gardenTLSCert(ctx context.Context, c client.Client) []byte {
	GinkgoHelper()
	secret := &corev1.Secret{}
	Expect(c.Get(ctx, client.ObjectKey{Namespace: v1beta1constants.GardenNamespace, Name: tlsSecretName}, secret)).To(Succeed())
	return secret.Data["crt"]
}

var _ = Describe("make publish with a base image", func() {
	It("adds the binary on top of the base image of the platform and keeps the base's user", func(ctx SpecContext) {
		// A registry of its own, so that the first spec sees only what the suite's run pushed.
		baseRegistry, err := ociregistry.Start(username, password)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(baseRegistry.Close)

		// A multi-platform base like distroless: an index whose image for the host's platform has a
		// layer of its own and the non-root user.
		platform := v1.Platform{OS: runtime.GOOS, Architecture: runtime.GOARCH}
		baseLayer := static.NewLayer(tarOf(map[string]string{"etc/passwd": "nonroot:x:65532:65532::/home/nonroot:/sbin/nologin\n"}), types.OCILayer)
		base, err := mutate.Append(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), mutate.Addendum{Layer: baseLayer})
		Expect(err).NotTo(HaveOccurred())
		cfg, err := base.ConfigFile()
		Expect(err).NotTo(HaveOccurred())
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Config.User = platform.OS, platform.Architecture, "65532"
		base, err = mutate.ConfigFile(base, cfg)
		Expect(err).NotTo(HaveOccurred())
		other, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), &v1.ConfigFile{OS: "linux", Architecture: "s390x"})
		Expect(err).NotTo(HaveOccurred())
		index := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
			mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
			mutate.IndexAddendum{Add: base, Descriptor: v1.Descriptor{Platform: &platform}},
		)
		baseRef, err := name.NewTag(baseRegistry.Host()+"/distroless/static:nonroot", name.StrictValidation)
		Expect(err).NotTo(HaveOccurred())
		Expect(remote.WriteIndex(baseRef, index, registryAuth(), remote.WithContext(ctx))).To(Succeed())

		configDir := GinkgoT().TempDir()
		config, err := json.Marshal(map[string]any{"auths": map[string]any{
			baseRegistry.Host(): map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(username + ":" + password))},
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(configDir, "config.json"), config, 0o600)).To(Succeed())
		cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "publish",
			"REGISTRY="+baseRegistry.Host()+"/landscape", "VERSION="+version, "BASE_IMAGE="+baseRef.String(),
			"PLATFORM="+runtime.GOOS+"/"+runtime.GOARCH, "INSTALL_DIR="+GinkgoT().TempDir())
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+configDir)
		cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
		Expect(cmd.Run()).To(Succeed(), "make publish")

		for _, binary := range []string{extensionName, admissionName} {
			ref, err := name.NewTag(baseRegistry.Host()+"/landscape/extensions/"+binary+":"+version, name.StrictValidation)
			Expect(err).NotTo(HaveOccurred())
			img, err := remote.Image(ref, registryAuth(), remote.WithContext(ctx))
			Expect(err).NotTo(HaveOccurred())
			layers, err := img.Layers()
			Expect(err).NotTo(HaveOccurred())
			Expect(layers).To(HaveLen(2), "the base's layer and the binary's")
			baseDigest, err := baseLayer.Digest()
			Expect(err).NotTo(HaveOccurred())
			Expect(layers[0].Digest()).To(Equal(baseDigest))
			Expect(layers[1].MediaType()).To(Equal(types.OCILayer), "the media types of the base's manifest")
			extractFile(layers[1], binary)
			cfg, err := img.ConfigFile()
			Expect(err).NotTo(HaveOccurred())
			Expect(cfg.Config.User).To(Equal("65532"))
			Expect(cfg.Config.Entrypoint).To(Equal([]string{"/" + binary}))
			Expect(cfg.OS + "/" + cfg.Architecture).To(Equal(platform.OS + "/" + platform.Architecture))
		}
	}, SpecTimeout(publishTimeout))
})

// tarOf is an uncompressed tar of the files.
func tarOf(files map[string]string) []byte {
	GinkgoHelper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for path, content := range files {
		Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: int64(len(content))})).To(Succeed())
		_, err := tw.Write([]byte(content))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	return buf.Bytes()
}
