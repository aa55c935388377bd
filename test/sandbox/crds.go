// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox/cluster"
)

const gardenerModule = cluster.GardenerModule

// seedCRDFiles are the gardener CRDs a seed needs for shoot extensions, and the prometheus-operator
// CRDs of the shoots' monitoring objects, which gardenlet installs in every seed.
var seedCRDFiles = []string{
	"10-crd-extensions.gardener.cloud_clusters.yaml",
	"10-crd-extensions.gardener.cloud_extensions.yaml",
	"10-crd-resources.gardener.cloud_managedresources.yaml",
	"10-crd-monitoring.coreos.com_prometheusrules.yaml",
	"10-crd-monitoring.coreos.com_scrapeconfigs.yaml",
}

// seedCRDPaths returns the gardener CRD files from the gardener module the binary was built with,
// so that the seed always has the schemas of the pinned gardener version.
func seedCRDPaths() ([]string, error) {
	return cluster.GardenerSeedCRDs(seedCRDFiles...)
}

// landscapeSeedCRDPatterns are the further CRDs of a seed that the extension's chart and gardenlet
// need when the extension is installed as in a landscape (Options.Deployed): gardenlet's
// ControllerInstallation "required" controller watches every extension kind, and the chart
// deploys a VerticalPodAutoscaler, which a seed's VPA serves.
var landscapeSeedCRDPatterns = []string{
	"10-crd-extensions.gardener.cloud_*.yaml",
	"10-crd-autoscaling.k8s.io_verticalpodautoscalers.yaml",
}

// landscapeSeedCRDPaths returns seedCRDPaths and the CRDs of landscapeSeedCRDPatterns.
func landscapeSeedCRDPaths() ([]string, error) {
	paths, err := seedCRDPaths()
	if err != nil {
		return nil, err
	}
	dir, err := cluster.GardenerModuleDir()
	if err != nil {
		return nil, err
	}
	for _, pattern := range landscapeSeedCRDPatterns {
		matches, err := filepath.Glob(filepath.Join(dir, "example", "seed-crds", pattern))
		if err != nil {
			return nil, fmt.Errorf("failed listing gardener CRDs %s: %w", pattern, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("gardener CRDs %s missing from the module cache", pattern)
		}
		for _, m := range matches {
			if !slices.Contains(paths, m) {
				paths = append(paths, m)
			}
		}
	}
	return paths, nil
}

// gardenerVersion is the version of the gardener module this binary was built with, which
// gardenlet reports as its own to the charts it renders; `go list` is the fallback for binaries
// without module information (test binaries).
func gardenerVersion() (string, error) {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path != gardenerModule {
				continue
			}
			if dep.Replace != nil && dep.Replace.Version != "" {
				return dep.Replace.Version, nil
			}
			return dep.Version, nil
		}
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", gardenerModule)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("failed reading the version of module %s with go list: %w: %s", gardenerModule, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
