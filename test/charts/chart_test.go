// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package charts_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	healthcheckconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	gardenerextensions "github.com/gardener/gardener/pkg/extensions"
	"github.com/gardener/gardener/pkg/resourcemanager/controller/garbagecollector/references"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"
	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/charts"
	"github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux/app"
	"github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/loader"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
)

const (
	// dockerConfigJSON are the registry credentials of the values that set everything.
	dockerConfigJSON = `{"auths":{"registry.example.com":{"auth":"c2hvb3QtZmx1eDpzZWNyZXQ="}}}`

	namespace      = "extension-shoot-flux-x7k2p"
	deploymentName = charts.ExtensionChartName
	// defaultImageRepository is the image repository the chart deploys without an image override.
	defaultImageRepository = "europe-docker.pkg.dev/gardener-project/public/extensions/gardener-extension-shoot-flux"
)

// defaultImage is the image the chart deploys without an image override: the release of the
// VERSION file, never a moving tag.
func defaultImage() string {
	GinkgoHelper()
	return defaultImageRepository + ":" + strings.TrimSpace(string(readRepoFile("VERSION")))
}

// customValues sets every value that changes what the chart renders.
func customValues() map[string]any {
	return map[string]any{
		"replicaCount": 2,
		"image": map[string]any{
			"repository": "registry.example.com/shoot-flux",
			"tag":        "sha256:" + strings.Repeat("ab", 32),
			"pullPolicy": "Always",
		},
		"priorityClassName": "gardener-system-900",
		"podLabels":         map[string]any{"networking.gardener.cloud/to-private-networks": "allowed"},
		"resources":         map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}},
		"vpa":               map[string]any{"enabled": false},
		"controllers": map[string]any{
			"extension":                 map[string]any{"concurrentSyncs": 5},
			"heartbeat":                 map[string]any{"renewIntervalSeconds": 15},
			"ignoreOperationAnnotation": true,
		},
		"clientRateLimits":   map[string]any{"qps": 250, "burst": 400},
		"disableControllers": []any{"heartbeat"},
		"leaderElectionID":   "shoot-flux-leader",
		"logLevel":           "debug",
		"logFormat":          "text",
		"healthPort":         9081,
		"metrics":            map[string]any{"port": 9080},
		"pprofBindAddress":   "127.0.0.1:6060",
		"imagePullSecret":    map[string]any{"dockerConfigJSON": dockerConfigJSON},
		"config": map[string]any{
			"defaultFluxVersion":   "v2.9.5",
			"defaultKluctlVersion": "v2.28.2",
			"sshKey":               map[string]any{"algorithm": "rsa-4096", "scope": "shoot"},
			"knownHosts":           knownHostsLine("git.example.com") + knownHostsLine("[git.example.com]:2222"),
			"registry":             "registry.example.com/mirror",
			"hostPolicy":           map[string]any{"allowedNetworks": []any{"10.20.0.0/16"}, "allowedPorts": []any{"22", "7999-8000"}},
			"rollout":              map[string]any{"window": "immediate"},
			"monitoring":           map[string]any{"shoot": map[string]any{"enabled": false}},
			"timeouts": map[string]any{
				"managedResourceApplied": "3m",
				"deletion":               "10m",
				"hostKeyScan":            "20s",
				"bootstrapFinalizers":    "2m",
			},
			"allowInsecureHostKeys": true,
			"healthCheckConfig":     map[string]any{"syncPeriod": "1m"},
			"limits":                map[string]any{"projectConfigMapMaxBytes": 1 << 20, "kluctlArgsMaxBytes": 65536, "deployKeysMaxEntries": 3000},
			"controllers": map[string]any{
				"defaults":          map[string]any{"priorityClassName": "system-cluster-critical", "tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}}},
				"source-controller": map[string]any{"concurrent": 8, "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}, "nodeSelector": map[string]any{"pool": "gitops"}},
			},
		},
		"imageVectorOverwrite": map[string]any{
			"images": []any{map[string]any{
				"name":          "flux-source-controller",
				"repository":    "registry.example.com/fluxcd/source-controller",
				"tag":           "v1.9.5",
				"targetVersion": "= 2.9.5",
			}},
		},
	}
}

// knownHostsLine returns a known_hosts line with an Ed25519 host key derived from the host name,
// so that repeated renderings are equal.
func knownHostsLine(host string) string {
	seed := sha256.Sum256([]byte(host))
	key, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed[:]).Public())
	if err != nil {
		panic(err)
	}
	return host + " " + string(ssh.MarshalAuthorizedKey(key))
}

func deploymentOf(objs []*unstructured.Unstructured) *appsv1.Deployment {
	GinkgoHelper()
	return typed[appsv1.Deployment](find(objs, "Deployment", deploymentName))
}

func containerOf(objs []*unstructured.Unstructured) corev1.Container {
	GinkgoHelper()
	d := deploymentOf(objs)
	Expect(d.Spec.Template.Spec.Containers).To(HaveLen(1))
	return d.Spec.Template.Spec.Containers[0]
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// loadConfig loads the rendered component configuration the way the controller does at start.
func loadConfig(objs []*unstructured.Unstructured) *config.ControllerConfiguration {
	GinkgoHelper()
	cm := typed[corev1.ConfigMap](find(objs, "ConfigMap", deploymentName+"-config"))
	Expect(cm.Data).To(HaveKey("config.yaml"))
	cfg, err := loader.Load([]byte(cm.Data["config.yaml"]))
	Expect(err).NotTo(HaveOccurred(), "rendered config:\n%s", cm.Data["config.yaml"])
	return cfg
}

var _ = Describe("extension chart", func() {
	Describe("with gardenlet's values only", func() {
		var objs []*unstructured.Unstructured

		BeforeEach(func() {
			objs = mustRender(namespace, gardenletValues())
		})

		It("renders the controller with its RBAC, configuration, VPA, garden access and monitoring, and nothing optional", func() {
			Expect(kindsAndNames(objs)).To(ConsistOf(
				"ServiceAccount/"+deploymentName,
				"Secret/garden-access-shoot-flux",
				"ConfigMap/"+deploymentName+"-config",
				"ClusterRole/extensions.gardener.cloud:shoot-flux",
				"ClusterRoleBinding/extensions.gardener.cloud:shoot-flux",
				"Role/"+deploymentName,
				"RoleBinding/"+deploymentName,
				"Service/"+deploymentName,
				"Deployment/"+deploymentName,
				"VerticalPodAutoscaler/"+deploymentName,
				"PrometheusRule/"+deploymentName,
				"ConfigMap/"+deploymentName+"-dashboard",
			))
			for _, o := range objs {
				switch {
				case o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding":
				case o.GetName() == deploymentName+"-dashboard":
					Expect(o.GetNamespace()).To(Equal("garden"), "the seed's Plutono reads dashboards from there")
				default:
					Expect(o.GetNamespace()).To(Equal(namespace), "%s/%s", o.GetKind(), o.GetName())
				}
			}
		})

		It("runs the controller with the flags of its options and gardenlet's version", func() {
			c := containerOf(objs)
			Expect(c.Image).To(Equal(defaultImage()))
			Expect(c.ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
			Expect(c.Args).To(Equal([]string{
				"--config=/etc/shoot-flux/config.yaml",
				"--max-concurrent-reconciles=20",
				"--heartbeat-namespace=" + namespace,
				"--heartbeat-renew-interval-seconds=30",
				"--ignore-operation-annotation=false",
				"--client-qps=100",
				"--client-burst=130",
				"--leader-election-id=gardener-extension-shoot-flux-leader-election",
				"--gardener-version=v1.149.3",
				"--garden-cluster-identity=garden",
				"--log-level=info",
				"--log-format=json",
				"--metrics-bind-address=:8080",
				"--health-bind-address=:8081",
			}))
			Expect(c.Env).To(ContainElement(corev1.EnvVar{
				Name:      "LEADER_ELECTION_NAMESPACE",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
			}))
			_, ok := envValue(c, "IMAGEVECTOR_OVERWRITE")
			Expect(ok).To(BeFalse())

			volumes := deploymentOf(objs).Spec.Template.Spec.Volumes
			Expect(volumes).To(ContainElement(HaveField("ConfigMap.Name", deploymentName+"-config")))
			Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "config", MountPath: "/etc/shoot-flux", ReadOnly: true}))
		})

		It("passes only flags the controller binary knows", func() {
			for _, values := range []map[string]any{gardenletValues(), merge(gardenletValues(), customValues())} {
				args := containerOf(mustRender(namespace, values)).Args
				cmd := app.NewControllerCommand()
				Expect(cmd.Flags().Parse(args)).To(Succeed(), "%v", args)
				Expect(cmd.Flags().Args()).To(BeEmpty())
				for _, arg := range args {
					name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
					Expect(cmd.Flags().Lookup(name).Value.String()).To(Or(Equal(value), Equal("["+value+"]")), "--%s", name)
				}
			}
		})

		It("probes the health server and runs unprivileged", func() {
			d := deploymentOf(objs)
			c := containerOf(objs)
			Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
			Expect(c.LivenessProbe.HTTPGet.Port.IntValue()).To(Equal(8081))
			Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
			Expect(c.ReadinessProbe.HTTPGet.Port.IntValue()).To(Equal(8081))

			pod := d.Spec.Template.Spec
			Expect(pod.PriorityClassName).To(Equal("gardener-system-900"))
			Expect(pod.ServiceAccountName).To(Equal(deploymentName))
			Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
			Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
			Expect(c.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
			Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
		})

		// Tenants' inputs are bounded, and so is what they can make the one process of a seed hold;
		// the limit stops a leak before it takes the seed's memory (values.yaml says how it was chosen).
		It("bounds the memory of the controller, and the VPA keeps its requests below the limit", func() {
			c := containerOf(objs)
			Expect(c.Resources.Requests.Memory().String()).To(Equal("128Mi"))
			Expect(c.Resources.Limits.Memory().String()).To(Equal("512Mi"))
			var vpa *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "VerticalPodAutoscaler" {
					vpa = o
				}
			}
			Expect(vpa).NotTo(BeNil())
			policies, _, err := unstructured.NestedSlice(vpa.Object, "spec", "resourcePolicy", "containerPolicies")
			Expect(err).NotTo(HaveOccurred())
			Expect(policies).To(HaveLen(1))
			Expect(policies[0]).To(HaveKeyWithValue("maxAllowed", map[string]any{"memory": "512Mi"}))
			Expect(policies[0]).To(HaveKeyWithValue("controlledValues", "RequestsOnly"))
		})

		It("gives the read-only container a bounded /tmp and no other writable path", func() {
			c := containerOf(objs)
			volumes := deploymentOf(objs).Spec.Template.Spec.Volumes
			var writable []string
			for _, m := range c.VolumeMounts {
				for _, v := range volumes {
					if v.Name == m.Name && v.EmptyDir != nil {
						writable = append(writable, m.MountPath)
						Expect(v.EmptyDir.SizeLimit).NotTo(BeNil(), "emptyDir %s needs a sizeLimit", v.Name)
						Expect(v.EmptyDir.SizeLimit.String()).To(Equal("32Mi"))
					}
				}
			}
			Expect(writable).To(ConsistOf("/tmp"))
		})

		It("starts with the controller's default configuration", func() {
			defaults, err := loader.Defaults()
			Expect(err).NotTo(HaveOccurred())
			Expect(loadConfig(objs)).To(Equal(defaults))
		})

		It("gives the pod its own garden kubeconfig where gardenlet's generic kubeconfig expects the token", func() {
			d := deploymentOf(objs)
			c := containerOf(objs)
			// The generic kubeconfig's tokenFile is gardener's PathGardenToken: the token must be
			// projected into exactly that directory.
			Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "garden-kubeconfig", MountPath: gardenerutils.VolumeMountPathGenericGardenKubeconfig, ReadOnly: true}))
			Expect(filepath.Dir(gardenerutils.PathGardenToken)).To(Equal(gardenerutils.VolumeMountPathGenericGardenKubeconfig))
			gardenKubeconfig, ok := envValue(c, fluxcmd.EnvGardenKubeconfig)
			Expect(ok).To(BeTrue())
			Expect(gardenKubeconfig).To(Equal(gardenerutils.PathGenericGardenKubeconfig))

			var projected *corev1.ProjectedVolumeSource
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "garden-kubeconfig" {
					projected = v.Projected
				}
			}
			Expect(projected).NotTo(BeNil())
			Expect(projected.Sources).To(ConsistOf(
				corev1.VolumeProjection{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: genericKubeconfigSecret},
					Items:                []corev1.KeyToPath{{Key: "kubeconfig", Path: "kubeconfig"}},
					Optional:             ptr.To(false),
				}},
				corev1.VolumeProjection{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "garden-access-shoot-flux"},
					Items:                []corev1.KeyToPath{{Key: resourcesv1alpha1.DataKeyToken, Path: "token"}},
					Optional:             ptr.To(false),
				}},
			))

			// gardenlet must neither replace the mount (label) nor may gardener-resource-manager
			// garbage-collect the immutable kubeconfig Secret (reference annotation).
			Expect(d.Labels).To(HaveKeyWithValue(v1beta1constants.LabelInjectGardenKubeconfig, "false"))
			refKey := references.AnnotationKey(references.KindSecret, genericKubeconfigSecret)
			Expect(d.Annotations).To(HaveKeyWithValue(refKey, genericKubeconfigSecret))
			Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue(refKey, genericKubeconfigSecret))

			// Even if gardenlet ignored the label, its injection keeps an existing GARDEN_KUBECONFIG.
			injected := d.DeepCopy()
			Expect(gardenerutils.InjectGenericGardenKubeconfig(injected, genericKubeconfigSecret, "garden-access-extension", gardenerutils.VolumeMountPathGenericGardenKubeconfig)).To(Succeed())
			Expect(injected.Spec.Template.Spec).To(Equal(d.Spec.Template.Spec))
		})

		It("asks gardenlet's token requestor for a dedicated garden ServiceAccount", func() {
			secret := typed[corev1.Secret](find(objs, "Secret", "garden-access-shoot-flux"))
			Expect(secret.Labels).To(HaveKeyWithValue(resourcesv1alpha1.ResourceManagerPurpose, resourcesv1alpha1.LabelPurposeTokenRequest))
			Expect(secret.Labels).To(HaveKeyWithValue(resourcesv1alpha1.ResourceManagerClass, resourcesv1alpha1.ResourceManagerClassGarden))
			Expect(secret.Annotations).To(HaveKeyWithValue(resourcesv1alpha1.ServiceAccountName, "shoot-flux"))
			Expect(secret.Annotations).To(HaveKeyWithValue(resourcesv1alpha1.Ignore, "true"))
			Expect(secret.Data).To(BeEmpty())

			var labels map[string]string
			Expect(json.Unmarshal([]byte(secret.Annotations[resourcesv1alpha1.ServiceAccountLabels]), &labels)).To(Succeed())
			Expect(labels).To(Equal(map[string]string{"shoot-flux.extensions.gardener.cloud/garden-access": "true"}))
			Expect(secret.Annotations[resourcesv1alpha1.ServiceAccountName]).NotTo(HavePrefix(v1beta1constants.ExtensionGardenServiceAccountPrefix))
		})

		It("grants the least seed privileges the controller needs", func() {
			cr := typed[rbacv1.ClusterRole](find(objs, "ClusterRole", "extensions.gardener.cloud:shoot-flux"))
			Expect(cr.Rules).To(ConsistOf(
				rbacv1.PolicyRule{APIGroups: []string{"extensions.gardener.cloud"}, Resources: []string{"clusters"}, Verbs: []string{"get", "list", "watch"}},
				rbacv1.PolicyRule{APIGroups: []string{"extensions.gardener.cloud"}, Resources: []string{"extensions", "extensions/status"}, Verbs: []string{"get", "list", "watch", "patch", "update"}},
				rbacv1.PolicyRule{APIGroups: []string{"resources.gardener.cloud"}, Resources: []string{"managedresources"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "patch", "delete"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
				rbacv1.PolicyRule{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"scrapeconfigs", "prometheusrules"}, Verbs: []string{"get", "list", "create", "update", "delete"}},
				rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update", "delete"}},
				rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list", "watch"}},
				rbacv1.PolicyRule{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			))

			role := typed[rbacv1.Role](find(objs, "Role", deploymentName))
			Expect(role.Rules).To(ConsistOf(
				rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "list", "watch"}},
				rbacv1.PolicyRule{
					APIGroups:     []string{"coordination.k8s.io"},
					Resources:     []string{"leases"},
					ResourceNames: []string{"gardener-extension-shoot-flux-leader-election", gardenerextensions.HeartBeatResourceName},
					Verbs:         []string{"update", "patch"},
				},
			))

			for _, binding := range []struct {
				subjects []rbacv1.Subject
				roleRef  rbacv1.RoleRef
			}{
				{typed[rbacv1.ClusterRoleBinding](find(objs, "ClusterRoleBinding", cr.Name)).Subjects, typed[rbacv1.ClusterRoleBinding](find(objs, "ClusterRoleBinding", cr.Name)).RoleRef},
				{typed[rbacv1.RoleBinding](find(objs, "RoleBinding", role.Name)).Subjects, typed[rbacv1.RoleBinding](find(objs, "RoleBinding", role.Name)).RoleRef},
			} {
				Expect(binding.subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: deploymentName, Namespace: namespace}))
				Expect([]string{cr.Name, role.Name}).To(ContainElement(binding.roleRef.Name))
			}
		})

		It("lets the seed Prometheus scrape the metrics port", func() {
			d := deploymentOf(objs)
			Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("prometheus.io/scrape", "true"))
			Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("prometheus.io/port", "8080"))
			svc := typed[corev1.Service](find(objs, "Service", deploymentName))
			Expect(svc.Annotations).To(HaveKeyWithValue("networking.resources.gardener.cloud/from-all-seed-scrape-targets-allowed-ports", `[{"port":8080,"protocol":"TCP"}]`))
			Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
			Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("networking.gardener.cloud/to-runtime-apiserver", "allowed"))
			Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("networking.gardener.cloud/to-public-networks", "allowed"))
		})
	})

	Describe("with gardenlet's injected garden identity", func() {
		var objs []*unstructured.Unstructured

		BeforeEach(func() {
			objs = mustRender(namespace, merge(withoutGardenKubeconfig(), map[string]any{
				"gardenAccess": map[string]any{"dedicatedServiceAccount": map[string]any{"enabled": false}},
			}))
		})

		It("leaves the garden kubeconfig to gardenlet's injection", func() {
			Expect(kindsAndNames(objs)).NotTo(ContainElement("Secret/garden-access-shoot-flux"))
			d := deploymentOf(objs)
			Expect(d.Labels).NotTo(HaveKey(v1beta1constants.LabelInjectGardenKubeconfig))
			_, ok := envValue(containerOf(objs), fluxcmd.EnvGardenKubeconfig)
			Expect(ok).To(BeFalse())

			Expect(gardenerutils.InjectGenericGardenKubeconfig(d, genericKubeconfigSecret, "garden-access-extension", gardenerutils.VolumeMountPathGenericGardenKubeconfig)).To(Succeed())
			gardenKubeconfig, ok := envValue(d.Spec.Template.Spec.Containers[0], fluxcmd.EnvGardenKubeconfig)
			Expect(ok).To(BeTrue())
			Expect(gardenKubeconfig).To(Equal(gardenerutils.PathGenericGardenKubeconfig))
		})
	})

	Describe("misconfigurations", func() {
		It("fails when the dedicated garden identity lacks gardenlet's generic kubeconfig", func() {
			_, err := render(namespace, withoutGardenKubeconfig())
			Expect(err).To(MatchError(ContainSubstring("injectGardenKubeconfig: true")))
		})

		It("refuses a ServiceAccount name that gardener treats as the extension's own identity", func() {
			_, err := render(namespace, merge(gardenletValues(), map[string]any{
				"gardenAccess": map[string]any{"dedicatedServiceAccount": map[string]any{"name": "extension-shoot-flux"}},
			}))
			Expect(err).To(MatchError(ContainSubstring(`must not start with "extension-"`)))
		})
	})

	Describe("with every value set", func() {
		var objs []*unstructured.Unstructured

		BeforeEach(func() {
			objs = mustRender(namespace, merge(gardenletValues(), customValues()))
		})

		It("passes the values to the controller's flags", func() {
			c := containerOf(objs)
			Expect(c.Image).To(Equal("registry.example.com/shoot-flux@sha256:" + strings.Repeat("ab", 32)))
			Expect(c.ImagePullPolicy).To(Equal(corev1.PullAlways))
			Expect(c.Args).To(Equal([]string{
				"--config=/etc/shoot-flux/config.yaml",
				"--max-concurrent-reconciles=5",
				"--heartbeat-namespace=" + namespace,
				"--heartbeat-renew-interval-seconds=15",
				"--ignore-operation-annotation=true",
				"--client-qps=250",
				"--client-burst=400",
				"--disable-controllers=heartbeat",
				"--leader-election-id=shoot-flux-leader",
				"--gardener-version=v1.149.3",
				"--garden-cluster-identity=garden",
				"--log-level=debug",
				"--log-format=text",
				"--metrics-bind-address=:9080",
				"--health-bind-address=:9081",
				"--pprof-bind-address=127.0.0.1:6060",
			}))
			Expect(c.LivenessProbe.HTTPGet.Port.IntValue()).To(Equal(9081))
			Expect(c.Resources.Requests.Memory().String()).To(Equal("256Mi"))

			d := deploymentOf(objs)
			Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("networking.gardener.cloud/to-private-networks", "allowed"))
			Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("prometheus.io/port", "9080"))

			role := typed[rbacv1.Role](find(objs, "Role", deploymentName))
			Expect(role.Rules[1].ResourceNames).To(ContainElement("shoot-flux-leader"))
		})

		It("writes every configuration field so that the controller loads it", func() {
			cfg := loadConfig(objs)
			values := customValues()["config"].(map[string]any)
			// The limits that are not set keep their defaults.
			limits := configv1alpha1.DefaultLimits()
			limits.ProjectConfigMapMaxBytes = 1 << 20
			limits.KluctlArgsMaxBytes = 65536
			limits.DeployKeysMaxEntries = 3000
			Expect(cfg).To(Equal(&config.ControllerConfiguration{
				DefaultFluxVersion:    "v2.9.5",
				DefaultKluctlVersion:  "v2.28.2",
				SSHKey:                config.SSHKeyConfig{Algorithm: config.KeyAlgorithmRSA4096, Scope: config.KeyScopeShoot},
				KnownHosts:            values["knownHosts"].(string),
				Registry:              "registry.example.com/mirror",
				AllowInsecureHostKeys: true,
				Timeouts: config.Timeouts{
					ManagedResourceApplied: metav1.Duration{Duration: 3 * time.Minute},
					Deletion:               metav1.Duration{Duration: 10 * time.Minute},
					HostKeyScan:            metav1.Duration{Duration: 20 * time.Second},
					BootstrapFinalizers:    metav1.Duration{Duration: 2 * time.Minute},
				},
				HealthCheckConfig:   &healthcheckconfigv1alpha1.HealthCheckConfig{SyncPeriod: metav1.Duration{Duration: time.Minute}},
				HostPolicy:          config.HostPolicy{AllowedNetworks: []string{"10.20.0.0/16"}, AllowedPorts: []string{"22", "7999-8000"}},
				Rollout:             config.Rollout{Window: config.RolloutWindowImmediate},
				Monitoring:          config.Monitoring{Shoot: config.ShootMonitoring{Enabled: false}},
				ImagePullSecretFile: "/etc/shoot-flux-image-pull/.dockerconfigjson",
				Limits:              limits,
				Controllers: map[string]config.ControllerSettings{
					"defaults": {
						PriorityClassName: ptr.To("system-cluster-critical"),
						Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
					},
					"source-controller": {
						Concurrent:   ptr.To[int32](8),
						Resources:    &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
						NodeSelector: map[string]string{"pool": "gitops"},
					},
				},
			}))
		})

		It("mounts the registry credentials where imagePullSecretFile points, in a format the controller reads", func() {
			secret := typed[corev1.Secret](find(objs, "Secret", deploymentName+"-image-pull"))
			Expect(secret.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
			d := deploymentOf(objs)
			Expect(d.Spec.Template.Annotations).To(HaveKey("checksum/secret-image-pull"))
			path := loadConfig(objs).ImagePullSecretFile
			var volume string
			for _, m := range containerOf(objs).VolumeMounts {
				if m.MountPath == filepath.Dir(path) {
					volume = m.Name
				}
			}
			Expect(volume).NotTo(BeEmpty(), "no volume is mounted at %s", filepath.Dir(path))
			Expect(d.Spec.Template.Spec.Volumes).To(ContainElement(corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}}}))

			// The controller reads the file on every reconcile: write the Secret's key and load it.
			file := filepath.Join(GinkgoT().TempDir(), filepath.Base(path))
			Expect(secret.Data).To(HaveKey(filepath.Base(path)))
			Expect(os.WriteFile(file, secret.Data[filepath.Base(path)], 0o600)).To(Succeed())
			data, err := loader.LoadImagePullSecret(file)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(data)).To(Equal(dockerConfigJSON))
		})

		It("rolls the pods when the configuration or the image vector overwrite changes", func() {
			annotations := deploymentOf(objs).Spec.Template.Annotations
			Expect(annotations).To(HaveKey("checksum/configmap-config"))
			Expect(annotations).To(HaveKey("checksum/configmap-imagevector-overwrite"))

			changed := customValues()
			changed["config"].(map[string]any)["registry"] = "registry.example.org/other"
			changed["imageVectorOverwrite"].(map[string]any)["images"].([]any)[0].(map[string]any)["tag"] = "v1.9.6"
			changedAnnotations := deploymentOf(mustRender(namespace, merge(gardenletValues(), changed))).Spec.Template.Annotations
			Expect(changedAnnotations["checksum/configmap-config"]).NotTo(Equal(annotations["checksum/configmap-config"]))
			Expect(changedAnnotations["checksum/configmap-imagevector-overwrite"]).NotTo(Equal(annotations["checksum/configmap-imagevector-overwrite"]))
		})

		It("keeps one pod of several through voluntary disruptions and leaves scaling to the operator", func() {
			Expect(kindsAndNames(objs)).NotTo(ContainElement("VerticalPodAutoscaler/" + deploymentName))
			pdb := typed[policyv1.PodDisruptionBudget](find(objs, "PodDisruptionBudget", deploymentName))
			Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
			Expect(pdb.Spec.Selector.MatchLabels).To(Equal(deploymentOf(objs).Spec.Selector.MatchLabels))
		})

		It("mounts the image vector overwrite where IMAGEVECTOR_OVERWRITE points, in a format the controller reads", func(ctx SpecContext) {
			cm := typed[corev1.ConfigMap](find(objs, "ConfigMap", deploymentName+"-imagevector-overwrite"))
			c := containerOf(objs)
			path, ok := envValue(c, gardenerimagevector.OverrideEnv)
			Expect(ok).To(BeTrue())
			var mountPath string
			for _, m := range c.VolumeMounts {
				if m.Name == "imagevector-overwrite" {
					mountPath = m.MountPath
				}
			}
			Expect(filepath.Dir(path)).To(Equal(mountPath))
			Expect(cm.Data).To(HaveKey(filepath.Base(path)))

			// The controller reads the file at start: write the rendered content and load it.
			file := filepath.Join(GinkgoT().TempDir(), "images_overwrite.yaml")
			Expect(os.WriteFile(file, []byte(cm.Data[filepath.Base(path)]), 0o600)).To(Succeed())
			GinkgoT().Setenv(gardenerimagevector.OverrideEnv, file)
			vector, err := imagevector.Load()
			Expect(err).NotTo(HaveOccurred())
			image, err := vector.FindImage(imagevector.FluxSourceController, gardenerimagevector.TargetVersion("2.9.5"))
			Expect(err).NotTo(HaveOccurred())
			Expect(image.String()).To(Equal("registry.example.com/fluxcd/source-controller:v1.9.5"))
		})
	})

	Describe("other image and overwrite notations", func() {
		It("prefers a full image reference and accepts the overwrite as a YAML string", func() {
			overwrite := "images:\n- name: kluctl-controller\n  repository: registry.example.com/kluctl/kluctl\n  tag: v2.28.2\n  targetVersion: \"= 2.28.2\"\n"
			objs := mustRender(namespace, merge(gardenletValues(), map[string]any{
				"image":                map[string]any{"ref": "registry.example.com/shoot-flux:v9.9.9"},
				"imageVectorOverwrite": overwrite,
			}))
			Expect(containerOf(objs).Image).To(Equal("registry.example.com/shoot-flux:v9.9.9"))
			cm := typed[corev1.ConfigMap](find(objs, "ConfigMap", deploymentName+"-imagevector-overwrite"))
			Expect(cm.Data["images_overwrite.yaml"]).To(Equal(overwrite))
		})

		It("renders no PodDisruptionBudget for a single replica or when it is disabled", func() {
			Expect(kindsAndNames(mustRender(namespace, gardenletValues()))).NotTo(ContainElement(HavePrefix("PodDisruptionBudget/")))
			Expect(kindsAndNames(mustRender(namespace, merge(gardenletValues(), map[string]any{
				"replicaCount":        3,
				"podDisruptionBudget": map[string]any{"enabled": false},
			})))).NotTo(ContainElement(HavePrefix("PodDisruptionBudget/")))
		})
	})

	DescribeTable("is accepted by a kube-apiserver, and its pods by the restricted Pod Security Standard",
		func(ctx SpecContext, values func() map[string]any, mutate func(*appsv1.Deployment)) {
			ns := createNamespace(ctx, "extension-shoot-flux")
			objs := mustRender(ns, values())
			warnings.Take()

			var deployment *appsv1.Deployment
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					deployment = typed[appsv1.Deployment](o)
					if mutate != nil {
						mutate(deployment)
						u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(deployment)
						Expect(err).NotTo(HaveOccurred())
						o = &unstructured.Unstructured{Object: u}
						o.SetAPIVersion("apps/v1")
						o.SetKind("Deployment")
					}
				}
				Expect(dryRunApply(ctx, o)).To(Succeed(), "%s/%s", o.GetKind(), o.GetName())
			}
			Expect(warnings.Take()).To(BeEmpty())

			// Pod Security admission only warns about workload templates; a pod is what it
			// enforces on. The ServiceAccount admission needs the account to exist.
			sa := typed[corev1.ServiceAccount](find(objs, "ServiceAccount", deploymentName))
			sa.ResourceVersion = ""
			Expect(k8s.Create(ctx, sa)).To(Succeed())
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: deployment.Name + "-",
					Namespace:    ns,
					Labels:       deployment.Spec.Template.Labels,
					Annotations:  deployment.Spec.Template.Annotations,
				},
				Spec: deployment.Spec.Template.Spec,
			}
			Expect(k8s.Create(ctx, pod, client.DryRunAll)).To(Succeed())
			Expect(warnings.Take()).To(BeEmpty())
		},
		Entry("gardenlet's values", gardenletValues, nil),
		Entry("every value set", func() map[string]any { return merge(gardenletValues(), customValues()) }, nil),
		Entry("gardenlet's injected garden identity, after gardenlet's injection",
			func() map[string]any {
				return merge(gardenletValues(), map[string]any{"gardenAccess": map[string]any{"dedicatedServiceAccount": map[string]any{"enabled": false}}})
			},
			func(d *appsv1.Deployment) {
				Expect(gardenerutils.InjectGenericGardenKubeconfig(d, genericKubeconfigSecret, "garden-access-extension", gardenerutils.VolumeMountPathGenericGardenKubeconfig)).To(Succeed())
			}),
	)
})
