// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	dockerconfig "github.com/docker/cli/cli/config"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The deployed sandbox installs the extension by following InstallationDoc, the operator's page:
// the shell blocks of its steps are run by bash as written, with `make` and `kubectl` as bash
// functions that record their arguments. The recorded commands are then carried out against the
// sandbox's registry and garden (runInstallation). A step the page adds or changes that the
// sandbox cannot carry out fails the start with the command, instead of being skipped.

const (
	// InstallationDoc is the operator's page whose install steps the deployed sandbox follows.
	InstallationDoc = "docs/operations/installation.md"
	// installationSection is the section of InstallationDoc with the steps.
	installationSection = "## From zero to a pinned install"
	// withoutOperator introduces the apply of the registration in step 4; the sandbox has no
	// gardener-operator, so it follows that branch.
	withoutOperator = "Without gardener-operator"
	// docInstallDir is INSTALL_DIR's default, the directory the page's commands name.
	docInstallDir = "bin/install"
)

// InstallCommand is one `make` or `kubectl` command of InstallationDoc, as bash expanded it.
type InstallCommand struct {
	// Args are the command's words, the program first.
	Args []string
	// DockerConfig is $DOCKER_CONFIG when the command ran, where `make publish` reads credentials.
	DockerConfig string
}

func (c InstallCommand) String() string { return strings.Join(c.Args, " ") }

// InstallationSteps are the shell blocks of InstallationDoc's steps, in order, for an install
// without gardener-operator, and the garden permissions file the page names.
type InstallationSteps struct {
	// Script are the steps' shell blocks, joined.
	Script string
	// RegistryHost is the host of the page's REGISTRY; the sandbox's registry stands in for it.
	RegistryHost string
	// Variables are the `make publish` variables of the page's table.
	Variables []string
	// GardenRBAC is the file the page gives the extension its garden permissions with.
	GardenRBAC string
}

// ReadInstallationSteps reads the steps of InstallationDoc.
func ReadInstallationSteps() (InstallationSteps, error) {
	root, err := RepoRoot()
	if err != nil {
		return InstallationSteps{}, err
	}
	data, err := os.ReadFile(filepath.Join(root, InstallationDoc))
	if err != nil {
		return InstallationSteps{}, fmt.Errorf("failed reading %s: %w", InstallationDoc, err)
	}
	return parseInstallationSteps(string(data))
}

var (
	stepHeading   = regexp.MustCompile(`(?m)^### (\d+)\. `)
	shellBlock    = regexp.MustCompile("(?s)\n```shell\n(.*?)\n```")
	variableRow   = regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|")
	registryValue = regexp.MustCompile(`make publish REGISTRY=([^/\s]+)`)
	permissions   = regexp.MustCompile("garden permissions \\(`([^`]+)`")
)

func parseInstallationSteps(doc string) (InstallationSteps, error) {
	_, section, found := strings.Cut(doc, "\n"+installationSection+"\n")
	if !found {
		return InstallationSteps{}, fmt.Errorf("%s has no section %q", InstallationDoc, installationSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")

	headings := stepHeading.FindAllStringSubmatchIndex(section, -1)
	if len(headings) == 0 {
		return InstallationSteps{}, fmt.Errorf("%s: section %q has no numbered steps", InstallationDoc, installationSection)
	}
	var (
		steps  InstallationSteps
		blocks []string
	)
	for i, h := range headings {
		if n, _ := strconv.Atoi(section[h[2]:h[3]]); n != i+1 {
			return steps, fmt.Errorf("%s: step %d is numbered %d", InstallationDoc, i+1, n)
		}
		end := len(section)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		step := section[h[0]:end]
		if _, rest, found := strings.Cut(step, withoutOperator); found {
			// The step has a branch for gardener-operator and one without; only the latter applies.
			step = rest
			if m := permissions.FindStringSubmatch(step); m != nil {
				steps.GardenRBAC = m[1]
			}
		}
		for _, m := range shellBlock.FindAllStringSubmatch(step, -1) {
			blocks = append(blocks, m[1])
		}
	}
	steps.Script = strings.Join(blocks, "\n")
	if m := registryValue.FindStringSubmatch(steps.Script); m != nil {
		steps.RegistryHost = m[1]
	} else {
		return steps, fmt.Errorf("%s: no step runs `make publish REGISTRY=...`", InstallationDoc)
	}
	if steps.GardenRBAC == "" {
		return steps, fmt.Errorf("%s: step %q names no file with the garden permissions", InstallationDoc, withoutOperator)
	}
	for _, m := range variableRow.FindAllStringSubmatch(section, -1) {
		steps.Variables = append(steps.Variables, m[1])
	}
	return steps, nil
}

// recorder defines `make` and `kubectl` as bash functions that write each call's arguments, and
// $DOCKER_CONFIG, NUL-terminated and preceded by their count, to fd 3.
const recorder = `make() { printf '%s\0' "$(($# + 2))" make "$@" "${DOCKER_CONFIG:-}" >&3; }
kubectl() { printf '%s\0' "$(($# + 2))" kubectl "$@" "${DOCKER_CONFIG:-}" >&3; }
`

// Record runs the steps' script with bash in dir, the sandbox's registry host in place of the
// page's, and returns the make and kubectl commands it ran. env are the variables the page expects
// the operator to have set (e.g. REGISTRY_USER).
func (st InstallationSteps) Record(ctx context.Context, dir, registryHost string, env map[string]string) ([]InstallCommand, error) {
	script := strings.ReplaceAll(st.Script, st.RegistryHost, registryHost)
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", recorder+script)
	cmd.Dir = dir
	// TMPDIR keeps the page's mktemp inside dir, which the caller removes.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	cmd.ExtraFiles = []*os.File{w}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("failed running the steps of %s: %w", InstallationDoc, err)
	}
	_ = w.Close()
	recorded, readErr := readAll(r)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("the steps of %s failed: %w: %s", InstallationDoc, err, strings.TrimSpace(stderr.String()))
	}
	if readErr != nil {
		return nil, readErr
	}
	return parseRecorded(recorded)
}

func readAll(r *os.File) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("failed reading the recorded commands: %w", err)
	}
	return buf.Bytes(), nil
}

func parseRecorded(data []byte) ([]InstallCommand, error) {
	words := strings.Split(string(data), "\x00")
	// The data ends with a NUL, so the last word is empty.
	words = words[:len(words)-1]
	var commands []InstallCommand
	for len(words) > 0 {
		n, err := strconv.Atoi(words[0])
		if err != nil || n < 2 || n >= len(words) {
			return nil, fmt.Errorf("malformed record of a command: %q", words)
		}
		commands = append(commands, InstallCommand{Args: words[1:n], DockerConfig: words[n]})
		words = words[n+1:]
	}
	return commands, nil
}

// publishVariables are the `make publish` variables the sandbox carries out (see publishOptions):
// all those of the page's table.
var publishVariables = []string{"REGISTRY", "VERSION", "BASE_IMAGE", "PLATFORM", "INSTALL_DIR", "CHART_PULL_SECRET", "INSECURE"}

// makePublish parses a `make publish VAR=value...` command into its variables, with the sandbox's
// own in the place the page leaves to the operator (overrides).
func makePublish(c InstallCommand, overrides map[string]string) (map[string]string, error) {
	if len(c.Args) < 2 || c.Args[1] != "publish" {
		return nil, fmt.Errorf("%s: only `make publish VAR=value...` is carried out, not %q", InstallationDoc, c)
	}
	vars := map[string]string{}
	for _, a := range c.Args[2:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || !slices.Contains(publishVariables, k) {
			return nil, fmt.Errorf("%s: %q of %q is not a variable of make publish", InstallationDoc, a, c)
		}
		vars[k] = v
	}
	for k, v := range overrides {
		vars[k] = v
	}
	return vars, nil
}

// kubectlSecret is what `kubectl create secret docker-registry` writes: a dockerconfigjson with
// the server's username, password and auth.
func kubectlSecret(namespace, name string, flags map[string]string) (*corev1.Secret, error) {
	server, user, password := flags["--docker-server"], flags["--docker-username"], flags["--docker-password"]
	if server == "" || user == "" || password == "" {
		return nil, fmt.Errorf("%s: kubectl create secret docker-registry %s needs --docker-server, --docker-username and --docker-password", InstallationDoc, name)
	}
	config, err := json.Marshal(map[string]any{"auths": map[string]any{server: map[string]string{
		"username": user, "password": password,
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
	}}})
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config},
	}, nil
}

// kubectlArgs splits kubectl's arguments into the namespace, the positional words and the
// --flag=value flags; a flag it does not know is an error.
func kubectlArgs(c InstallCommand, known ...string) (namespace string, words []string, flags map[string]string, err error) {
	flags = map[string]string{}
	args := c.Args[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-n" || a == "--namespace") && i+1 < len(args):
			i++
			namespace = args[i]
		case a == "-f" && i+1 < len(args):
			i++
			flags["-f"] = args[i]
		case strings.HasPrefix(a, "--"):
			k, v, _ := strings.Cut(a, "=")
			if !slices.Contains(known, k) {
				return "", nil, nil, fmt.Errorf("%s: flag %q of %q is not carried out", InstallationDoc, k, c)
			}
			flags[k] = v
		case strings.HasPrefix(a, "-"):
			return "", nil, nil, fmt.Errorf("%s: flag %q of %q is not carried out", InstallationDoc, a, c)
		default:
			words = append(words, a)
		}
	}
	return namespace, words, flags, nil
}

// runInstallation carries out the recorded commands: `make publish` with publishFn (handed its
// variables and credentials), the garden objects of `kubectl create`/`label` in the garden, and
// returns the files `kubectl apply -f` named, resolved into installDir. The registration files are
// applied by the caller, after publishing wrote them.
func (s *Sandbox) runInstallation(ctx context.Context, commands []InstallCommand, installDir string, overrides map[string]string,
	publishFn func(vars map[string]string, auth authn.Authenticator) error) ([]string, error) {
	var (
		applied   []string
		published bool
	)
	for _, c := range commands {
		switch c.Args[0] {
		case "make":
			vars, err := makePublish(c, overrides)
			if err != nil {
				return nil, err
			}
			auth, err := dockerConfigCredentials(c.DockerConfig, strings.SplitN(vars["REGISTRY"], "/", 2)[0])
			if err != nil {
				return nil, err
			}
			if err := publishFn(vars, auth); err != nil {
				return nil, err
			}
			published = true
		case "kubectl":
			files, err := s.kubectl(ctx, c, installDir)
			if err != nil {
				return nil, err
			}
			applied = append(applied, files...)
		default:
			return nil, fmt.Errorf("%s: %q is not carried out", InstallationDoc, c)
		}
	}
	if !published {
		return nil, fmt.Errorf("%s: no step runs make publish", InstallationDoc)
	}
	if len(applied) == 0 {
		return nil, fmt.Errorf("%s: no step applies what make publish wrote", InstallationDoc)
	}
	return applied, nil
}

// kubectl carries out one kubectl command of the page in the garden; for `apply -f` it returns
// the file, resolved into installDir.
func (s *Sandbox) kubectl(ctx context.Context, c InstallCommand, installDir string) ([]string, error) {
	namespace, words, flags, err := kubectlArgs(c, "--docker-server", "--docker-username", "--docker-password")
	if err != nil {
		return nil, err
	}
	switch {
	case len(words) == 4 && words[0] == "create" && words[1] == "secret" && words[2] == "docker-registry":
		secret, err := kubectlSecret(namespace, words[3], flags)
		if err != nil {
			return nil, err
		}
		if err := s.Garden.Client.Create(ctx, secret); err != nil {
			return nil, fmt.Errorf("%q: %w", c, err)
		}
	case len(words) == 4 && words[0] == "label" && words[1] == "secret":
		k, v, ok := strings.Cut(words[3], "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q: only KEY=VALUE labels are carried out", InstallationDoc, c)
		}
		secret := &corev1.Secret{}
		if err := s.Garden.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: words[2]}, secret); err != nil {
			return nil, fmt.Errorf("%q: %w", c, err)
		}
		patch := client.MergeFrom(secret.DeepCopy())
		metav1.SetMetaDataLabel(&secret.ObjectMeta, k, v)
		if err := s.Garden.Client.Patch(ctx, secret, patch); err != nil {
			return nil, fmt.Errorf("%q: %w", c, err)
		}
	case len(words) == 1 && words[0] == "apply" && flags["-f"] != "":
		rel, err := filepath.Rel(docInstallDir, flags["-f"])
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("%s: %q applies a file outside %s, the directory make publish writes", InstallationDoc, c, docInstallDir)
		}
		return []string{filepath.Join(installDir, rel)}, nil
	default:
		return nil, fmt.Errorf("%s: %q is not carried out", InstallationDoc, c)
	}
	return nil, nil
}

// dockerConfigCredentials reads the credentials for host from the Docker config in dir, as `make
// publish` does through go-containerregistry's default keychain.
func dockerConfigCredentials(dir, host string) (authn.Authenticator, error) {
	if dir == "" {
		return nil, fmt.Errorf("%s: make publish runs without DOCKER_CONFIG; step 1 writes it", InstallationDoc)
	}
	cf, err := dockerconfig.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("failed loading the Docker config of %s: %w", InstallationDoc, err)
	}
	ac, err := cf.GetAuthConfig(host)
	if err != nil {
		return nil, fmt.Errorf("failed reading the credentials for %s: %w", host, err)
	}
	if ac.Username == "" && ac.Auth == "" {
		return nil, fmt.Errorf("%s: the Docker config has no credentials for %s", InstallationDoc, host)
	}
	return authn.FromConfig(authn.AuthConfig{Username: ac.Username, Password: ac.Password, Auth: ac.Auth}), nil
}

// chartPullSecretOf returns the name of the garden Secret the commands create with the helm pull
// Secret role, which `make publish` must name as CHART_PULL_SECRET.
func chartPullSecretOf(commands []InstallCommand) (string, error) {
	for _, c := range commands {
		if c.Args[0] != "kubectl" {
			continue
		}
		namespace, words, _, err := kubectlArgs(c, "--docker-server", "--docker-username", "--docker-password")
		if err != nil {
			return "", err
		}
		if namespace == v1beta1constants.GardenNamespace && len(words) == 4 && words[0] == "label" &&
			words[3] == v1beta1constants.GardenRole+"="+v1beta1constants.GardenRoleHelmPullSecret {
			return words[2], nil
		}
	}
	return "", fmt.Errorf("%s: no step labels a Secret in namespace %s %s=%s", InstallationDoc,
		v1beta1constants.GardenNamespace, v1beta1constants.GardenRole, v1beta1constants.GardenRoleHelmPullSecret)
}

// hostPlatform is the PLATFORM the sandbox publishes for: the kubelet stand-in runs the image's
// binary on this machine.
var hostPlatform = runtime.GOOS + "/" + runtime.GOARCH
