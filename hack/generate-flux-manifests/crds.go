// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// CRDGenerator generates the CRDs of a controller's api module the way the controller's
// `make manifests` does: controller-gen with crd:crdVersions=v1 over every package of the module.
type CRDGenerator interface {
	// GenerateCRDs returns the generated files keyed by file name, e.g.
	// notification.toolkit.fluxcd.io_alerts.yaml.
	GenerateCRDs(ctx context.Context, apiDir, controllerGenVersion string) (map[string][]byte, error)
}

// ControllerGen runs `go run sigs.k8s.io/controller-tools/cmd/controller-gen@<version>`, so that the
// tool comes from the Go module proxy like the modules it reads and needs no entry in this
// project's go.mod.
type ControllerGen struct {
	// GoBin is the go command; empty means "go" from PATH (go generate puts its own first).
	GoBin string
}

// GenerateCRDs implements CRDGenerator.
func (c *ControllerGen) GenerateCRDs(ctx context.Context, apiDir, controllerGenVersion string) (map[string][]byte, error) {
	goBin := c.GoBin
	if goBin == "" {
		goBin = "go"
	}
	workDir, err := os.MkdirTemp("", "generate-flux-crds-")
	if err != nil {
		return nil, fmt.Errorf("creating working directory for controller-gen: %w", err)
	}
	defer func() { _ = os.RemoveAll(workDir) }()

	// The module cache is read-only, and loading the packages may have to complete go.sum.
	module := filepath.Join(workDir, "api")
	if err := copyDir(apiDir, module); err != nil {
		return nil, err
	}
	out := filepath.Join(workDir, "crds")

	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goBin, "run", "sigs.k8s.io/controller-tools/cmd/controller-gen@"+controllerGenVersion,
		"crd:crdVersions=v1", "paths=./...", "output:crd:artifacts:config="+out)
	cmd.Dir = module
	// -mod=mod lets the api module's requirements be downloaded like any build dependency;
	// GOWORK=off keeps a workspace of the caller out of the module's build list.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on", "GOFLAGS=-mod=mod")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("controller-gen %s in %s: %w: %s", controllerGenVersion, apiDir, err, strings.TrimSpace(stderr.String()))
	}

	entries, err := os.ReadDir(out)
	if err != nil {
		return nil, fmt.Errorf("reading controller-gen output: %w", err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading controller-gen output: %w", err)
		}
		files[e.Name()] = data
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("controller-gen %s generated no CRDs from %s", controllerGenVersion, apiDir)
	}
	return files, nil
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// controllerGenAnnotation is the line controller-gen stamps its own version into.
var controllerGenAnnotation = regexp.MustCompile(`(?m)^(\s*controller-gen\.kubebuilder\.io/version:).*$`)

// sameCRDs compares generated CRD files with the files a controller release ships, apart from the
// controller-gen version each names: it proves that generating from the api module reproduces what
// the release's `make manifests` wrote, even where the release used another controller-gen.
func sameCRDs(generated map[string][]byte, shippedDir string) error {
	entries, err := os.ReadDir(shippedDir)
	if err != nil {
		return fmt.Errorf("reading shipped CRDs: %w", err)
	}
	shipped := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			data, err := os.ReadFile(filepath.Join(shippedDir, e.Name()))
			if err != nil {
				return fmt.Errorf("reading shipped CRDs: %w", err)
			}
			shipped[e.Name()] = data
		}
	}
	for name := range shipped {
		if _, ok := generated[name]; !ok {
			return fmt.Errorf("%s is shipped but not generated", name)
		}
	}
	for name, data := range generated {
		want, ok := shipped[name]
		if !ok {
			return fmt.Errorf("%s is generated but not shipped", name)
		}
		if !bytes.Equal(controllerGenAnnotation.ReplaceAll(data, []byte("$1")), controllerGenAnnotation.ReplaceAll(want, []byte("$1"))) {
			return fmt.Errorf("%s differs", name)
		}
	}
	return nil
}
