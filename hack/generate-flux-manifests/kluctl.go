// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// KluctlFiles are the manifests of the kluctl controller project. Its kustomization.yaml is a
// Jinja2 template, so pkg/manifests assembles these files itself instead of building it.
var KluctlFiles = []string{"crd.yaml", "manager.yaml", "rbac.yaml"}

// kluctlFiles returns the controller project's files and the image of the release: the
// repository the manager names, tagged with the release (the manager's own tag is "latest").
func (g *Generator) kluctlFiles(ctx context.Context, version string) (map[string][]byte, image, error) {
	module, err := modulePath("github.com/kluctl/kluctl", version)
	if err != nil {
		return nil, image{}, err
	}
	dir, err := g.Downloader.Download(ctx, module, version)
	if err != nil {
		return nil, image{}, err
	}
	projectDir := filepath.Join(dir, "install", "controller", "controller")

	// A file added upstream would silently be missing from the rendered controller.
	kustomization, err := os.ReadFile(filepath.Join(projectDir, "kustomization.yaml"))
	if err != nil {
		return nil, image{}, fmt.Errorf("reading kluctl controller project: %w", err)
	}
	if resources := listedResources(kustomization); !slices.Equal(resources, KluctlFiles) {
		return nil, image{}, fmt.Errorf("kluctl controller project lists resources %v, expected %v", resources, KluctlFiles)
	}

	files := map[string][]byte{}
	var repository string
	for _, name := range KluctlFiles {
		data, err := os.ReadFile(filepath.Join(projectDir, name))
		if err != nil {
			return nil, image{}, fmt.Errorf("reading kluctl controller project: %w", err)
		}
		if name == "manager.yaml" {
			if repository, err = kluctlRepository(data); err != nil {
				return nil, image{}, err
			}
		}
		files[name] = append(header(fmt.Sprintf("%s@%s install/controller/controller/%s", module, version, name)), data...)
	}
	return files, image{
		Name:             "kluctl-controller",
		SourceRepository: "github.com/kluctl/kluctl",
		Repository:       repository,
		Tag:              version,
		TargetVersion:    version,
	}, nil
}

// kluctlRepository returns the image repository of the kluctl-controller Deployment's container.
func kluctlRepository(manager []byte) (string, error) {
	nodes, err := kio.FromBytes(manager)
	if err != nil {
		return "", fmt.Errorf("parsing kluctl manager: %w", err)
	}
	for _, node := range nodes {
		if node.GetKind() != "Deployment" {
			continue
		}
		containers, err := node.Pipe(yaml.Lookup("spec", "template", "spec", "containers"))
		if err != nil {
			return "", fmt.Errorf("reading containers of deployment %s: %w", node.GetName(), err)
		}
		if containers == nil {
			return "", fmt.Errorf("deployment %s has no containers", node.GetName())
		}
		elements, err := containers.Elements()
		if err != nil {
			return "", fmt.Errorf("reading containers of deployment %s: %w", node.GetName(), err)
		}
		if len(elements) != 1 {
			return "", fmt.Errorf("deployment %s has %d containers, expected the controller only", node.GetName(), len(elements))
		}
		ref, err := elements[0].GetString("image")
		if err != nil {
			return "", fmt.Errorf("reading image of deployment %s: %w", node.GetName(), err)
		}
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			ref = ref[:i]
		}
		return ref, nil
	}
	return "", errors.New("no deployment in the kluctl manager")
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
