// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package gitserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	// Branch is the branch NewKluctlProjectRepo commits to.
	Branch = "main"
	// Target is the kluctl target of the project NewKluctlProjectRepo creates.
	Target = "default"
	// ConfigMapName is the name of the ConfigMap the kluctl project deploys.
	ConfigMapName = "shoot-flux-e2e"
	// ConfigMapNamespace is the namespace of the ConfigMap the kluctl project deploys.
	ConfigMapNamespace = "default"
	// ConfigMapPath is the file of the ConfigMap manifest in the repository, for CommitFile.
	ConfigMapPath = "configmap/configmap.yaml"

	// commitDate makes commits independent of when the test runs.
	commitDate = "@1704067200 +0000"
)

// kluctlProject is a minimal kluctl project: one target and one deployment item, a directory
// with a kustomization, so the same directory also works as a Flux Kustomization path.
var kluctlProject = map[string]string{
	".kluctl.yaml": `targets:
  - name: ` + Target + `
`,
	"deployment.yaml": `deployments:
  - path: configmap
`,
	"configmap/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - configmap.yaml
`,
	ConfigMapPath: ConfigMapManifest("initial"),
}

// ConfigMapManifest returns the ConfigMap manifest of the kluctl project with its data key
// "revision" set to revision; commit it with CommitFile to change what the project deploys.
func ConfigMapManifest(revision string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  revision: %q
`, ConfigMapName, ConfigMapNamespace, revision)
}

// Names of the kluctl project KluctlTargetsProject returns.
const (
	// TargetBlue and TargetGreen are its targets; each sets the argument "color" to its name.
	TargetBlue  = "blue"
	TargetGreen = "green"
	// AppConfigMapNamespace is the namespace of the ConfigMap it deploys, named
	// AppConfigMapName(color).
	AppConfigMapNamespace = "default"
	// AppConfigMapPath is the file of the ConfigMap template in the repository, for CommitFile.
	AppConfigMapPath = "app/configmap.yaml"
)

// KluctlTargetsProject returns the files of a kluctl project with two targets, TargetBlue and
// TargetGreen, that deploys one ConfigMap rendered from its arguments: the target's "color", the
// argument "greeting" (default "hello") and the shoot identity the extension passes as the
// argument "shoot". AppConfigMap(revision) is its ConfigMap template.
func KluctlTargetsProject(revision string) map[string]string {
	return map[string]string{
		".kluctl.yaml": `args:
  - name: greeting
    default: hello
targets:
  - name: ` + TargetBlue + `
    args:
      color: ` + TargetBlue + `
  - name: ` + TargetGreen + `
    args:
      color: ` + TargetGreen + `
`,
		"deployment.yaml": `deployments:
  - path: app
`,
		AppConfigMapPath: AppConfigMap(revision),
	}
}

// AppConfigMapName is the name of the ConfigMap KluctlTargetsProject deploys for a target's color.
func AppConfigMapName(color string) string {
	return "app-" + color
}

// AppConfigMap returns the ConfigMap template of KluctlTargetsProject with its data key "revision"
// set to revision; commit it with CommitFile to change what the project deploys.
func AppConfigMap(revision string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app-{{ args.color }}
  namespace: %s
data:
  color: "{{ args.color }}"
  greeting: "{{ args.greeting }}"
  shoot: "{{ args.shoot.project }}/{{ args.shoot.name }}"
  revision: %q
`, AppConfigMapNamespace, revision)
}

// NewKluctlProjectRepo creates a git repository with a working tree in dir (which must not
// exist or be empty) holding a small kluctl project committed on Branch, and returns the
// commit. Author, committer and dates are fixed, so the commit is the same on every run.
func NewKluctlProjectRepo(dir string) (string, error) {
	return NewRepo(dir, kluctlProject, "Add kluctl test project")
}

// NewRepo creates a git repository with a working tree in dir (which must not exist or be empty)
// holding files (path → content) committed on Branch, and returns the commit.
func NewRepo(dir string, files map[string]string, message string) (string, error) {
	return NewRepoOnBranch(dir, Branch, files, message)
}

// NewRepoOnBranch is NewRepo with the commit on branch.
func NewRepoOnBranch(dir, branch string, files map[string]string, message string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating repository directory: %w", err)
	}
	if _, err := runGit(dir, "init", "--quiet", "--initial-branch="+branch); err != nil {
		return "", err
	}
	for name, content := range files {
		if err := writeFile(dir, name, []byte(content)); err != nil {
			return "", err
		}
	}
	if _, err := runGit(dir, "add", "--all"); err != nil {
		return "", err
	}
	return commit(dir, message)
}

// CommitFile writes content to the file path of the repository in dir, commits it on the
// checked-out branch and returns the new commit.
func CommitFile(dir, path string, content []byte, message string) (string, error) {
	if err := writeFile(dir, path, content); err != nil {
		return "", err
	}
	if _, err := runGit(dir, "add", "--", path); err != nil {
		return "", err
	}
	return commit(dir, message)
}

func commit(dir, message string) (string, error) {
	if _, err := runGit(dir, "commit", "--quiet", "--no-verify", "--message", message); err != nil {
		return "", err
	}
	out, err := runGit(dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func writeFile(dir, name string, content []byte) error {
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating directory for %s: %w", name, err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// runGit runs git in dir isolated from the machine's and user's configuration, with fixed
// identities and dates.
func runGit(dir string, args ...string) (string, error) {
	cmd := exec.Command(GitBinary, append([]string{
		"-c", "commit.gpgsign=false",
		"-c", "core.autocrlf=false",
		"-c", "core.fileMode=true",
	}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_AUTHOR_NAME=shoot-flux test",
		"GIT_AUTHOR_EMAIL=test@shoot-flux.invalid",
		"GIT_AUTHOR_DATE=" + commitDate,
		"GIT_COMMITTER_NAME=shoot-flux test",
		"GIT_COMMITTER_EMAIL=test@shoot-flux.invalid",
		"GIT_COMMITTER_DATE=" + commitDate,
		"LC_ALL=C",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
