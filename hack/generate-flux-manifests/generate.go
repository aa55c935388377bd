// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FluxComponents are the Flux controllers the extension can install. Flux's image automation
// controllers and source-watcher are left out on purpose: the extension does not offer them.
var FluxComponents = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}

// substitute says what stands in for a controller version the Go module proxy refuses to serve
// (403); the proxy still serves the controllers' api modules.
type substitute struct {
	// config is the served version whose config/ directory (CRD kustomization, manager) stands in.
	// The Deployment still gets the image tag of the original version.
	config string
	// controllerGen, when set, is the controller-gen release that generates the CRDs from the api
	// module of the original version, because its types differ from those of config. It is only
	// trusted after it reproduced the CRDs config ships from config's own api module. When empty,
	// the api modules of both versions, and the Flux API packages they pin, must hold the same
	// sources, and config's CRDs are used as they are.
	controllerGen string
}

// Generator renders the manifests from modules it gets from a Downloader.
type Generator struct {
	Downloader Downloader
	// CRDs generates the CRDs of controllers whose substitute names a controller-gen release.
	CRDs CRDGenerator
}

// Output is what Generate produces.
type Output struct {
	// Manifests are keyed by slash-separated paths relative to the manifests directory, e.g.
	// "flux/v2.9.5/source-controller.yaml".
	Manifests map[string][]byte
	// ImageVector is the image vector (imagevector/images.yaml) of the generated releases: the
	// images their manifests pin.
	ImageVector []byte
}

const (
	fluxDir   = "flux"
	kluctlDir = "kluctl"
)

// Generate renders the manifests of the given releases and the image vector that goes with them.
func (g *Generator) Generate(ctx context.Context, fluxVersions, kluctlVersions []string) (*Output, error) {
	if substitutesErr != nil {
		return nil, substitutesErr
	}
	if len(fluxVersions) == 0 || len(kluctlVersions) == 0 {
		return nil, errors.New("at least one flux and one kluctl version are required")
	}
	for _, versions := range [][]string{fluxVersions, kluctlVersions} {
		for _, version := range versions {
			if !semver.IsValid(version) || semver.Canonical(version) != version {
				return nil, fmt.Errorf("version %q is not a canonical semantic version like v1.2.3", version)
			}
		}
	}
	// The image vector lists the releases in ascending order whatever the order of the flags.
	fluxVersions = slices.Clone(fluxVersions)
	slices.SortFunc(fluxVersions, semver.Compare)
	kluctlVersions = slices.Clone(kluctlVersions)
	slices.SortFunc(kluctlVersions, semver.Compare)

	out := &Output{Manifests: map[string][]byte{}}
	var images []image
	for _, version := range fluxVersions {
		generated, pinned, err := g.fluxFiles(ctx, version)
		if err != nil {
			return nil, fmt.Errorf("flux %s: %w", version, err)
		}
		for name, data := range generated {
			out.Manifests[path.Join(fluxDir, version, name)] = data
		}
		images = append(images, pinned...)
	}
	for _, version := range kluctlVersions {
		generated, pinned, err := g.kluctlFiles(ctx, version)
		if err != nil {
			return nil, fmt.Errorf("kluctl %s: %w", version, err)
		}
		for name, data := range generated {
			out.Manifests[path.Join(kluctlDir, version, name)] = data
		}
		images = append(images, pinned)
	}
	out.ImageVector = imageVector(images)
	return out, nil
}

// WriteTree replaces the flux/ and kluctl/ directories below out with files, so that versions no
// longer listed disappear.
func WriteTree(out string, files map[string][]byte) error {
	for name := range files {
		if !strings.HasPrefix(name, fluxDir+"/") && !strings.HasPrefix(name, kluctlDir+"/") {
			return fmt.Errorf("refusing to write %q outside of %s/ and %s/", name, fluxDir, kluctlDir)
		}
	}
	for _, dir := range []string{fluxDir, kluctlDir} {
		if err := os.RemoveAll(filepath.Join(out, dir)); err != nil {
			return fmt.Errorf("removing old %s manifests: %w", dir, err)
		}
	}
	for name, data := range files {
		target := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("creating directory for %s: %w", name, err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

func header(sources ...string) []byte {
	var b bytes.Buffer
	b.WriteString("# Code generated by hack/generate-flux-manifests; DO NOT EDIT.\n")
	for _, s := range sources {
		b.WriteString("# Source: " + s + "\n")
	}
	return b.Bytes()
}

// modulePath appends the major version suffix Go modules use from v2 on.
func modulePath(base, version string) (string, error) {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return "", fmt.Errorf("version %q is not a canonical semantic version like v1.2.3", version)
	}
	if major := semver.Major(version); major != "v0" && major != "v1" {
		return base + "/" + major, nil
	}
	return base, nil
}

func (g *Generator) fluxFiles(ctx context.Context, version string) (map[string][]byte, []image, error) {
	module, err := modulePath("github.com/fluxcd/flux2", version)
	if err != nil {
		return nil, nil, err
	}
	dir, err := g.Downloader.Download(ctx, module, version)
	if err != nil {
		return nil, nil, err
	}

	files := map[string][]byte{}
	var images []image
	for _, component := range FluxComponents {
		data, controllerVersion, sources, err := g.fluxComponent(ctx, module, version, dir, component)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", component, err)
		}
		files[component+".yaml"] = append(header(sources...), data...)
		images = append(images, image{
			Name:             "flux-" + component,
			SourceRepository: "github.com/fluxcd/" + component,
			Repository:       fluxRegistry + "/" + component,
			Tag:              controllerVersion,
			TargetVersion:    version,
		})
	}

	// rbac.yaml and policies.yaml complete the layout of Flux's manifests.tar.gz.
	for _, name := range []string{"rbac", "policies"} {
		memFS := filesys.MakeFsInMemory()
		if err := copyTree(filepath.Join(dir, "manifests", name), memFS, "/"+name); err != nil {
			return nil, nil, err
		}
		if err := rejectRemoteResources(memFS, "/"+name); err != nil {
			return nil, nil, err
		}
		data, err := kustomizeBuild(memFS, "/"+name)
		if err != nil {
			return nil, nil, fmt.Errorf("building %s: %w", name, err)
		}
		files[name+".yaml"] = append(header(fmt.Sprintf("%s@%s manifests/%s", module, version, name)), data...)
	}
	return files, images, nil
}

// fluxComponent builds manifests/bases/<component> of flux2 with the release assets it refers to
// replaced by the same kustomize builds of the controller's config/ the release workflow uploads. It
// returns the build, the controller version flux2 pins and the sources for the file header.
func (g *Generator) fluxComponent(ctx context.Context, fluxModule, fluxVersion, fluxRoot, component string) ([]byte, string, []string, error) {
	baseDir := filepath.Join(fluxRoot, "manifests", "bases", component)
	kustomization, err := os.ReadFile(filepath.Join(baseDir, "kustomization.yaml"))
	if err != nil {
		return nil, "", nil, fmt.Errorf("reading flux base: %w", err)
	}

	assetURL := regexp.MustCompile(`https://github\.com/fluxcd/` + regexp.QuoteMeta(component) +
		`/releases/download/(v[^/\s]+)/` + regexp.QuoteMeta(component) + `\.(crds|deployment)\.yaml`)
	matches := assetURL.FindAllSubmatch(kustomization, -1)
	if len(matches) != 2 || string(matches[0][1]) != string(matches[1][1]) || string(matches[0][2]) == string(matches[1][2]) {
		return nil, "", nil, fmt.Errorf("expected the crds and deployment release assets of one %s version in %s", component, filepath.Join(baseDir, "kustomization.yaml"))
	}
	controllerVersion := string(matches[0][1])

	controllerModule, err := modulePath("github.com/fluxcd/"+component, controllerVersion)
	if err != nil {
		return nil, "", nil, err
	}
	configVersion := controllerVersion
	sub, substituted := substitutes[controllerModule+"@"+controllerVersion]
	if substituted {
		configVersion = sub.config
	}
	controllerDir, err := g.Downloader.Download(ctx, controllerModule, configVersion)
	if err != nil {
		return nil, "", nil, err
	}

	configSource := fmt.Sprintf("%s@%s config/crd, config/manager", controllerModule, configVersion)
	var generatedCRDs map[string][]byte
	switch {
	case substituted && sub.controllerGen != "":
		generatedCRDs, err = g.crdsFromAPI(ctx, controllerModule, controllerVersion, sub, filepath.Join(controllerDir, "config", "crd", "bases"))
		if err != nil {
			return nil, "", nil, fmt.Errorf("cannot use %s@%s for %s: %w", controllerModule, sub.config, controllerVersion, err)
		}
		configSource = fmt.Sprintf("%s@%s config/crd (CRDs generated by controller-gen %s from %s/api@%s), config/manager",
			controllerModule, configVersion, sub.controllerGen, controllerModule, controllerVersion)
	case substituted:
		if err := g.verifySameAPI(ctx, controllerModule+"/api", controllerVersion, sub.config); err != nil {
			return nil, "", nil, fmt.Errorf("cannot use %s@%s for %s: %w", controllerModule, sub.config, controllerVersion, err)
		}
	}
	if substituted {
		configSource += fmt.Sprintf(" (standing in for %s, which the Go module proxy does not serve)", controllerVersion)
	}

	memFS := filesys.MakeFsInMemory()
	for _, dir := range []string{"crd", "manager"} {
		if err := copyTree(filepath.Join(controllerDir, "config", dir), memFS, "/controller/"+dir); err != nil {
			return nil, "", nil, err
		}
	}
	// crdsFromAPI made sure the names are those of the bases the kustomization lists.
	for name, data := range generatedCRDs {
		if err := memFS.WriteFile("/controller/crd/bases/"+name, data); err != nil {
			return nil, "", nil, err
		}
	}
	if err := rejectRemoteResources(memFS, "/controller/crd"); err != nil {
		return nil, "", nil, err
	}
	crds, err := kustomizeBuild(memFS, "/controller/crd")
	if err != nil {
		return nil, "", nil, fmt.Errorf("building CRDs: %w", err)
	}
	// The release workflow pins the image tag the same way before building config/manager.
	release := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../manager
images:
- name: fluxcd/%s
  newTag: %s
`, component, controllerVersion)
	if err := memFS.WriteFile("/controller/release/kustomization.yaml", []byte(release)); err != nil {
		return nil, "", nil, err
	}
	if err := rejectRemoteResources(memFS, "/controller/release"); err != nil {
		return nil, "", nil, err
	}
	deployment, err := kustomizeBuild(memFS, "/controller/release")
	if err != nil {
		return nil, "", nil, fmt.Errorf("building deployment: %w", err)
	}

	if err := copyTree(baseDir, memFS, "/base"); err != nil {
		return nil, "", nil, err
	}
	local := assetURL.ReplaceAllFunc(kustomization, func(url []byte) []byte {
		return []byte(component + "." + string(assetURL.FindSubmatch(url)[2]) + ".yaml")
	})
	if err := memFS.WriteFile("/base/kustomization.yaml", local); err != nil {
		return nil, "", nil, err
	}
	if err := memFS.WriteFile("/base/"+component+".crds.yaml", crds); err != nil {
		return nil, "", nil, err
	}
	if err := memFS.WriteFile("/base/"+component+".deployment.yaml", deployment); err != nil {
		return nil, "", nil, err
	}
	if err := rejectRemoteResources(memFS, "/base"); err != nil {
		return nil, "", nil, err
	}
	data, err := kustomizeBuild(memFS, "/base")
	if err != nil {
		return nil, "", nil, fmt.Errorf("building flux base: %w", err)
	}
	if err := checkImage(data, component, "fluxcd/"+component+":"+controllerVersion); err != nil {
		return nil, "", nil, err
	}
	return data, controllerVersion, []string{fmt.Sprintf("%s@%s manifests/bases/%s", fluxModule, fluxVersion, component), configSource}, nil
}

// crdsFromAPI generates the CRDs of controllerModule@version from its api module with the
// substitute's controller-gen, after checking that the same controller-gen reproduces the CRDs the
// substitute ships (shippedDir) from the substitute's api module. The files must carry the names of
// the shipped ones, which the substitute's CRD kustomization lists.
func (g *Generator) crdsFromAPI(ctx context.Context, controllerModule, version string, sub substitute, shippedDir string) (map[string][]byte, error) {
	if g.CRDs == nil {
		return nil, errors.New("no CRD generator configured")
	}
	apiModule := controllerModule + "/api"
	substituteAPI, err := g.Downloader.Download(ctx, apiModule, sub.config)
	if err != nil {
		return nil, err
	}
	reproduced, err := g.CRDs.GenerateCRDs(ctx, substituteAPI, sub.controllerGen)
	if err != nil {
		return nil, err
	}
	if err := sameCRDs(reproduced, shippedDir); err != nil {
		return nil, fmt.Errorf("controller-gen %s does not reproduce the CRDs of %s from %s@%s: %w", sub.controllerGen, sub.config, apiModule, sub.config, err)
	}

	versionAPI, err := g.Downloader.Download(ctx, apiModule, version)
	if err != nil {
		return nil, err
	}
	generated, err := g.CRDs.GenerateCRDs(ctx, versionAPI, sub.controllerGen)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(slices.Sorted(maps.Keys(generated)), slices.Sorted(maps.Keys(reproduced))) {
		return nil, fmt.Errorf("%s@%s defines other CRDs than %s, whose CRD kustomization lists %v", apiModule, version, sub.config, slices.Sorted(maps.Keys(reproduced)))
	}
	return generated, nil
}

// checkImage makes sure the Deployment of the component runs the pinned image: pkg/manifests
// identifies the containers it points to the image vector by exactly this reference.
func checkImage(data []byte, deployment, image string) error {
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return fmt.Errorf("parsing build output: %w", err)
	}
	for _, node := range nodes {
		if node.GetKind() != "Deployment" || node.GetName() != deployment {
			continue
		}
		containers, err := node.Pipe(yaml.Lookup("spec", "template", "spec", "containers"))
		if err != nil {
			return err
		}
		elements, err := containers.Elements()
		if err != nil {
			return err
		}
		for _, container := range elements {
			got, err := container.GetString("image")
			if err != nil {
				return err
			}
			if got != image {
				return fmt.Errorf("deployment %s runs image %q, expected %q", deployment, got, image)
			}
		}
		return nil
	}
	return fmt.Errorf("no deployment %s in the build output", deployment)
}

// verifySameAPI compares the api module of two controller versions and the Flux API modules they
// require, ignoring go.mod and go.sum, so that CRDs of one can stand in for the other.
func (g *Generator) verifySameAPI(ctx context.Context, apiModule, version, substitute string) error {
	dirA, err := g.Downloader.Download(ctx, apiModule, version)
	if err != nil {
		return err
	}
	dirB, err := g.Downloader.Download(ctx, apiModule, substitute)
	if err != nil {
		return err
	}
	if err := sameSources(dirA, dirB); err != nil {
		return fmt.Errorf("%s differs between %s and %s: %w", apiModule, version, substitute, err)
	}

	reqA, err := fluxRequirements(dirA)
	if err != nil {
		return err
	}
	reqB, err := fluxRequirements(dirB)
	if err != nil {
		return err
	}
	for module, versionA := range reqA {
		versionB, ok := reqB[module]
		if !ok {
			return fmt.Errorf("%s@%s requires %s, %s does not", apiModule, version, module, substitute)
		}
		if versionA == versionB {
			continue
		}
		depA, err := g.Downloader.Download(ctx, module, versionA)
		if err != nil {
			return err
		}
		depB, err := g.Downloader.Download(ctx, module, versionB)
		if err != nil {
			return err
		}
		if err := sameSources(depA, depB); err != nil {
			return fmt.Errorf("%s differs between %s and %s: %w", module, versionA, versionB, err)
		}
	}
	if len(reqA) != len(reqB) {
		return fmt.Errorf("%s@%s and %s require different Flux modules", apiModule, version, substitute)
	}
	return nil
}

func fluxRequirements(dir string) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	mod, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, "go.mod"), err)
	}
	req := map[string]string{}
	for _, r := range mod.Require {
		if strings.HasPrefix(r.Mod.Path, "github.com/fluxcd/") {
			req[r.Mod.Path] = r.Mod.Version
		}
	}
	return req, nil
}

func sameSources(dirA, dirB string) error {
	filesA, err := sourceFiles(dirA)
	if err != nil {
		return err
	}
	filesB, err := sourceFiles(dirB)
	if err != nil {
		return err
	}
	if !slices.Equal(filesA, filesB) {
		return errors.New("file lists differ")
	}
	for _, name := range filesA {
		a, err := os.ReadFile(filepath.Join(dirA, name))
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(dirB, name))
		if err != nil {
			return err
		}
		if !bytes.Equal(a, b) {
			return fmt.Errorf("%s differs", name)
		}
	}
	return nil
}

func sourceFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel != "go.mod" && rel != "go.sum" {
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// copyTree copies the regular files below src on disk into memFS at dst.
func copyTree(src string, memFS filesys.FileSystem, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return memFS.WriteFile(path.Join(dst, filepath.ToSlash(rel)), data)
	})
}

// rejectRemoteResources fails unless every resource, component and base of the kustomization in
// dir, and of those it includes, exists in memFS: anything else kustomize would try to fetch,
// with or without a URL scheme (e.g. github.com/org/repo//path).
func rejectRemoteResources(memFS filesys.FileSystem, dir string) error {
	data, err := memFS.ReadFile(path.Join(dir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	var k struct {
		Resources  []string `yaml:"resources"`
		Components []string `yaml:"components"`
		Bases      []string `yaml:"bases"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("parsing %s: %w", path.Join(dir, "kustomization.yaml"), err)
	}
	for _, ref := range slices.Concat(k.Resources, k.Components, k.Bases) {
		target := path.Join(dir, ref)
		if strings.Contains(ref, "://") || !memFS.Exists(target) {
			return fmt.Errorf("%s refers to %q, which is not a local file", path.Join(dir, "kustomization.yaml"), ref)
		}
		if memFS.IsDir(target) {
			if err := rejectRemoteResources(memFS, target); err != nil {
				return err
			}
		}
	}
	return nil
}

func kustomizeBuild(memFS filesys.FileSystem, dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	// The release kustomization reaches ../manager; everything lives in memory anyway.
	opts.LoadRestrictions = kustypes.LoadRestrictionsNone
	resources, err := krusty.MakeKustomizer(opts).Run(memFS, dir)
	if err != nil {
		return nil, err
	}
	return resources.AsYaml()
}
