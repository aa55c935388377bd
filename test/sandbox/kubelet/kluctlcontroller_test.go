// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

var _ = Describe("The kluctl controller in the kubelet stand-in", func() {
	It("reads KLUCTL_CONTROLLERS like FLUX_CONTROLLERS, naming the variable in errors", func() {
		Expect(ParseControllers(KluctlControllersEnv, "kluctl:v2.28.2=/cache/kluctl")).To(Equal(map[string]string{"kluctl:v2.28.2": "/cache/kluctl"}))
		_, err := ParseControllers(KluctlControllersEnv, "/cache/kluctl")
		Expect(err).To(MatchError(`KLUCTL_CONTROLLERS: "/cache/kluctl" is not <image>=<binary>`))
	})

	DescribeTable("validates Options.KluctlControllers",
		func(binaries map[string]string, message string) {
			Expect(ValidateKluctlControllers(binaries)).To(MatchError(ContainSubstring(message)))
		},
		Entry("a Flux controller", map[string]string{"source-controller:v1.9.5": "/s"}, `unknown kluctl controller image "source-controller:v1.9.5"`),
		Entry("no tag", map[string]string{"kluctl": "/k"}, `image "kluctl" in Options.KluctlControllers has no version tag`),
		Entry("no binary", map[string]string{"kluctl:v2.28.2": ""}, "no binary for kluctl controller image kluctl:v2.28.2"),
	)

	It("lists the image of every embedded kluctl release", func() {
		images, err := KluctlControllerImages()
		Expect(err).NotTo(HaveOccurred())
		Expect(images).To(HaveLen(len(manifests.KluctlVersions())))
		Expect(images).To(ContainElement("kluctl:v2.28.2"))
		binaries := map[string]string{}
		for _, image := range images {
			binaries[image] = "/cache/" + image
		}
		Expect(ValidateKluctlControllers(binaries)).To(Succeed())
	})

	It("runs both kinds of controllers side by side", func() {
		flux := map[string]string{"source-controller:v1.9.5": "/s"}
		k := &Kubelet{binaries: Binaries(flux, map[string]string{"kluctl:v2.28.2": "/k"})}
		d := kluctlDeploymentOf("my.mirror:5000/kluctl/kluctl:v2.28.2")
		_, component, binary, ok := k.runnable(d)
		Expect(ok).To(BeTrue())
		Expect(component).To(Equal(kluctlController))
		Expect(binary).To(Equal("/k"))
		Expect(flux).To(HaveLen(1), "the options stay as they are")
	})

	DescribeTable("runs the command of the container without tini",
		func(command []string, rc runnableController, want []string, message string) {
			got, err := containerCommand(corev1.Container{Name: "controller", Command: command}, rc)
			if message != "" {
				Expect(err).To(MatchError(ContainSubstring(message)))
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want))
		},
		Entry("the image's entrypoint", nil, runnableKluctlController, []string(nil), ""),
		Entry("tini -- kluctl", []string{"tini", "--", "kluctl", "controller", "run"}, runnableKluctlController, []string{"controller", "run"}, ""),
		Entry("kluctl by its path", []string{"/usr/bin/kluctl", "controller", "run"}, runnableKluctlController, []string{"controller", "run"}, ""),
		Entry("another executable", []string{"tini", "--", "sh", "-c", "kluctl"}, runnableKluctlController, nil, `container controller runs the command "tini -- sh -c kluctl"; the sandbox can only run the image's entrypoint or "kluctl"`),
		Entry("a Flux controller with a command", []string{"source-controller"}, runnableFluxControllers[sourceController], nil, `can only run the image's entrypoint or "(none)"`),
	)

	It("runs the delivered Deployment with loopback listeners, leader election off and the known_hosts ConfigMap as a file", func(ctx context.Context) {
		d := renderedKluctlDeployment()
		c := d.Spec.Template.Spec.Containers[0]
		Expect(c.Command).To(Equal([]string{"tini", "--", "kluctl", "controller", "run"}), "the delivered command")
		Expect(c.Args).To(ContainElement("--leader-elect"), "the delivered args")

		i := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil })
		Expect(i).NotTo(BeNumerically("<", 0), "the delivered known_hosts volume")
		knownHosts := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Spec.Template.Spec.Volumes[i].ConfigMap.Name},
			Data:       map[string]string{"ssh_known_hosts": "[127.0.0.1]:2222 ssh-ed25519 AAAA\n"},
		}
		reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(knownHosts).Build()
		dir := GinkgoT().TempDir()
		pc, err := prepareContainer(ctx, reader, d.Spec.Template.Spec, c, kluctlController, podFields{namespace: d.Namespace, name: "pod", serviceAccount: "kluctl-controller"}, dir, nil)
		Expect(err).NotTo(HaveOccurred())

		Expect(pc.args[:2]).To(Equal([]string{"controller", "run"}))
		Expect(pc.args).NotTo(ContainElement("--leader-elect"))
		Expect(pc.args).To(ContainElement("--leader-elect=false"))
		for _, flag := range []string{"metrics-bind-address", "health-probe-bind-address", "source-override-bind-address"} {
			value, ok := flagValue(pc.args, flag)
			Expect(ok).To(BeTrue(), "--%s is set", flag)
			host, _, err := net.SplitHostPort(value)
			Expect(err).NotTo(HaveOccurred())
			Expect(host).To(Equal("127.0.0.1"), "--%s", flag)
		}
		health, _ := flagValue(pc.args, "health-probe-bind-address")
		Expect(pc.addresses).To(HaveKeyWithValue(int32(8081), health), "the readiness probe's port is the health listener")
		_, err = readinessProbe(c, pc.addresses)
		Expect(err).NotTo(HaveOccurred())

		env := map[string]string{}
		for _, e := range pc.env {
			name, value, _ := strings.Cut(e, "=")
			env[name] = value
		}
		Expect(env).To(HaveKeyWithValue("HOME", filepath.Join(dir, "volumes", "tmp")))
		Expect(env).To(HaveKeyWithValue("KLUCTL_CACHE_DIR", filepath.Join(dir, "volumes", "tmp", "kluctl-cache")), "the image's env")
		Expect(env).To(HaveKeyWithValue("PATH", ContainSubstring("/usr/bin")), "the image has git on its PATH")
		Expect(filepath.Join(dir, "volumes", "tmp")).To(BeADirectory())
		Expect(env).To(HaveKey("SSH_KNOWN_HOSTS"))
		Expect(env["SSH_KNOWN_HOSTS"]).To(HavePrefix(dir))
		Expect(os.ReadFile(env["SSH_KNOWN_HOSTS"])).To(Equal([]byte(knownHosts.Data["ssh_known_hosts"])))
	})

	It("does not start without the ConfigMap of a volume that is not optional", func(ctx context.Context) {
		d := renderedKluctlDeployment()
		reader := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
		_, err := mountVolumes(ctx, reader, d.Namespace, d.Spec.Template.Spec, d.Spec.Template.Spec.Containers[0], GinkgoT().TempDir())
		Expect(err).To(MatchError(ContainSubstring("failed reading ConfigMap kluctl-ssh-known-hosts")))

		spec := d.Spec.Template.Spec.DeepCopy()
		i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil })
		spec.Volumes[i].ConfigMap.Optional = ptr.To(true)
		dir := GinkgoT().TempDir()
		volumes, err := mountVolumes(ctx, reader, d.Namespace, *spec, spec.Containers[0], dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(volumes).To(HaveKeyWithValue("/etc/shoot-flux/ssh", filepath.Join(dir, spec.Volumes[i].Name)))
		Expect(filepath.Join(dir, spec.Volumes[i].Name)).To(BeADirectory(), "an optional ConfigMap that is missing is an empty directory")
	})

	It("names the kubeconfig context default, as kluctl names the in-cluster one", func() {
		file := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(writeTokenKubeconfig(file, &cluster.Cluster{Name: "shoot", Config: &rest.Config{Host: "https://127.0.0.1:6443"}}, "token-value")).To(Succeed())
		cfg, err := clientcmd.LoadFromFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(cfg.CurrentContext).To(Equal("default"))
		Expect(cfg.Contexts).To(HaveKey("default"))
	})
})

func kluctlDeploymentOf(image string) *appsv1.Deployment {
	return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "controller", Image: image},
	}}}}}
}

// renderedKluctlDeployment returns the kluctl controller Deployment the extension delivers.
func renderedKluctlDeployment() *appsv1.Deployment {
	GinkgoHelper()
	rendered, err := manifests.RenderKluctl(manifests.KluctlOptions{Version: manifests.KluctlVersions()[0], Namespace: "kluctl-system"})
	Expect(err).NotTo(HaveOccurred())
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(rendered)), 4096)
	for {
		obj := map[string]any{}
		Expect(decoder.Decode(&obj)).To(Succeed(), "the rendered manifests hold the Deployment")
		if obj["kind"] != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, d)).To(Succeed())
		return d
	}
}

var _ = Describe("killGroup", func() {
	It("ends what the pod's process left behind, as the end of a container does", func() {
		pidFile := filepath.Join(GinkgoT().TempDir(), "child")
		cmd := exec.Command("sh", "-c", `sleep 300 & echo $! > "$1"`, "sh", pidFile)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		process, err := StartProcess(cmd)
		Expect(err).NotTo(HaveOccurred())
		Eventually(process.Done()).WithTimeout(time.Minute).Should(BeClosed())
		data, err := os.ReadFile(pidFile)
		Expect(err).NotTo(HaveOccurred())
		child := "/proc/" + strings.TrimSpace(string(data))
		Expect(child).To(BeADirectory(), "the child outlives its parent")

		killGroup(process)
		Eventually(func() bool {
			_, err := os.Stat(child)
			return os.IsNotExist(err)
		}).WithTimeout(time.Minute).Should(BeTrue())
	})
})
