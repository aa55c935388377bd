// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	corevalidation "github.com/gardener/gardener/pkg/api/core/validation"
	operatorvalidation "github.com/gardener/gardener/pkg/api/operator/v1alpha1/validation"
	"github.com/gardener/gardener/pkg/apis/core"
	"github.com/gardener/gardener/pkg/apis/core/install"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	operatorv1alpha1 "github.com/gardener/gardener/pkg/apis/operator/v1alpha1"
	"github.com/gardener/gardener/pkg/apiserver/features"
	chartutils "github.com/gardener/gardener/pkg/utils/chart"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// exampleObjects decodes an example file.
func exampleObjects(path string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := decodeObjects(readRepoFile(path))
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// fluxDefaults are the lowest configuration layer of a controller with the default configuration.
func fluxDefaults() (fluxconfig.Defaults, validation.SupportedVersions) {
	GinkgoHelper()
	cfg, err := loader.Defaults()
	Expect(err).NotTo(HaveOccurred())
	return fluxconfig.Defaults{FluxVersion: cfg.DefaultFluxVersion, KluctlVersion: cfg.DefaultKluctlVersion},
		validation.SupportedVersions{Flux: manifests.FluxVersions(), Kluctl: manifests.KluctlVersions()}
}

// operatorExtension builds the kustomize overlay example/extension: the one operator Extension.
func operatorExtension() (*unstructured.Unstructured, *operatorv1alpha1.Extension) {
	GinkgoHelper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "example", "extension"))
	Expect(err).NotTo(HaveOccurred())
	out, err := resMap.AsYaml()
	Expect(err).NotTo(HaveOccurred())
	objs, err := decodeObjects(out)
	Expect(err).NotTo(HaveOccurred())
	Expect(objs).To(HaveLen(1))
	return objs[0], typed[operatorv1alpha1.Extension](objs[0])
}

var _ = Describe("examples", func() {
	It("operator Extension (kustomize overlay) passes gardener-operator's validation and the CRD", func(ctx SpecContext) {
		obj, ext := operatorExtension()
		Expect(noFieldErrors(operatorvalidation.ValidateExtension(ext))).To(Succeed())
		Expect(ext.Spec.Resources).To(ConsistOf(gardencorev1beta1.ControllerResource{Kind: extensionsv1alpha1.ExtensionResource, Type: constants.ExtensionType}))
		Expect(ext.Spec.Deployment.ExtensionDeployment.InjectGardenKubeconfig).To(HaveValue(BeTrue()))
		version := strings.TrimSpace(string(readRepoFile("VERSION")))
		Expect(*ext.Spec.Deployment.ExtensionDeployment.Helm.OCIRepository.Ref).To(HaveSuffix(":"+version), "example/extension/base is stale: run `go generate ./example`")
		_, registration := decodeRegistration()
		Expect(ext.Annotations).To(HaveKeyWithValue(v1beta1constants.AnnotationPodSecurityEnforce, registration.Annotations[v1beta1constants.AnnotationPodSecurityEnforce]),
			"gardener-operator copies the annotation into its ControllerRegistration: both ways to register must set the same")

		Expect(dryRunApply(ctx, obj)).To(Succeed())
	})

	It("operator Extension deploys the admission charts of VERSION with the TLS Secret its values reference", func() {
		_, ext := operatorExtension()
		version := strings.TrimSpace(string(readRepoFile("VERSION")))
		admission := ext.Spec.Deployment.AdmissionDeployment
		Expect(admission).NotTo(BeNil(), "example/extension deploys the admission (docs/operations/admission.md)")
		Expect(*admission.RuntimeCluster.Helm.OCIRepository.Ref).To(HaveSuffix("/gardener-extension-shoot-flux-admission-runtime:"+version), "example/extension/base is stale: run `go generate ./example`")
		Expect(*admission.VirtualCluster.Helm.OCIRepository.Ref).To(HaveSuffix("/gardener-extension-shoot-flux-admission-application:"+version), "example/extension/base is stale: run `go generate ./example`")

		// gardener-operator resolves every {{ .resources.<name> }} of the values from spec.deployment.resources.
		referenced, err := chartutils.ResourceNamesFromValues(admission.Values)
		Expect(err).NotTo(HaveOccurred())
		Expect(referenced.UnsortedList()).To(ConsistOf("admissiontls"))
		Expect(ext.Spec.Deployment.Resources).To(ConsistOf(HaveField("ResourceRef", HaveField("Name", "shoot-flux-admission-tls"))))
		Expect(ext.Spec.Deployment.Resources[0].Name).To(Equal("admissiontls"))
		Expect(ext.Spec.Deployment.Resources[0].ResourceRef.Kind).To(Equal("Secret"))
	})

	It("operator Extension runs the image of the chart's release: the chart's default", func() {
		_, ext := operatorExtension()

		// gardener-operator hands the Extension's values to gardenlet, which adds its own.
		values := map[string]any{}
		if v := ext.Spec.Deployment.ExtensionDeployment.Values; v != nil {
			Expect(json.Unmarshal(v.Raw, &values)).To(Succeed())
		}
		d := typed[appsv1.Deployment](find(mustRender(namespace, merge(values, gardenletValues())), "Deployment", deploymentName))
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(defaultImage()))
	})

	It("every chart's version and appVersion are the VERSION file (hack/update-chart-versions.sh)", func() {
		version := strings.TrimSpace(string(readRepoFile("VERSION")))
		charts, err := filepath.Glob(filepath.Join(repoRoot, "charts", "*", "Chart.yaml"))
		Expect(err).NotTo(HaveOccurred())
		subcharts, err := filepath.Glob(filepath.Join(repoRoot, "charts", "*", "charts", "*", "Chart.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(len(charts) + len(subcharts)).To(BeNumerically(">=", 4))
		for _, path := range append(charts, subcharts...) {
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			var meta struct {
				Version      string `json:"version"`
				AppVersion   string `json:"appVersion"`
				Dependencies []struct {
					Version string `json:"version"`
				} `json:"dependencies"`
			}
			Expect(yaml.Unmarshal(data, &meta)).To(Succeed())
			Expect(meta.Version).To(Equal(version), "%s is stale: run `go generate ./charts`", path)
			Expect(meta.AppVersion).To(Equal(version), "%s is stale: run `go generate ./charts`", path)
			for _, dep := range meta.Dependencies {
				Expect(dep.Version).To(Equal(version), "%s is stale: run `go generate ./charts`", path)
			}
		}
	})

	It("Shoot: the providerConfig is a valid FluxConfig whose credentials are among the Shoot's resources", func() {
		objs := exampleObjects("example/shoot.yaml")
		secret := typed[corev1.Secret](find(objs, "Secret", "fleet-git-credentials"))
		shoot := typed[gardencorev1beta1.Shoot](find(objs, "Shoot", "local"))
		Expect(secret.Namespace).To(Equal(shoot.Namespace))

		Expect(shoot.Spec.Extensions).To(HaveLen(1))
		ext := shoot.Spec.Extensions[0]
		Expect(ext.Type).To(Equal(constants.ExtensionType))
		defaults, supported := fluxDefaults()
		Expect(fluxconfig.ValidateProviderConfig(ext.ProviderConfig, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
		cfg, err := fluxconfig.Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), nil, ext.ProviderConfig)
		Expect(err).NotTo(HaveOccurred())

		Expect(cfg.Source).NotTo(BeNil())
		Expect(cfg.Source.SecretResourceName).NotTo(BeEmpty())
		var ref *gardencorev1beta1.NamedResourceReference
		for i, r := range shoot.Spec.Resources {
			if r.Name == cfg.Source.SecretResourceName {
				ref = &shoot.Spec.Resources[i]
			}
		}
		Expect(ref).NotTo(BeNil(), "source.secretResourceName names no Shoot spec.resources entry")
		Expect(ref.ResourceRef.Kind).To(Equal("Secret"))
		Expect(ref.ResourceRef.Name).To(Equal(secret.Name))
		Expect(secret.StringData).To(HaveKey(constants.SecretKeyUsername))
		Expect(secret.StringData).To(HaveKey(constants.SecretKeyPassword))
	})

	It("Shoot: passes gardener-apiserver's validation after the defaults its admission takes from the CloudProfile", func() {
		features.RegisterFeatureGates()
		scheme := runtime.NewScheme()
		install.Install(scheme)
		data, err := find(exampleObjects("example/shoot.yaml"), "Shoot", "local").MarshalJSON()
		Expect(err).NotTo(HaveOccurred())
		obj, _, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(data, nil, nil)
		Expect(err).NotTo(HaveOccurred())
		shoot := obj.(*core.Shoot)

		shoot.Spec.CloudProfile.Kind = "CloudProfile"
		shoot.Spec.Kubernetes.Version = "1.36.0"
		for i := range shoot.Spec.Provider.Workers {
			shoot.Spec.Provider.Workers[i].Machine.Image = &core.ShootMachineImage{Name: "local", Version: "1.0.0"}
		}
		Expect(noFieldErrors(corevalidation.ValidateShoot(shoot))).To(Succeed())
	})

	It("project ConfigMap: legacy keys and config.yaml are accepted", func() {
		objs := exampleObjects("example/project-configmap.yaml")
		Expect(objs).To(HaveLen(1))
		cm := typed[corev1.ConfigMap](objs[0])
		Expect(cm.Name).To(Equal(constants.ProjectConfigMapName))
		Expect(cm.Data).To(HaveKey(constants.ConfigMapKeyConfig))
		Expect(cm.Data).To(HaveKey(constants.ConfigMapKeyFluxVersion))
		Expect(cm.Data).To(HaveKey(constants.ConfigMapKeyRepositoryURL))
		Expect(cm.Data).To(HaveKey(constants.ConfigMapKeyRepositoryBranch))
		Expect(cm.Data).To(HaveKey(constants.ConfigMapKeyRepositoryType))

		defaults, supported := fluxDefaults()
		Expect(fluxconfig.ValidateConfigMap(cm, supported, sshkey.DefaultKnownHostsLimits())).To(Succeed())
		cfg, err := fluxconfig.Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), cm, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.Source).NotTo(BeNil())
	})

	It("project ConfigMap: sets each value in one place and installs no controller its mode does not use", func() {
		cm := typed[corev1.ConfigMap](exampleObjects("example/project-configmap.yaml")[0])
		var doc map[string]any
		Expect(yaml.Unmarshal([]byte(cm.Data[constants.ConfigMapKeyConfig]), &doc)).To(Succeed())
		// config.yaml fields that a legacy key of the example already sets.
		for key, path := range map[string][]string{
			constants.ConfigMapKeyFluxVersion:      {"flux", "version"},
			constants.ConfigMapKeyRepositoryURL:    {"source", "url"},
			constants.ConfigMapKeyRepositoryBranch: {"source", "ref"},
			constants.ConfigMapKeyRepositoryType:   {"source", "type"},
		} {
			Expect(nested(doc, path...)).To(BeNil(), "config.yaml sets %s, which the legacy key %s already sets", strings.Join(path, "."), key)
		}

		defaults, supported := fluxDefaults()
		cfg, err := fluxconfig.Resolve(defaults, supported, sshkey.DefaultKnownHostsLimits(), cm, nil)
		Expect(err).NotTo(HaveOccurred())
		if cfg.Bootstrap.Mode != fluxapi.BootstrapModeKluctl {
			Expect(cfg.Kluctl.Enabled).To(BeFalse(), "mode %s does not use the kluctl controller", cfg.Bootstrap.Mode)
		}
	})

	Describe("garden RBAC", func() {
		var (
			clusterRole *rbacv1.ClusterRole
			policy      *admissionregistrationv1.ValidatingAdmissionPolicy
			binding     *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		)

		BeforeEach(func() {
			objs := exampleObjects(gardenRBACFile)
			Expect(kindsAndNames(objs)).To(ConsistOf(
				"ClusterRole/gardener.cloud:extension:shoot-flux",
				"ValidatingAdmissionPolicy/shoot-flux-garden-secrets.extensions.gardener.cloud",
				"ValidatingAdmissionPolicyBinding/shoot-flux-garden-secrets.extensions.gardener.cloud",
			))
			clusterRole = typed[rbacv1.ClusterRole](find(objs, "ClusterRole", "gardener.cloud:extension:shoot-flux"))
			policy = typed[admissionregistrationv1.ValidatingAdmissionPolicy](find(objs, "ValidatingAdmissionPolicy", "shoot-flux-garden-secrets.extensions.gardener.cloud"))
			binding = typed[admissionregistrationv1.ValidatingAdmissionPolicyBinding](find(objs, "ValidatingAdmissionPolicyBinding", "shoot-flux-garden-secrets.extensions.gardener.cloud"))
		})

		It("is a custom extension permission that selects the chart's dedicated garden ServiceAccount", func() {
			Expect(clusterRole.Labels).To(HaveKeyWithValue(v1beta1constants.LabelAuthorizationCustomExtensionsPermissions, "true"))
			selector := &metav1.LabelSelector{}
			Expect(json.Unmarshal([]byte(clusterRole.Annotations[v1beta1constants.LabelAuthorizationExtensionsServiceAccountSelector]), selector)).To(Succeed())
			s, err := metav1.LabelSelectorAsSelector(selector)
			Expect(err).NotTo(HaveOccurred())

			secret := typed[corev1.Secret](find(mustRender(namespace, gardenletValues()), "Secret", "garden-access-shoot-flux"))
			var saLabels map[string]string
			Expect(json.Unmarshal([]byte(secret.Annotations["serviceaccount.resources.gardener.cloud/labels"]), &saLabels)).To(Succeed())
			Expect(s.Matches(labels.Set(saLabels))).To(BeTrue())
			// gardenlet's injected identity carries only the registration label: it must not match,
			// or it would get these permissions without needing them.
			Expect(s.Matches(labels.Set{v1beta1constants.LabelControllerRegistrationName: "shoot-flux"})).To(BeFalse())
		})

		It("grants reading the ConfigMaps flux-config, reading and updating the deploy keys Secret, reading the legacy one and creating Secrets", func() {
			Expect(clusterRole.Rules).To(ConsistOf(
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{constants.ProjectConfigMapName}, Verbs: []string{"get", "list", "watch"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{constants.DeployKeysSecretName}, Verbs: []string{"get", "update"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{constants.LegacyDeployKeySecretName}, Verbs: []string{"get"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			))
		})

		It("confines Secret creations and updates with a policy that denies and fails closed", func() {
			Expect(binding.Spec.PolicyName).To(Equal(policy.Name))
			Expect(binding.Spec.ValidationActions).To(ConsistOf(admissionregistrationv1.Deny))
			Expect(binding.Spec.ParamRef).To(BeNil())
			Expect(policy.Spec.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)))
			Expect(policy.Spec.MatchConstraints.ResourceRules).To(ConsistOf(HaveField("RuleWithOperations", admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
			})))
		})
	})
})

// nested returns the value at a path of a decoded YAML document, nil if any part is missing.
func nested(doc map[string]any, path ...string) any {
	var v any = doc
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}
