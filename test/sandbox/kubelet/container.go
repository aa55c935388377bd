// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// How the kubelet stand-in of a shoot runs a container as a process on a machine without cluster
// networking or mount namespaces: its volumes, command, env, listen addresses and readiness probe.

// preparedContainer is how the kubelet stand-in runs a container as a process.
type preparedContainer struct {
	// args follow the binary: the rest of the container's command (containerCommand) and its
	// args, with listen addresses on loopback and leader election off.
	args []string
	// env is the image's and the container's env, with paths below mounts rewritten.
	env []string
	// volumes are the local directories of the mounts.
	volumes volumePaths
	// addresses and advertised are those of listenLocally.
	addresses  map[int32]string
	advertised map[string]string
}

// prepareContainer mounts the container's volumes below dir and computes the args and env of the
// process that stands in for it. stable are the advertised addresses of the Deployment's earlier
// pods (see listenLocally).
func prepareContainer(ctx context.Context, reader client.Reader, spec corev1.PodSpec, c corev1.Container, component string, fields podFields, dir string, stable map[string]string) (*preparedContainer, error) {
	volumes, err := mountVolumes(ctx, reader, fields.namespace, spec, c, filepath.Join(dir, "volumes"))
	if err != nil {
		return nil, err
	}
	rc := runnableControllers(component)
	command, err := containerCommand(c, rc)
	if err != nil {
		return nil, err
	}
	env, vars, err := containerEnv(c, fields)
	if err != nil {
		return nil, err
	}
	// The container's env overrides the image's: later entries win.
	env = append(slices.Clone(rc.imageEnv), env...)
	args := make([]string, 0, len(command)+len(c.Args))
	for _, arg := range append(command, c.Args...) {
		args = append(args, volumes.rewriteArg(expandVars(arg, vars)))
	}
	for i, e := range env {
		name, value, _ := strings.Cut(e, "=")
		env[i] = name + "=" + volumes.rewrite(value)
	}
	args, addresses, advertised, err := listenLocally(args, rc, stable)
	if err != nil {
		return nil, err
	}
	if rc.leaderElection != "" {
		args = setFlag(args, rc.leaderElection, "false")
	}
	return &preparedContainer{args: args, env: env, volumes: volumes, addresses: addresses, advertised: advertised}, nil
}

// volumePaths maps the mount paths of a container's volumes to local directories.
type volumePaths map[string]string

// mountVolumes creates a directory under dir for every volume the container mounts: empty for an
// emptyDir, holding the files of a configMap volume as kubelet writes them. A process sees the
// machine's file system, so paths in args and env are rewritten instead (see rewrite). The files
// of a configMap are written once, when the pod starts: kubelet's later updates of mounted
// ConfigMaps are not played. Other volume types are not supported.
func mountVolumes(ctx context.Context, reader client.Reader, namespace string, spec corev1.PodSpec, c corev1.Container, dir string) (volumePaths, error) {
	m := volumePaths{}
	for _, vm := range c.VolumeMounts {
		v, ok := podVolume(spec.Volumes, vm.Name)
		if !ok {
			return nil, fmt.Errorf("volumeMount %s names no volume", vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			return nil, fmt.Errorf("volumeMount %s: subPath is not supported", vm.Name)
		}
		local := filepath.Join(dir, v.Name)
		switch {
		case v.EmptyDir != nil:
			if err := os.MkdirAll(local, 0o700); err != nil {
				return nil, fmt.Errorf("failed creating volume %s: %w", v.Name, err)
			}
		case v.ConfigMap != nil:
			files, err := configMapFiles(ctx, reader, namespace, v.ConfigMap.Name, v.ConfigMap.Items, ptr.Deref(v.ConfigMap.Optional, false))
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if err := writeVolume(local, files, ptr.Deref(v.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
		default:
			return nil, fmt.Errorf("volume %s: only emptyDir and configMap volumes are supported", v.Name)
		}
		m[strings.TrimSuffix(vm.MountPath, "/")] = local
	}
	return m, nil
}

// containerCommand returns what the container runs before its args, without the executable the
// binary stands in for: nothing for the image's entrypoint, the rest of the command for a
// container that names rc.command, e.g. "controller run" of "tini -- kluctl controller run".
func containerCommand(c corev1.Container, rc runnableController) ([]string, error) {
	if len(c.Command) == 0 {
		return nil, nil
	}
	command := c.Command
	if len(command) >= 2 && path.Base(command[0]) == "tini" && command[1] == "--" {
		// tini is the image's init: it reaps what the controller starts (helm, sops, the
		// embedded Python) and forwards signals. The stand-in runs the controller itself, so it
		// gets the SIGTERM of stop directly, and the machine's init reaps.
		command = command[2:]
	}
	if rc.command == "" || len(command) == 0 || path.Base(command[0]) != rc.command {
		return nil, fmt.Errorf("container %s runs the command %q; the sandbox can only run the image's entrypoint or %q", c.Name, strings.Join(c.Command, " "), cmp.Or(rc.command, "(none)"))
	}
	return slices.Clone(command[1:]), nil
}

// rewrite replaces a leading mount path in value with its local directory: /data/x becomes
// <pod>/volumes/data/x. The longest matching mount path wins.
func (m volumePaths) rewrite(value string) string {
	best := ""
	for mountPath := range m {
		if (value == mountPath || strings.HasPrefix(value, mountPath+"/")) && len(mountPath) > len(best) {
			best = mountPath
		}
	}
	if best == "" {
		return value
	}
	return m[best] + strings.TrimPrefix(value, best)
}

// rewriteArg rewrites the value of a --flag=value argument, or the argument itself.
func (m volumePaths) rewriteArg(arg string) string {
	if strings.HasPrefix(arg, "-") {
		if name, value, ok := strings.Cut(arg, "="); ok {
			return name + "=" + m.rewrite(value)
		}
		return arg
	}
	return m.rewrite(arg)
}

// podFields are the values of the env fieldRefs the stand-in supports.
type podFields struct {
	namespace, name, serviceAccount string
}

// containerEnv resolves the container's env as kubelet does: $(VAR) references to variables
// defined before, fieldRefs of the pod's metadata and ServiceAccount, and resourceFieldRefs of
// the container's resources. It returns the env as NAME=value in order, and as a map for the
// expansion of args.
func containerEnv(c corev1.Container, fields podFields) ([]string, map[string]string, error) {
	if len(c.EnvFrom) > 0 {
		return nil, nil, errors.New("envFrom is not supported")
	}
	env := make([]string, 0, len(c.Env))
	vars := map[string]string{}
	for _, e := range c.Env {
		value := expandVars(e.Value, vars)
		if from := e.ValueFrom; from != nil {
			var err error
			switch {
			case from.FieldRef != nil:
				value, err = fieldValue(from.FieldRef.FieldPath, fields)
			case from.ResourceFieldRef != nil:
				value, err = resourceFieldValue(c, from.ResourceFieldRef)
			default:
				err = errors.New("only fieldRef and resourceFieldRef are supported")
			}
			if err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		env = append(env, e.Name+"="+value)
		vars[e.Name] = value
	}
	return env, vars, nil
}

func fieldValue(fieldPath string, fields podFields) (string, error) {
	switch fieldPath {
	case "metadata.namespace":
		return fields.namespace, nil
	case "metadata.name":
		return fields.name, nil
	case "spec.serviceAccountName":
		return fields.serviceAccount, nil
	default:
		return "", fmt.Errorf("unsupported fieldPath %s", fieldPath)
	}
}

// resourceFieldValue returns a resource of the container divided by the divisor and rounded up,
// as kubelet does. An unset resource is an error: kubelet would use the node's allocatable, which
// the sandbox has none of.
func resourceFieldValue(c corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		return "", fmt.Errorf("resources of container %s: only the container's own resources are supported", ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	var list corev1.ResourceList
	switch kind {
	case "limits":
		list = c.Resources.Limits
	case "requests":
		list = c.Resources.Requests
	default:
		return "", fmt.Errorf("unsupported resource %s", ref.Resource)
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		return "", fmt.Errorf("resource %s is not set", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor.Set(1)
	}
	value, by := q.Value(), divisor.Value()
	if corev1.ResourceName(name) == corev1.ResourceCPU {
		value, by = q.MilliValue(), divisor.MilliValue()
	}
	if by <= 0 {
		return "", fmt.Errorf("invalid divisor %s", divisor.String())
	}
	return strconv.FormatInt((value+by-1)/by, 10), nil
}

// expandVars replaces $(NAME) with the value of a defined variable as kubelet does: references to
// undefined variables stay as they are, and $$ is an escaped $.
func expandVars(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			ref := s[i : i+3+end]
			if value, ok := vars[s[i+2:i+2+end]]; ok {
				b.WriteString(value)
			} else {
				b.WriteString(ref)
			}
			i += len(ref) - 1
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// listenLocally gives every listen flag a free 127.0.0.1 port and points the advertise flags at
// them; an advertised listener keeps its address from stable, as behind a Service. It returns the
// args, the local address of each container port (for the probes) and the advertised addresses.
func listenLocally(args []string, rc runnableController, stable map[string]string) ([]string, map[int32]string, map[string]string, error) {
	addresses := map[int32]string{}
	byFlag := map[string]string{}
	advertised := map[string]string{}
	for _, listener := range rc.advertise {
		advertised[listener] = ""
	}
	for _, lf := range rc.listen {
		port := lf.port
		if value, ok := flagValue(args, lf.name); ok {
			_, p, err := net.SplitHostPort(value)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("invalid --%s=%s: %w", lf.name, value, err)
			}
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("invalid port in --%s=%s: %w", lf.name, value, err)
			}
			port = int32(n)
		}
		_, isAdvertised := advertised[lf.name]
		local := stable[lf.name]
		if local == "" || !isAdvertised {
			free, err := FreePort()
			if err != nil {
				return nil, nil, nil, err
			}
			local = net.JoinHostPort("127.0.0.1", strconv.Itoa(free))
		}
		args = setFlag(args, lf.name, local)
		addresses[port] = local
		byFlag[lf.name] = local
		if isAdvertised {
			advertised[lf.name] = local
		}
	}
	for flag, listener := range rc.advertise {
		args = setFlag(args, flag, byFlag[listener])
	}
	return args, addresses, advertised, nil
}

// flagValue returns the value of the last --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for _, arg := range args {
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

// setFlag replaces every --name=value and --name in args with --name=value.
func setFlag(args []string, name, value string) []string {
	args = slices.DeleteFunc(slices.Clone(args), func(arg string) bool {
		return arg == "--"+name || strings.HasPrefix(arg, "--"+name+"=")
	})
	return append(args, "--"+name+"="+value)
}

// readinessProbe returns a check of the container's readinessProbe against the local addresses
// of its ports; nil if it has none. Only httpGet and tcpSocket probes are supported.
func readinessProbe(c corev1.Container, addresses map[int32]string) (func(context.Context) bool, error) {
	probe := c.ReadinessProbe
	if probe == nil {
		return nil, nil
	}
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	switch {
	case probe.HTTPGet != nil:
		if probe.HTTPGet.Scheme != "" && probe.HTTPGet.Scheme != corev1.URISchemeHTTP {
			return nil, fmt.Errorf("readiness probe: scheme %s is not supported", probe.HTTPGet.Scheme)
		}
		address, err := probeAddress(c, probe.HTTPGet.Port, addresses)
		if err != nil {
			return nil, err
		}
		target := (&url.URL{Scheme: "http", Host: address, Path: probe.HTTPGet.Path}).String()
		httpClient := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		return func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return false
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return false
			}
			_ = resp.Body.Close()
			// kubelet's httpGet probe succeeds on 2xx and 3xx.
			return resp.StatusCode >= 200 && resp.StatusCode < 400
		}, nil
	case probe.TCPSocket != nil:
		address, err := probeAddress(c, probe.TCPSocket.Port, addresses)
		if err != nil {
			return nil, err
		}
		dialer := &net.Dialer{Timeout: timeout}
		return func(ctx context.Context) bool {
			conn, err := dialer.DialContext(ctx, "tcp", address)
			if err != nil {
				return false
			}
			_ = conn.Close()
			return true
		}, nil
	default:
		return nil, errors.New("readiness probe: only httpGet and tcpSocket are supported")
	}
}

// probeAddress resolves a probe's port, a number or the name of a container port, to the local
// address that serves it.
func probeAddress(c corev1.Container, port intstr.IntOrString, addresses map[int32]string) (string, error) {
	number := port.IntVal
	if port.Type == intstr.String {
		i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == port.StrVal })
		if i < 0 {
			return "", fmt.Errorf("readiness probe: container has no port named %s", port.StrVal)
		}
		number = c.Ports[i].ContainerPort
	}
	address, ok := addresses[number]
	if !ok {
		return "", fmt.Errorf("readiness probe: port %s is not served by a listen flag the sandbox knows", port.String())
	}
	return address, nil
}
