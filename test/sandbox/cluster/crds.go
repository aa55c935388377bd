// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
)

// GardenerModule is the module path of gardener, whose CRDs the API servers are started with.
const GardenerModule = "github.com/gardener/gardener"

// GardenerSeedCRDs returns the paths of the named CRD files of gardener's example/seed-crds (e.g.
// "10-crd-extensions.gardener.cloud_extensions.yaml") in the gardener module the binary was built
// with, so that an API server has the schemas of the pinned gardener version.
func GardenerSeedCRDs(files ...string) ([]string, error) {
	dir, err := GardenerModuleDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		p := filepath.Join(dir, "example", "seed-crds", f)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("gardener CRD missing from the module cache: %w", err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// GardenerModuleDir finds the gardener module in the module cache from the build information of
// the running binary; `go list` is the fallback for binaries without module information.
func GardenerModuleDir() (string, error) {
	if dir, ok := moduleDirFromBuildInfo(GardenerModule); ok {
		return dir, nil
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", GardenerModule)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("failed locating module %s with go list: %w: %s", GardenerModule, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s is not in the module cache; run go mod download", GardenerModule)
	}
	return dir, nil
}

func moduleDirFromBuildInfo(path string) (string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, dep := range info.Deps {
		if dep.Path != path {
			continue
		}
		if dep.Replace != nil {
			dep = dep.Replace
		}
		if filepath.IsAbs(dep.Path) {
			return dep.Path, true
		}
		escPath, err := module.EscapePath(dep.Path)
		if err != nil {
			return "", false
		}
		escVersion, err := module.EscapeVersion(dep.Version)
		if err != nil {
			return "", false
		}
		dir := filepath.Join(moduleCache(), escPath+"@"+escVersion)
		if _, err := os.Stat(dir); err != nil {
			return "", false
		}
		return dir, true
	}
	return "", false
}

func moduleCache() string {
	if dir := os.Getenv("GOMODCACHE"); dir != "" {
		return dir
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
}
