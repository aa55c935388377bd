// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// serviceAccountDir is where kubelet mounts a pod's API credentials (token, ca.crt, namespace).
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// defaultEmptyDirSize bounds an emptyDir without sizeLimit; kubelet would only bound it by the
// node's disk.
const defaultEmptyDirSize = "64Mi"

// Pod runs the first container of a pod template as a local process the way kubelet would: in a
// private mount namespace rooted at the entrypoint, read-only if asked, with the pod's volumes, args,
// env, user and ServiceAccount. It needs root and unshare(1) and chroot(1).
type Pod struct {
	// Namespace and Name are the pod's metadata.namespace and metadata.name (env fieldRefs).
	Namespace, Name string
	// Spec is the pod template's spec.
	Spec corev1.PodSpec
	// Images maps a container image to the local binary that stands in for it. The binary is the
	// image's entrypoint, found in the root directory under its base name, as in the Dockerfile.
	Images map[string]string
	// API is the API server the pod runs against: an admin config, used to read the volumes'
	// ConfigMaps and Secrets and to request the ServiceAccount's token, as kubelet does.
	API *rest.Config
	// Dir is where the root directory and volumes are staged; it must exist.
	Dir string
	// LogPath receives the container's stdout and stderr.
	LogPath string

	process *Process
	log     *os.File
}

// Start stages the root directory and volumes and starts the container.
func (p *Pod) Start(ctx context.Context) error {
	if len(p.Spec.Containers) == 0 {
		return errors.New("pod has no containers")
	}
	c := p.Spec.Containers[0]
	binary, ok := p.Images[c.Image]
	if !ok {
		return fmt.Errorf("no local binary for image %q", c.Image)
	}
	cl, err := client.New(p.API, client.Options{})
	if err != nil {
		return fmt.Errorf("failed creating client for pod %s: %w", p.Name, err)
	}

	root := filepath.Join(p.Dir, "rootfs")
	volumesDir := filepath.Join(p.Dir, "volumes")
	for _, dir := range []string{root, volumesDir} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("failed cleaning %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("failed creating %s: %w", dir, err)
		}
	}
	// The image's file system: the entrypoint and, as in the distroless base image, a
	// world-writable /tmp, which a read-only root makes read-only too.
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o755); err != nil {
		return fmt.Errorf("failed creating /tmp in %s: %w", root, err)
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777); err != nil {
		return fmt.Errorf("failed setting mode of /tmp in %s: %w", root, err)
	}
	entrypoint := "/" + filepath.Base(binary)
	if err := linkOrCopy(binary, filepath.Join(root, entrypoint)); err != nil {
		return err
	}

	var mounts []podMount
	for _, m := range c.VolumeMounts {
		v, ok := podVolume(p.Spec.Volumes, m.Name)
		if !ok {
			return fmt.Errorf("volumeMount %s names no volume", m.Name)
		}
		mount, err := p.stageVolume(ctx, cl, v, filepath.Join(volumesDir, m.Name))
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		mount.target = m.MountPath
		mount.readOnly = mount.readOnly || m.ReadOnly
		mounts = append(mounts, mount)
	}
	if ptr.Deref(p.Spec.AutomountServiceAccountToken, true) {
		dir := filepath.Join(volumesDir, "kube-api-access")
		if err := p.stageServiceAccount(ctx, dir); err != nil {
			return err
		}
		mounts = append(mounts, podMount{source: dir, target: serviceAccountDir, readOnly: true})
	}

	env, err := p.env(c)
	if err != nil {
		return err
	}
	uid, gid, err := p.user(c)
	if err != nil {
		return err
	}
	readOnlyRoot := c.SecurityContext != nil && ptr.Deref(c.SecurityContext.ReadOnlyRootFilesystem, false)

	chroot, err := exec.LookPath("chroot")
	if err != nil {
		return fmt.Errorf("pod %s needs chroot: %w", p.Name, err)
	}
	script := containerScript(root, mounts, readOnlyRoot, chroot, env)
	args := append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-euc", script, "container",
		root, fmt.Sprintf("%d:%d", uid, gid), entrypoint}, c.Args...)
	if p.log, err = os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return fmt.Errorf("failed opening log of pod %s: %w", p.Name, err)
	}
	// The process must outlive the caller's context; Stop ends it.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "unshare", args...)
	// The set-up runs with this process's PATH; the container gets only its own environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// Its own process group keeps an interrupt of the test from reaching it before Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.process, err = StartProcess(cmd); err != nil {
		return errors.Join(err, p.log.Close())
	}
	return nil
}

// Exited tells whether the container has ended, with how it ended.
func (p *Pod) Exited() (bool, error) {
	if p.process == nil || !p.process.Exited() {
		return false, nil
	}
	return true, p.process.ExitErr()
}

// Stop sends SIGTERM and kills the container after the pod's termination grace period.
func (p *Pod) Stop() error {
	if p == nil || p.process == nil {
		return nil
	}
	p.process.Terminate(time.Duration(ptr.Deref(p.Spec.TerminationGracePeriodSeconds, corev1.DefaultTerminationGracePeriodSeconds)) * time.Second)
	p.process = nil
	return p.log.Close()
}

type podMount struct {
	source, target string
	readOnly       bool
	// tmpfsSize, if set, makes the mount a tmpfs of that size instead of a bind mount.
	tmpfsSize string
}

// containerScript sets up the container's file system in the private mount namespace and execs
// the entrypoint with exactly env: $1 is the root directory, $2 uid:gid, $3 the entrypoint, the
// rest its args. Mount points are created before the root becomes read-only; nothing else is
// written into it.
func containerScript(root string, mounts []podMount, readOnlyRoot bool, chroot string, env []string) string {
	var b strings.Builder
	b.WriteString(`root="$1"; user="$2"; shift 2` + "\n")
	b.WriteString(`mount --bind "$root" "$root"` + "\n")
	b.WriteString(`mkdir -p "$root/proc" "$root/dev"` + "\n")
	for _, m := range mounts {
		fmt.Fprintf(&b, "mkdir -p %s\n", shellQuote(path.Join(root, m.target)))
	}
	b.WriteString(`mount -t proc proc "$root/proc"` + "\n")
	b.WriteString(`touch "$root/dev/null" && mount --bind /dev/null "$root/dev/null"` + "\n")
	for _, m := range mounts {
		target := shellQuote(path.Join(root, m.target))
		if m.tmpfsSize != "" {
			// emptyDir: world-writable like kubelet's, bounded by its sizeLimit.
			fmt.Fprintf(&b, "mount -t tmpfs -o size=%s,mode=1777 tmpfs %s\n", m.tmpfsSize, target)
			continue
		}
		fmt.Fprintf(&b, "mount --bind %s %s\n", shellQuote(m.source), target)
		if m.readOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", target)
		}
	}
	if readOnlyRoot {
		b.WriteString(`mount -o remount,bind,ro "$root"` + "\n")
	}
	b.WriteString("exec env -i")
	for _, e := range env {
		b.WriteString(" " + shellQuote(e))
	}
	fmt.Fprintf(&b, ` %s --userspec="$user" "$root" "$@"`+"\n", shellQuote(chroot))
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func podVolume(volumes []corev1.Volume, name string) (corev1.Volume, bool) {
	for _, v := range volumes {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

// stageVolume writes the files of a configMap, secret or projected volume into dir, or returns a
// tmpfs mount for an emptyDir. Other volume types are not supported.
func (p *Pod) stageVolume(ctx context.Context, cl client.Client, v corev1.Volume, dir string) (podMount, error) {
	switch {
	case v.EmptyDir != nil:
		size := defaultEmptyDirSize
		if v.EmptyDir.SizeLimit != nil {
			size = strconv.FormatInt(v.EmptyDir.SizeLimit.Value(), 10)
		}
		return podMount{tmpfsSize: size}, nil
	case v.ConfigMap != nil:
		files, err := p.configMapFiles(ctx, cl, v.ConfigMap.Name, v.ConfigMap.Items, ptr.Deref(v.ConfigMap.Optional, false))
		if err != nil {
			return podMount{}, err
		}
		return podMount{source: dir, readOnly: true}, writeVolume(dir, files, ptr.Deref(v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode))
	case v.Secret != nil:
		files, err := p.secretFiles(ctx, cl, v.Secret.SecretName, v.Secret.Items, ptr.Deref(v.Secret.Optional, false))
		if err != nil {
			return podMount{}, err
		}
		return podMount{source: dir, readOnly: true}, writeVolume(dir, files, ptr.Deref(v.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode))
	case v.Projected != nil:
		files := map[string][]byte{}
		for _, s := range v.Projected.Sources {
			var (
				part map[string][]byte
				err  error
			)
			switch {
			case s.Secret != nil:
				part, err = p.secretFiles(ctx, cl, s.Secret.Name, s.Secret.Items, ptr.Deref(s.Secret.Optional, false))
			case s.ConfigMap != nil:
				part, err = p.configMapFiles(ctx, cl, s.ConfigMap.Name, s.ConfigMap.Items, ptr.Deref(s.ConfigMap.Optional, false))
			default:
				err = errors.New("only secret and configMap projections are supported")
			}
			if err != nil {
				return podMount{}, err
			}
			for k, data := range part {
				files[k] = data
			}
		}
		return podMount{source: dir, readOnly: true}, writeVolume(dir, files, ptr.Deref(v.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode))
	default:
		return podMount{}, errors.New("unsupported volume type")
	}
}

func (p *Pod) configMapFiles(ctx context.Context, cl client.Client, name string, items []corev1.KeyToPath, optional bool) (map[string][]byte, error) {
	return configMapFiles(ctx, cl, p.Namespace, name, items, optional)
}

// configMapFiles returns the files of a configMap volume or projection: the ConfigMap's keys, or
// only its items; nothing for a missing optional ConfigMap.
func configMapFiles(ctx context.Context, cl client.Reader, namespace, name string, items []corev1.KeyToPath, optional bool) (map[string][]byte, error) {
	cm := &corev1.ConfigMap{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		if optional && client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("failed reading ConfigMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return projectItems(data, items, "ConfigMap "+name)
}

func (p *Pod) secretFiles(ctx context.Context, cl client.Client, name string, items []corev1.KeyToPath, optional bool) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, secret); err != nil {
		if optional && client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("failed reading Secret %s: %w", name, err)
	}
	return projectItems(secret.Data, items, "Secret "+name)
}

// projectItems maps keys to file paths: all keys by their name, or only the listed items.
func projectItems(data map[string][]byte, items []corev1.KeyToPath, what string) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	files := map[string][]byte{}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %s", what, item.Key)
		}
		files[item.Path] = value
	}
	return files, nil
}

func writeVolume(dir string, files map[string][]byte, mode int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed creating volume directory: %w", err)
	}
	for name, data := range files {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return fmt.Errorf("failed creating volume directory: %w", err)
		}
		if err := os.WriteFile(file, data, os.FileMode(mode)); err != nil {
			return fmt.Errorf("failed writing volume file %s: %w", name, err)
		}
		// WriteFile's mode is subject to the umask.
		if err := os.Chmod(file, os.FileMode(mode)); err != nil {
			return fmt.Errorf("failed setting mode of volume file %s: %w", name, err)
		}
	}
	return nil
}

// stageServiceAccount writes what kubelet's kube-api-access volume holds: a token of the pod's
// ServiceAccount from the TokenRequest API, the API server's CA and the namespace.
func (p *Pod) stageServiceAccount(ctx context.Context, dir string) error {
	account := p.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	token, err := serviceAccountToken(ctx, p.API, p.Namespace, account)
	if err != nil {
		return err
	}
	return writeVolume(dir, map[string][]byte{
		"token":     []byte(token),
		"ca.crt":    p.API.CAData,
		"namespace": []byte(p.Namespace),
	}, 0o644)
}

// serviceAccountToken requests a token of a ServiceAccount from the TokenRequest API, as kubelet
// does for a pod, valid for a day.
func serviceAccountToken(ctx context.Context, api *rest.Config, namespace, account string) (string, error) {
	cs, err := kubernetes.NewForConfig(api)
	if err != nil {
		return "", fmt.Errorf("failed creating clientset: %w", err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](int64((24 * time.Hour).Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed requesting a token for ServiceAccount %s/%s: %w", namespace, account, err)
	}
	return tr.Status.Token, nil
}

// env resolves the container's environment like kubelet (see containerEnv), with the API
// server's address as in-cluster clients expect it.
func (p *Pod) env(c corev1.Container) ([]string, error) {
	host, port, err := apiServerHostPort(p.API)
	if err != nil {
		return nil, err
	}
	env, _, err := containerEnv(c, podFields{namespace: p.Namespace, name: p.Name, serviceAccount: p.Spec.ServiceAccountName})
	if err != nil {
		return nil, err
	}
	return append([]string{
		"PATH=/",
		"HOME=/",
		"KUBERNETES_SERVICE_HOST=" + host,
		"KUBERNETES_SERVICE_PORT=" + port,
	}, env...), nil
}

// user returns the uid and gid the container runs as; the container's securityContext wins over
// the pod's, and root is refused where runAsNonRoot asks for it.
func (p *Pod) user(c corev1.Container) (int64, int64, error) {
	var uid, gid int64
	nonRoot := false
	if sc := p.Spec.SecurityContext; sc != nil {
		uid, gid, nonRoot = ptr.Deref(sc.RunAsUser, uid), ptr.Deref(sc.RunAsGroup, gid), ptr.Deref(sc.RunAsNonRoot, nonRoot)
	}
	if sc := c.SecurityContext; sc != nil {
		uid, gid, nonRoot = ptr.Deref(sc.RunAsUser, uid), ptr.Deref(sc.RunAsGroup, gid), ptr.Deref(sc.RunAsNonRoot, nonRoot)
	}
	if nonRoot && uid == 0 {
		return 0, 0, errors.New("runAsNonRoot is set but the container would run as root")
	}
	return uid, gid, nil
}

func apiServerHostPort(cfg *rest.Config) (string, string, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", "", fmt.Errorf("invalid API server address %q: %w", cfg.Host, err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	return u.Hostname(), port, nil
}

// linkOrCopy puts the binary into the root directory: a hard link where both are on one file
// system, which saves copying a hundred MiB on every start, a copy otherwise.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failed reading %s: %w", src, err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return fmt.Errorf("failed writing %s: %w", dst, err)
	}
	return nil
}
