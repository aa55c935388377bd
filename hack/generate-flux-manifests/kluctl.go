package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// KluctlFiles are the manifests of the kluctl controller project. Its kustomization.yaml is a
// Jinja2 template, so pkg/manifests assembles these files itself instead of building it.
var KluctlFiles = []string{"crd.yaml", "manager.yaml", "rbac.yaml"}

func (g *Generator) kluctlFiles(ctx context.Context, version string) (map[string][]byte, error) {
	module, err := modulePath("github.com/kluctl/kluctl", version)
	if err != nil {
		return nil, err
	}
	dir, err := g.Downloader.Download(ctx, module, version)
	if err != nil {
		return nil, err
	}
	projectDir := filepath.Join(dir, "install", "controller", "controller")

	// A file added upstream would silently be missing from the rendered controller.
	kustomization, err := os.ReadFile(filepath.Join(projectDir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading kluctl controller project: %w", err)
	}
	if resources := listedResources(kustomization); !slices.Equal(resources, KluctlFiles) {
		return nil, fmt.Errorf("kluctl controller project lists resources %v, expected %v", resources, KluctlFiles)
	}

	files := map[string][]byte{}
	for _, name := range KluctlFiles {
		data, err := os.ReadFile(filepath.Join(projectDir, name))
		if err != nil {
			return nil, fmt.Errorf("reading kluctl controller project: %w", err)
		}
		files[name] = append(header(fmt.Sprintf("%s@%s install/controller/controller/%s", module, version, name)), data...)
	}
	return files, nil
}

// listedResources returns the sorted entries of the top-level resources list; the file is a Jinja2
// template, so it is scanned line by line instead of being parsed as YAML.
func listedResources(kustomization []byte) []string {
	var (
		resources []string
		inList    bool
	)
	scanner := bufio.NewScanner(bytes.NewReader(kustomization))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case line == "resources:":
			inList = true
		case inList && strings.HasPrefix(strings.TrimSpace(line), "- "):
			resources = append(resources, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- ")))
		case inList && strings.TrimSpace(line) != "":
			inList = false
		}
	}
	slices.Sort(resources)
	return resources
}
