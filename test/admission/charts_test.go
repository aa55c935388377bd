// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package admission_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/gardener/gardener/pkg/chartrenderer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	admissionchart "github.com/shoot-flux/gardener-extension-shoot-flux/charts/gardener-extension-shoot-flux-admission"
	"github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux-admission/app"
	admissioncmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

const (
	// releaseName is what gardener-operator names the releases: the Extension's name.
	releaseName = "shoot-flux"
	// virtualNamespace is where gardener-operator renders the application chart.
	virtualNamespace = "extension-shoot-flux"
	// fieldOwner is the field manager of the applies.
	fieldOwner = "admission-test"
	// webhookConfigName is the name of the ValidatingWebhookConfiguration.
	webhookConfigName = "gardener-extension-shoot-flux-admission"
)

// render renders one of the embedded charts with the given values (merged over its values.yaml by
// helm) and decodes every object.
func render(chartPath, namespace string, values ...map[string]any) ([]*unstructured.Unstructured, error) {
	rendered, err := chartrenderer.NewWithServerVersion(sandbox.ServerVersion).RenderEmbeddedFS(admissionchart.FS, chartPath, releaseName, namespace, sandbox.MergeValues(values...))
	if err != nil {
		return nil, err
	}
	return sandbox.DecodeObjects(rendered.Manifest())
}

func mustRender(chartPath, namespace string, values ...map[string]any) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := render(chartPath, namespace, values...)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// find returns the object of the given kind, failing the spec if there is none.
func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	Fail(fmt.Sprintf("no %s among the rendered objects %v", kind, kinds(objs)))
	return nil
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	return out
}

// typed converts an unstructured object into a typed one, rejecting fields the type does not know.
func typed[T any](u *unstructured.Unstructured) *T {
	GinkgoHelper()
	out := new(T)
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true)).To(Succeed(), "%s/%s has fields its type does not know", u.GetKind(), u.GetName())
	return out
}

// dryRunApply applies an object with server-side apply and dry-run, so that the API server runs
// its decoding, defaulting, validation and admission without persisting anything.
func dryRunApply(ctx context.Context, u *unstructured.Unstructured) error {
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(fieldOwner), client.ForceOwnership, client.DryRunAll)
}

// applicationValues are what gardener-operator passes for the virtual garden, plus the CA.
func applicationValues() map[string]any {
	return map[string]any{
		"webhookConfig": map[string]any{"caBundle": certs.caPEM},
		"gardener": map[string]any{"virtualCluster": map[string]any{
			"enabled":        true,
			"serviceAccount": map[string]any{"name": "extension-admission-shoot-flux", "namespace": "kube-system"},
		}},
	}
}

// runtimeValues are what gardener-operator passes for the runtime cluster, plus the certificate.
func runtimeValues() map[string]any {
	return map[string]any{
		"webhookConfig": map[string]any{"tls": map[string]any{"crt": certs.certPEM, "key": certs.keyPEM}},
		"gardener": map[string]any{
			"runtimeCluster": map[string]any{"priorityClassName": priorityClassName},
			"virtualCluster": map[string]any{"enabled": true, "namespace": virtualNamespace},
		},
	}
}

func webhookByName(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, name string) admissionregistrationv1.ValidatingWebhook {
	GinkgoHelper()
	for _, wh := range cfg.Webhooks {
		if wh.Name == name {
			return wh
		}
	}
	Fail("no webhook " + name)
	return admissionregistrationv1.ValidatingWebhook{}
}

const (
	shootWebhook     = "shoots.shoot-flux.extensions.gardener.cloud"
	configMapWebhook = "configmaps.shoot-flux.extensions.gardener.cloud"
)

// undocumentedValues returns the paths of the leaf values that neither carry a comment nor sit in
// a section whose key carries one.
func undocumentedValues(node *kyaml.Node, prefix string, documented bool) []string {
	var missing []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		p := strings.TrimPrefix(prefix+"."+key.Value, ".")
		doc := documented || key.HeadComment != "" || key.LineComment != "" || value.LineComment != ""
		if value.Kind == kyaml.MappingNode && len(value.Content) > 0 {
			missing = append(missing, undocumentedValues(value, p, doc)...)
			continue
		}
		if !doc {
			missing = append(missing, p)
		}
	}
	return missing
}

var _ = Describe("Admission charts", func() {
	DescribeTable("values.yaml documents every value",
		func(chartPath string) {
			data, err := admissionchart.FS.ReadFile(path.Join(chartPath, "values.yaml"))
			Expect(err).NotTo(HaveOccurred())
			root, err := kyaml.Parse(string(data))
			Expect(err).NotTo(HaveOccurred())
			Expect(undocumentedValues(root.YNode(), "", false)).To(BeEmpty())
		},
		Entry("application", admissionchart.ApplicationChartPath),
		Entry("runtime", admissionchart.RuntimeChartPath),
		Entry("umbrella", admissionchart.UmbrellaChartPath),
	)

	Describe("application", func() {
		It("renders a ValidatingWebhookConfiguration for the virtual garden that the API server accepts", func(ctx SpecContext) {
			objs := mustRender(admissionchart.ApplicationChartPath, virtualNamespace, applicationValues())
			Expect(kinds(objs)).To(ConsistOf("ValidatingWebhookConfiguration"), "the admission needs no permissions in the garden")
			Expect(dryRunApply(ctx, objs[0])).To(Succeed())

			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](objs[0])
			Expect(cfg.Name).To(Equal(webhookConfigName))
			Expect(cfg.Webhooks).To(HaveLen(2))

			shoots := webhookByName(cfg, shootWebhook)
			Expect(shoots.ClientConfig.URL).To(HaveValue(Equal("https://" + serviceName + "." + runtimeNamespace + validator.ShootWebhookPath)))
			Expect(shoots.ClientConfig.Service).To(BeNil())
			Expect(string(shoots.ClientConfig.CABundle)).To(Equal(certs.caPEM))
			Expect(shoots.Rules).To(ConsistOf(admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"core.gardener.cloud"}, APIVersions: []string{"v1beta1"}, Resources: []string{"shoots"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}))
			Expect(shoots.ObjectSelector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{"extensions.extensions.gardener.cloud/shoot-flux": "true"}}))
			Expect(shoots.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)))

			configMaps := webhookByName(cfg, configMapWebhook)
			Expect(configMaps.ClientConfig.URL).To(HaveValue(Equal("https://" + serviceName + "." + runtimeNamespace + validator.ConfigMapWebhookPath)))
			Expect(configMaps.Rules).To(HaveLen(1))
			Expect(configMaps.Rules[0].Resources).To(ConsistOf("configmaps"))
			Expect(configMaps.Rules[0].Operations).To(ConsistOf(admissionregistrationv1.Create, admissionregistrationv1.Update))
			Expect(configMaps.NamespaceSelector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{"gardener.cloud/role": "project"}}))
			Expect(configMaps.MatchConditions).To(ConsistOf(admissionregistrationv1.MatchCondition{
				Name:       "project-configmap",
				Expression: `object.metadata.name == "` + constants.ProjectConfigMapName + `"`,
			}))
			Expect(configMaps.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)))
		})

		It("refers to the runtime chart's Service when the garden API server runs in the same cluster", func(ctx SpecContext) {
			appObjs := mustRender(admissionchart.ApplicationChartPath, runtimeNamespace, map[string]any{"webhookConfig": map[string]any{"caBundle": certs.caPEM}})
			Expect(dryRunApply(ctx, appObjs[0])).To(Succeed())
			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](appObjs[0])

			service := typed[corev1.Service](find(mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues()), "Service"))
			for _, wh := range cfg.Webhooks {
				Expect(wh.ClientConfig.URL).To(BeNil())
				Expect(wh.ClientConfig.Service).NotTo(BeNil())
				Expect(wh.ClientConfig.Service.Name).To(Equal(service.Name))
				Expect(wh.ClientConfig.Service.Namespace).To(Equal(service.Namespace))
				Expect(wh.ClientConfig.Service.Port).To(HaveValue(Equal(service.Spec.Ports[0].Port)))
			}
			Expect(webhookByName(cfg, shootWebhook).ClientConfig.Service.Path).To(HaveValue(Equal(validator.ShootWebhookPath)))
			Expect(webhookByName(cfg, configMapWebhook).ClientConfig.Service.Path).To(HaveValue(Equal(validator.ConfigMapWebhookPath)))
		})

		It("names a non-default Service port in the URL", func() {
			objs := mustRender(admissionchart.ApplicationChartPath, virtualNamespace, applicationValues(),
				map[string]any{"webhookConfig": map[string]any{"service": map[string]any{"port": 8443, "namespace": "admission"}}})
			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](objs[0])
			Expect(webhookByName(cfg, shootWebhook).ClientConfig.URL).To(HaveValue(Equal("https://" + serviceName + ".admission:8443" + validator.ShootWebhookPath)))
		})

		It("calls an explicit URL", func() {
			objs := mustRender(admissionchart.ApplicationChartPath, virtualNamespace, applicationValues(),
				map[string]any{"webhookConfig": map[string]any{"url": "https://admission.example.com:8443/"}})
			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](objs[0])
			Expect(webhookByName(cfg, configMapWebhook).ClientConfig.URL).To(HaveValue(Equal("https://admission.example.com:8443" + validator.ConfigMapWebhookPath)))
		})

		It("applies the failure policy and selectors from the values", func(ctx SpecContext) {
			objs := mustRender(admissionchart.ApplicationChartPath, virtualNamespace, applicationValues(), map[string]any{"webhookConfig": map[string]any{
				"failurePolicy":  "Ignore",
				"timeoutSeconds": 5,
				"shoots":         map[string]any{"useObjectSelector": false},
				// helm merges maps with the defaults; null removes the default label.
				"configMaps": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"gardener.cloud/role": nil, "team": "platform"}}},
			}})
			Expect(dryRunApply(ctx, objs[0])).To(Succeed())
			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](objs[0])
			for _, wh := range cfg.Webhooks {
				Expect(wh.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Ignore)))
				Expect(wh.TimeoutSeconds).To(HaveValue(BeEquivalentTo(5)))
			}
			Expect(webhookByName(cfg, shootWebhook).ObjectSelector).To(Equal(&metav1.LabelSelector{}))
			Expect(webhookByName(cfg, configMapWebhook).NamespaceSelector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "platform"}}))
		})

		It("requires the CA as PEM", func() {
			_, err := render(admissionchart.ApplicationChartPath, virtualNamespace)
			Expect(err).To(MatchError(ContainSubstring("webhookConfig.caBundle is required")))

			_, err = render(admissionchart.ApplicationChartPath, virtualNamespace, map[string]any{"webhookConfig": map[string]any{"caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"}})
			Expect(err).To(MatchError(ContainSubstring("webhookConfig.caBundle must be a PEM certificate")))
		})
	})

	Describe("runtime", func() {
		It("renders a webhook server the runtime cluster accepts", func(ctx SpecContext) {
			objs := mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues())
			Expect(kinds(objs)).To(ConsistOf("Deployment", "Service", "ServiceAccount", "Secret", "VerticalPodAutoscaler", "PodDisruptionBudget"))
			warnings.Take()
			for _, o := range objs {
				Expect(o.GetNamespace()).To(Equal(runtimeNamespace))
				Expect(dryRunApply(ctx, o)).To(Succeed(), "%s/%s", o.GetKind(), o.GetName())
			}
			// The namespace enforces the restricted Pod Security Standard; violations of the pod
			// template are reported as warnings on the Deployment.
			Expect(warnings.Take()).To(BeEmpty())
		})

		It("runs the admission with flags it has and serves the mounted certificate", func() {
			objs := mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues())
			deployment := typed[appsv1.Deployment](find(objs, "Deployment"))
			Expect(deployment.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
			pod := deployment.Spec.Template.Spec
			Expect(pod.PriorityClassName).To(Equal(priorityClassName))
			Expect(pod.ServiceAccountName).To(Equal(find(objs, "ServiceAccount").GetName()))
			Expect(pod.Containers).To(HaveLen(1))
			container := pod.Containers[0]
			version, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
			Expect(err).NotTo(HaveOccurred())
			Expect(container.Image).To(Equal("europe-docker.pkg.dev/gardener-project/public/extensions/gardener-extension-shoot-flux-admission:" + strings.TrimSpace(string(version))))

			cmd := app.NewAdmissionCommand()
			Expect(cmd.ParseFlags(container.Args)).To(Succeed())
			certDir, err := cmd.Flags().GetString("webhook-config-cert-dir")
			Expect(err).NotTo(HaveOccurred())
			port, err := cmd.Flags().GetInt("webhook-config-server-port")
			Expect(err).NotTo(HaveOccurred())
			Expect(port).To(Equal(10250))
			// Without values, the admission has the host policy defaults of the controller.
			Expect(container.Args).NotTo(ContainElement(HavePrefix("--host-policy-")))
			// And its default limits.
			Expect(container.Args).NotTo(ContainElement(HavePrefix("--limits-")))

			secret := typed[corev1.Secret](find(objs, "Secret"))
			Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
			Expect(string(secret.Data[corev1.TLSCertKey])).To(Equal(certs.certPEM))
			Expect(string(secret.Data[corev1.TLSPrivateKeyKey])).To(Equal(certs.keyPEM))
			Expect(container.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "tls", MountPath: certDir, ReadOnly: true}))
			Expect(pod.Volumes).To(ConsistOf(HaveField("VolumeSource.Secret.SecretName", secret.Name)))

			service := typed[corev1.Service](find(objs, "Service"))
			Expect(service.Spec.Selector).To(Equal(deployment.Spec.Template.Labels))
			Expect(service.Spec.Ports).To(HaveLen(1))
			Expect(service.Spec.Ports[0].Port).To(BeEquivalentTo(443))
			Expect(container.Ports).To(ContainElement(corev1.ContainerPort{Name: service.Spec.Ports[0].TargetPort.StrVal, ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}))
			Expect(service.Annotations).To(HaveKeyWithValue("networking.resources.gardener.cloud/from-all-webhook-targets-allowed-ports", `[{"protocol":"TCP","port":10250}]`))
		})

		It("rolls the pods when the certificate changes", func() {
			checksum := func(objs []*unstructured.Unstructured) string {
				return typed[appsv1.Deployment](find(objs, "Deployment")).Spec.Template.Annotations["checksum/secret-tls"]
			}
			before := checksum(mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues()))
			renewed := newTestCertificates()
			after := checksum(mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues(),
				map[string]any{"webhookConfig": map[string]any{"tls": map[string]any{"crt": renewed.certPEM, "key": renewed.keyPEM}}}))
			Expect(before).NotTo(BeEmpty())
			Expect(after).NotTo(Equal(before))
		})

		It("applies the optional values", func(ctx SpecContext) {
			objs := mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues(), map[string]any{
				"replicaCount":    1,
				"image":           map[string]any{"ref": "registry.example.com/admission@sha256:" + strings.Repeat("ab", 32)},
				"vpa":             map[string]any{"enabled": false},
				"metricsPort":     0,
				"disableWebhooks": []any{validator.ConfigMapWebhookName},
				"podLabels":       map[string]any{"team": "platform"},
				"gardener":        map[string]any{"runtimeCluster": map[string]any{"priorityClassName": ""}},
				"hostPolicy":      map[string]any{"allowedNetworks": []any{"10.20.0.0/16", "fd00::/8"}, "allowedPorts": []any{"22", "1024-65535"}},
			})
			Expect(kinds(objs)).To(ConsistOf("Deployment", "Service", "ServiceAccount", "Secret"))
			for _, o := range objs {
				Expect(dryRunApply(ctx, o)).To(Succeed(), "%s/%s", o.GetKind(), o.GetName())
			}
			deployment := typed[appsv1.Deployment](find(objs, "Deployment"))
			container := deployment.Spec.Template.Spec.Containers[0]
			Expect(container.Image).To(Equal("registry.example.com/admission@sha256:" + strings.Repeat("ab", 32)))
			Expect(container.Args).To(ContainElements("--metrics-bind-address=0", "--disable-webhooks="+validator.ConfigMapWebhookName))
			Expect(container.Ports).NotTo(ContainElement(HaveField("Name", "metrics")))
			Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue("team", "platform"))
			Expect(deployment.Spec.Template.Spec.PriorityClassName).To(BeEmpty())
			cmd := app.NewAdmissionCommand()
			Expect(cmd.ParseFlags(container.Args)).To(Succeed())
			networks, err := cmd.Flags().GetStringSlice("host-policy-allowed-networks")
			Expect(err).NotTo(HaveOccurred())
			Expect(networks).To(Equal([]string{"10.20.0.0/16", "fd00::/8"}))
			ports, err := cmd.Flags().GetStringSlice("host-policy-allowed-ports")
			Expect(err).NotTo(HaveOccurred())
			Expect(ports).To(Equal([]string{"22", "1024-65535"}))
		})

		It("gives the admission the release lifecycle the controller loads from the same values", func() {
			embedded := manifests.SupportedVersions()
			values := map[string]any{"flux": []any{
				map[string]any{"version": embedded.Flux[0], "classification": "deprecated", "expirationDate": "2027-03-01T00:00:00Z"},
				map[string]any{"version": manifests.NewestFluxVersion(), "classification": "supported"},
			}, "kluctl": []any{map[string]any{"version": embedded.Kluctl[0], "classification": "deprecated"}}}
			controllerConfig := controllerConfigOf(map[string]any{"rollout": map[string]any{"releases": values}})
			Expect(controllerConfig.Rollout.Releases.Flux).To(HaveLen(2))

			opts := admissioncmd.NewReleasesOptions()
			parseAdmissionArgs(map[string]any{"rollout": map[string]any{"releases": values}}, opts.AddFlags)
			Expect(opts.Complete()).To(Succeed())
			Expect(opts.Completed()).To(Equal(releases.New(controllerConfig.Rollout.Releases, embedded)))
		})

		// The operator hands both charts the same limits (the operator Extension's values, or a
		// ControllerDeployment's and the admission's): every field of the controller's limits,
		// changed from its default, reaches the admission as the controller loads it.
		It("gives the admission the limits the controller loads from the same values", func() {
			limits := configv1alpha1.DefaultLimits()
			values := map[string]any{}
			v := reflect.ValueOf(&limits).Elem()
			for i := range v.NumField() {
				name := v.Type().Field(i).Name
				// Doubled, so that limits bound by others (config.yaml within the ConfigMap) stay
				// valid; halved where the default is the upper bound.
				if name == "PrivateKeyMaxBits" {
					v.Field(i).SetInt(v.Field(i).Int() / 2)
				} else {
					v.Field(i).SetInt(2 * v.Field(i).Int())
				}
				values[strings.ToLower(name[:1])+name[1:]] = v.Field(i).Int()
			}

			controllerConfig := controllerConfigOf(map[string]any{"limits": values})
			Expect(controllerConfig.Limits).To(Equal(limits))

			opts := admissioncmd.NewLimitsOptions()
			parseAdmissionArgs(map[string]any{"limits": values}, opts.AddFlags)
			Expect(opts.Complete()).To(Succeed())
			Expect(opts.Completed()).To(Equal(controllerConfig.Limits))
		})

		It("requires the serving certificate", func() {
			_, err := render(admissionchart.RuntimeChartPath, runtimeNamespace)
			Expect(err).To(MatchError(ContainSubstring("webhookConfig.tls.crt is required")))
		})
	})

	Describe("umbrella", func() {
		values := func() map[string]any {
			return map[string]any{
				"application": map[string]any{"webhookConfig": map[string]any{"caBundle": certs.caPEM}},
				"runtime":     runtimeValues(),
			}
		}

		It("installs both parts into one cluster", func() {
			objs := mustRender(admissionchart.UmbrellaChartPath, runtimeNamespace, values())
			Expect(kinds(objs)).To(ContainElements("ValidatingWebhookConfiguration", "Deployment", "Service", "Secret"))
			cfg := typed[admissionregistrationv1.ValidatingWebhookConfiguration](find(objs, "ValidatingWebhookConfiguration"))
			Expect(cfg.Webhooks[0].ClientConfig.Service).NotTo(BeNil())
		})

		It("leaves out a disabled part", func() {
			objs := mustRender(admissionchart.UmbrellaChartPath, runtimeNamespace, values(), map[string]any{"application": map[string]any{"enabled": false}})
			Expect(kinds(objs)).NotTo(ContainElement("ValidatingWebhookConfiguration"))
			Expect(kinds(objs)).To(ContainElement("Deployment"))
		})
	})
})

// controllerConfigOf renders the extension chart with config values as gardenlet would and loads
// the controller configuration it renders.
func controllerConfigOf(configValues map[string]any) *config.ControllerConfiguration {
	GinkgoHelper()
	objs, err := sandbox.RenderExtensionChart(runtimeNamespace, sandbox.MergeValues(sandbox.GardenletValues(), map[string]any{"config": configValues}))
	Expect(err).NotTo(HaveOccurred())
	var out *config.ControllerConfiguration
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-config") {
			out, err = loader.Load([]byte(typed[corev1.ConfigMap](o).Data["config.yaml"]))
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(out).NotTo(BeNil(), "the controller chart renders its configuration")
	return out
}

// parseAdmissionArgs renders the admission's runtime chart with values and parses the container's
// args with the flags addFlags adds; the admission's other flags are not the caller's.
func parseAdmissionArgs(values map[string]any, addFlags func(*pflag.FlagSet)) {
	GinkgoHelper()
	objs := mustRender(admissionchart.RuntimeChartPath, runtimeNamespace, runtimeValues(), values)
	container := typed[appsv1.Deployment](find(objs, "Deployment")).Spec.Template.Spec.Containers[0]
	fs := pflag.NewFlagSet("admission", pflag.ContinueOnError)
	addFlags(fs)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	Expect(fs.Parse(container.Args)).To(Succeed())
}
