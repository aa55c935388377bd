// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	fluximagevector "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rendercache"
)

// KluctlOptions selects what RenderKluctl renders.
type KluctlOptions struct {
	Version   string // e.g. "v2.28.2"; must be in KluctlVersions()
	Namespace string // e.g. "kluctl-system"
	Registry  string // optional registry override (operator setting); "" = image vector as is
	// DisableStrictHostKeyChecking makes the controller accept any SSH host key; set when the
	// operator allows insecure host keys and no host key of the repository could be determined.
	DisableStrictHostKeyChecking bool
	// Tuning are the settings of the Deployment (key KluctlComponent) and image pull credentials.
	Tuning Tuning
}

// EnvDisableStrictHostKeyChecking makes the kluctl controller accept any SSH host key.
const EnvDisableStrictHostKeyChecking = "KLUCTL_SSH_DISABLE_STRICT_HOST_KEY_CHECKING"

const (
	kluctlDeploymentName = "kluctl-controller"
	kluctlContainerName  = "controller"
	kluctlHealthPort     = 8081
	kluctlTmpVolume      = "tmp"

	// kluctl's git client (go-git) refuses SSH connections unless a known_hosts file exists, even
	// when the credentials Secret carries the host keys. The official image ships an empty
	// /etc/ssh/ssh_known_hosts for that; a mirrored or rebuilt image may not, so the controller gets
	// its own (empty) file from a ConfigMap, named by SSH_KNOWN_HOSTS, which go-git reads instead of
	// the default locations.
	kluctlKnownHostsConfigMap = "kluctl-ssh-known-hosts"
	kluctlKnownHostsVolume    = "ssh-known-hosts"
	kluctlKnownHostsDir       = "/etc/shoot-flux/ssh"
	kluctlKnownHostsFile      = "ssh_known_hosts"
	envSSHKnownHosts          = "SSH_KNOWN_HOSTS"
)

// RenderKluctl returns the multi-document YAML of the kluctl controller with upstream's RBAC,
// cluster-admin included (it deploys arbitrary objects), and the image of the vector entry
// kluctl-controller with the registry replaced as for FluxOptions.Registry. Results are cached and
// shared: the slice must not be modified.
func RenderKluctl(opts KluctlOptions) ([]byte, error) {
	return defaultRenderer.renderKluctl(opts)
}

func (r *renderer) renderKluctl(opts KluctlOptions) ([]byte, error) {
	if err := checkVersion("kluctl", opts.Version, kluctlVersions); err != nil {
		return nil, err
	}
	if err := validateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	if err := validateRegistry(opts.Registry); err != nil {
		return nil, err
	}

	key := rendercache.KeyOf("kluctl", opts.Version, opts.Namespace, opts.Registry, strconv.FormatBool(opts.DisableStrictHostKeyChecking))
	return r.tuned(key, opts.Namespace, opts.Tuning, func() ([]byte, error) {
		// The same lookup serves Images, so the reported image is the deployed one.
		image, err := findImage(r.imageVector, fluximagevector.KluctlController, opts.Version, opts.Registry)
		if err != nil {
			return nil, err
		}
		return buildKluctl(opts, image)
	})
}

func buildKluctl(opts KluctlOptions, image string) ([]byte, error) {
	version, namespace := opts.Version, opts.Namespace
	crds, err := readDocuments(version, "crd.yaml")
	if err != nil {
		return nil, err
	}
	manager, err := readDocuments(version, "manager.yaml")
	if err != nil {
		return nil, err
	}
	rbac, err := readDocuments(version, "rbac.yaml")
	if err != nil {
		return nil, err
	}

	for _, crd := range crds {
		kind, err := kindOf(crd)
		if err != nil {
			return nil, fmt.Errorf("kluctl %s crd.yaml: %w", version, err)
		}
		if kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("kluctl %s crd.yaml holds a %q document, expected only CRDs", version, kind)
		}
	}

	var (
		ns         *corev1.Namespace
		deployment *appsv1.Deployment
		objects    []runtime.Object
	)
	for _, doc := range slices.Concat(manager, rbac) {
		obj, err := decodeKluctlObject(doc)
		if err != nil {
			return nil, fmt.Errorf("kluctl %s: %w", version, err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			if ns != nil {
				return nil, fmt.Errorf("kluctl %s has more than one namespace", version)
			}
			ns = o
		case *appsv1.Deployment:
			if deployment != nil || o.Name != kluctlDeploymentName {
				return nil, fmt.Errorf("kluctl %s has an unexpected deployment %q", version, o.Name)
			}
			deployment = o
		default:
			objects = append(objects, obj)
		}
	}
	if ns == nil || deployment == nil {
		return nil, fmt.Errorf("kluctl %s lacks its namespace or deployment %s", version, kluctlDeploymentName)
	}

	ns.Name = namespace
	for _, obj := range objects {
		setNamespace(obj, namespace)
	}
	deployment.Namespace = namespace
	if err := customizeDeployment(deployment, image, opts.DisableStrictHostKeyChecking); err != nil {
		return nil, fmt.Errorf("kluctl %s: %w", version, err)
	}
	objects = append(objects, &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: kluctlKnownHostsConfigMap, Namespace: namespace},
		Data:       map[string]string{kluctlKnownHostsFile: ""},
	})

	var out bytes.Buffer
	if err := appendObject(&out, ns); err != nil {
		return nil, err
	}
	for _, crd := range crds {
		appendDocument(&out, crd)
	}
	for _, obj := range append(objects, deployment) {
		if err := appendObject(&out, obj); err != nil {
			return nil, err
		}
	}
	// The CRD is annotated as a YAML node, which changes nothing else in upstream's document.
	nodes, err := kio.FromBytes(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("kluctl %s: parsing rendered manifests: %w", version, err)
	}
	if err := keepOnDisable(nodes); err != nil {
		return nil, err
	}
	rendered, err := kio.StringAll(nodes)
	if err != nil {
		return nil, fmt.Errorf("kluctl %s: serializing manifests: %w", version, err)
	}
	return []byte(rendered), nil
}

// setNamespace moves namespaced objects and the service accounts that bindings refer to.
func setNamespace(obj runtime.Object, namespace string) {
	setSubjects := func(subjects []rbacv1.Subject) {
		for i := range subjects {
			if subjects[i].Kind == rbacv1.ServiceAccountKind {
				subjects[i].Namespace = namespace
			}
		}
	}
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		o.Namespace = namespace
	case *rbacv1.Role:
		o.Namespace = namespace
	case *rbacv1.RoleBinding:
		o.Namespace = namespace
		setSubjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		setSubjects(o.Subjects)
	}
}

// customizeDeployment keeps upstream's command, ports and service account and sets what the
// extension decides: image, resources and a hardened security context. The root file system is
// read-only, so everything kluctl writes (work dirs, caches, the embedded Python, gpg's home) is
// directed to an emptyDir at /tmp.
func customizeDeployment(deployment *appsv1.Deployment, image string, insecureHostKeys bool) error {
	spec := &deployment.Spec.Template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == kluctlContainerName })
	if i < 0 || len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		return fmt.Errorf("deployment %s does not consist of exactly the container %q", deployment.Name, kluctlContainerName)
	}
	container := &spec.Containers[i]

	// Upstream's annotation names a container "manager" that does not exist, so kubectl logs and
	// exec would fail without -c.
	metav1.SetMetaDataAnnotation(&deployment.Spec.Template.ObjectMeta, "kubectl.kubernetes.io/default-container", kluctlContainerName)
	container.Image = image
	container.ImagePullPolicy = corev1.PullIfNotPresent
	if !slices.Contains(container.Args, "--leader-elect") {
		container.Args = append(container.Args, "--leader-elect")
	}
	container.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		},
		// No CPU limit: throttling would only stretch reconciliations that render Jinja2 and Helm.
		Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		},
	}
	container.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	container.LivenessProbe = httpProbe("/healthz")
	container.ReadinessProbe = httpProbe("/readyz")

	// The image already keeps the helm and kluctl caches in /tmp; gpg (for SOPS) writes to $HOME.
	setEnv(container, "HOME", "/tmp")
	container.VolumeMounts = slices.DeleteFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == kluctlTmpVolume })
	container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: kluctlTmpVolume, MountPath: "/tmp"})
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == kluctlTmpVolume })
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name:         kluctlTmpVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	})

	setEnv(container, envSSHKnownHosts, path.Join(kluctlKnownHostsDir, kluctlKnownHostsFile))
	container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: kluctlKnownHostsVolume, MountPath: kluctlKnownHostsDir, ReadOnly: true})
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name: kluctlKnownHostsVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: kluctlKnownHostsConfigMap},
		}},
	})
	if insecureHostKeys {
		setEnv(container, EnvDisableStrictHostKeyChecking, "true")
	}

	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	spec.SecurityContext.RunAsNonRoot = ptr.To(true)
	spec.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	// The image is built for Linux only, like Flux's controllers, which get the same selector.
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	spec.NodeSelector[corev1.LabelOSStable] = "linux"
	return nil
}

// setEnv sets an environment variable of the container, replacing upstream's value if it has one.
func setEnv(container *corev1.Container, name, value string) {
	container.Env = slices.DeleteFunc(container.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	container.Env = append(container.Env, corev1.EnvVar{Name: name, Value: value})
}

func httpProbe(path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(kluctlHealthPort)},
		},
		InitialDelaySeconds: 5,
		PeriodSeconds:       10,
	}
}

func decodeKluctlObject(doc []byte) (runtime.Object, error) {
	kind, err := kindOf(doc)
	if err != nil {
		return nil, err
	}
	var obj runtime.Object
	switch kind {
	case "Namespace":
		obj = &corev1.Namespace{}
	case "ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "Deployment":
		obj = &appsv1.Deployment{}
	case "Role":
		obj = &rbacv1.Role{}
	case "ClusterRole":
		obj = &rbacv1.ClusterRole{}
	case "RoleBinding":
		obj = &rbacv1.RoleBinding{}
	case "ClusterRoleBinding":
		obj = &rbacv1.ClusterRoleBinding{}
	default:
		return nil, fmt.Errorf("unexpected kind %q", kind)
	}
	// Strict, so that a field the types do not know about is not dropped silently.
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", kind, err)
	}
	return obj, nil
}

func kindOf(doc []byte) (string, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return "", fmt.Errorf("decoding object kind: %w", err)
	}
	return meta.Kind, nil
}

// readDocuments splits an embedded kluctl file into its non-empty YAML documents.
func readDocuments(version, name string) ([][]byte, error) {
	data, err := embedded.ReadFile(path.Join("kluctl", version, name))
	if err != nil {
		return nil, fmt.Errorf("reading embedded kluctl manifests: %w", err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("splitting kluctl %s %s: %w", version, name, err)
		}
		if doc = stripComments(doc); len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripComments drops the comment lines leading a document (the generator's and upstream's
// "generated" notes), which would otherwise end up in the middle of the output.
func stripComments(doc []byte) []byte {
	for len(doc) > 0 && doc[0] == '#' {
		_, rest, _ := bytes.Cut(doc, []byte("\n"))
		doc = rest
	}
	return doc
}

func appendDocument(out *bytes.Buffer, doc []byte) {
	if out.Len() > 0 {
		out.WriteString("---\n")
	}
	out.Write(doc)
	if !bytes.HasSuffix(doc, []byte("\n")) {
		out.WriteByte('\n')
	}
}

func appendObject(out *bytes.Buffer, obj runtime.Object) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %T: %w", obj, err)
	}
	appendDocument(out, data)
	return nil
}
