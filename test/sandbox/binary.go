// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// BuildTimeout bounds the build of the extension binary. A first build compiles gardener and
// Kubernetes, which takes several minutes on two busy cores; the bound only catches a hang.
var BuildTimeout = 20 * time.Minute

// ExtensionPackage is the main package of the extension binary.
const ExtensionPackage = "./cmd/gardener-extension-shoot-flux"

// RepoRoot returns the root directory of this module, from any directory inside it.
func RepoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("failed locating the module root: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// BuildExtension builds the extension binary like `make build` does (without cgo) into out, with
// -trimpath only if the running binary was built with it (the Makefile's GOFLAGS): the packages are
// then compiled exactly as `go test` compiled them, so a cold build reuses their build cache
// instead of compiling gardener and Kubernetes once more.
func BuildExtension(ctx context.Context, repoRoot, out string) error {
	ctx, cancel := context.WithTimeout(ctx, BuildTimeout)
	defer cancel()
	args := []string{"build", "-o", out}
	if builtWithTrimpath() {
		args = append(args, "-trimpath")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ExtensionPackage)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("failed building the extension: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// copyExecutable copies the executable src to dst with mode 0755.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src) //nolint:gosec // a binary the caller built
	if err != nil {
		return fmt.Errorf("failed opening the extension binary: %w", err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755) //nolint:gosec // an executable for the sandbox's pod
	if err != nil {
		return fmt.Errorf("failed creating %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("failed copying the extension binary to %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("failed writing %s: %w", dst, err)
	}
	return nil
}

// builtWithTrimpath tells whether the running binary was built with -trimpath.
func builtWithTrimpath() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, setting := range info.Settings {
		if setting.Key == "-trimpath" {
			return setting.Value == "true"
		}
	}
	return false
}
