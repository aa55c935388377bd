// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	gardenerimagevector "github.com/gardener/gardener/pkg/utils/imagevector"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// committedTree is the output directory of the go:generate line in pkg/manifests.
var committedTree = filepath.Join("..", "..", "pkg", "manifests")

// committedImageVector is the image vector file of the same go:generate line.
var committedImageVector = filepath.Join("..", "..", "imagevector", "images.yaml")

func readTree(root string, dirs ...string) map[string][]byte {
	GinkgoHelper()
	files := map[string][]byte{}
	for _, dir := range dirs {
		Expect(filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			files[filepath.ToSlash(rel)] = data
			return err
		})).To(Succeed())
	}
	return files
}

func subdirs(dir string) []string {
	GinkgoHelper()
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

var _ = Describe("Generate", func() {
	It("reproduces the committed manifests byte for byte", func(ctx SpecContext) {
		fluxVersions := subdirs(filepath.Join(committedTree, fluxDir))
		kluctlVersions := subdirs(filepath.Join(committedTree, kluctlDir))
		Expect(fluxVersions).NotTo(BeEmpty())
		Expect(kluctlVersions).NotTo(BeEmpty())

		out, err := (&Generator{Downloader: &GoModDownloader{}, CRDs: &ControllerGen{}}).Generate(ctx, fluxVersions, kluctlVersions)
		Expect(err).NotTo(HaveOccurred())

		committed := readTree(committedTree, fluxDir, kluctlDir)
		Expect(keys(out.Manifests)).To(ConsistOf(keys(committed)))
		for name, data := range out.Manifests {
			Expect(string(committed[name])).To(Equal(string(data)), "%s is stale: run go generate ./pkg/manifests/...", name)
		}
		images, err := os.ReadFile(committedImageVector)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(images)).To(Equal(string(out.ImageVector)), "%s is stale: run go generate ./pkg/manifests/...", committedImageVector)
	}, SpecTimeout(10*time.Minute))

	It("requires versions of both projects", func(ctx SpecContext) {
		_, err := (&Generator{Downloader: fakeDownloader{}}).Generate(ctx, []string{"v2.9.5"}, nil)
		Expect(err).To(HaveOccurred())
	})

	It("rejects versions that are not canonical", func(ctx SpecContext) {
		_, err := (&Generator{Downloader: fakeDownloader{}}).Generate(ctx, []string{"2.9.5"}, []string{"v2.28.2"})
		Expect(err).To(MatchError(ContainSubstring(`version "2.9.5" is not a canonical semantic version`)))
	})
})

func keys(m map[string][]byte) []string {
	var result []string
	for k := range m {
		result = append(result, k)
	}
	return result
}

// fakeDownloader serves module directories from a map keyed by module@version.
type fakeDownloader map[string]string

func (f fakeDownloader) Download(_ context.Context, module, version string) (string, error) {
	if dir, ok := f[module+"@"+version]; ok {
		return dir, nil
	}
	return "", fmt.Errorf("%s@%s not available", module, version)
}

var _ = Describe("modulePath", func() {
	DescribeTable("appends the major version from v2 on",
		func(version, expected string) {
			Expect(modulePath("github.com/fluxcd/flux2", version)).To(Equal(expected))
		},
		Entry("v1", "v1.9.5", "github.com/fluxcd/flux2"),
		Entry("v0", "v0.41.2", "github.com/fluxcd/flux2"),
		Entry("v2", "v2.9.5", "github.com/fluxcd/flux2/v2"),
		Entry("v3 prerelease", "v3.0.0-rc.1", "github.com/fluxcd/flux2/v3"),
	)
})

var _ = Describe("WriteTree", func() {
	It("replaces the flux and kluctl trees, dropping versions no longer generated", func() {
		out := GinkgoT().TempDir()
		Expect(WriteTree(out, map[string][]byte{"flux/v1.0.0/a.yaml": []byte("old"), "kluctl/v1.0.0/b.yaml": []byte("old")})).To(Succeed())
		Expect(os.WriteFile(filepath.Join(out, "doc.go"), []byte("package manifests\n"), 0o600)).To(Succeed())

		Expect(WriteTree(out, map[string][]byte{"flux/v2.0.0/a.yaml": []byte("new"), "kluctl/v2.0.0/b.yaml": []byte("new")})).To(Succeed())
		Expect(readTree(out, ".")).To(Equal(map[string][]byte{
			"doc.go":               []byte("package manifests\n"),
			"flux/v2.0.0/a.yaml":   []byte("new"),
			"kluctl/v2.0.0/b.yaml": []byte("new"),
		}))
	})

	It("refuses paths outside the flux and kluctl trees", func() {
		out := GinkgoT().TempDir()
		Expect(WriteTree(out, map[string][]byte{"doc.go": nil})).To(MatchError(ContainSubstring(`refusing to write "doc.go"`)))
		Expect(os.ReadDir(out)).To(BeEmpty())
	})
})

var _ = Describe("listedResources", func() {
	It("reads the resources of a Jinja2 kustomization", func() {
		Expect(listedResources([]byte(`{% set image = get_var("args.image", "x") %}
resources:
  - rbac.yaml
  - crd.yaml

  - manager.yaml

patches:
  - target:
      kind: Deployment
`))).To(Equal([]string{"crd.yaml", "manager.yaml", "rbac.yaml"}))
	})
})

var _ = Describe("verifySameAPI", func() {
	var (
		modules fakeDownloader
		g       *Generator
	)

	writeModule := func(key string, files map[string]string) {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		for name, content := range files {
			Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
		}
		modules[key] = dir
	}
	goMod := func(metaVersion string) string {
		return "module example.com/ctrl/api\n\nrequire github.com/fluxcd/pkg/apis/meta " + metaVersion + "\n"
	}

	BeforeEach(func() {
		modules = fakeDownloader{}
		g = &Generator{Downloader: modules}
		writeModule("github.com/fluxcd/pkg/apis/meta@v1.0.0", map[string]string{"go.mod": "module m\n", "types.go": "package meta\n"})
		writeModule("github.com/fluxcd/pkg/apis/meta@v1.0.1", map[string]string{"go.mod": "module m\n\ngo 1.26\n", "types.go": "package meta\n"})
		writeModule("github.com/fluxcd/pkg/apis/meta@v1.1.0", map[string]string{"go.mod": "module m\n", "types.go": "package meta\n\ntype New struct{}\n"})
	})

	It("accepts modules that differ only in go.mod, go.sum and identical requirements", func(ctx SpecContext) {
		writeModule("example.com/ctrl/api@v1.0.1", map[string]string{"go.mod": goMod("v1.0.1"), "go.sum": "a", "v1/types.go": "package v1\n"})
		writeModule("example.com/ctrl/api@v1.0.0", map[string]string{"go.mod": goMod("v1.0.0"), "go.sum": "b", "v1/types.go": "package v1\n"})
		Expect(g.verifySameAPI(ctx, "example.com/ctrl/api", "v1.0.1", "v1.0.0")).To(Succeed())
	})

	It("rejects differing API sources", func(ctx SpecContext) {
		writeModule("example.com/ctrl/api@v1.0.1", map[string]string{"go.mod": goMod("v1.0.0"), "v1/types.go": "package v1\n\ntype A struct{}\n"})
		writeModule("example.com/ctrl/api@v1.0.0", map[string]string{"go.mod": goMod("v1.0.0"), "v1/types.go": "package v1\n"})
		Expect(g.verifySameAPI(ctx, "example.com/ctrl/api", "v1.0.1", "v1.0.0")).To(MatchError(ContainSubstring("types.go differs")))
	})

	It("rejects differing required Flux API modules", func(ctx SpecContext) {
		writeModule("example.com/ctrl/api@v1.0.1", map[string]string{"go.mod": goMod("v1.1.0"), "v1/types.go": "package v1\n"})
		writeModule("example.com/ctrl/api@v1.0.0", map[string]string{"go.mod": goMod("v1.0.0"), "v1/types.go": "package v1\n"})
		Expect(g.verifySameAPI(ctx, "example.com/ctrl/api", "v1.0.1", "v1.0.0")).To(MatchError(ContainSubstring("github.com/fluxcd/pkg/apis/meta differs between v1.1.0 and v1.0.0")))
	})
})

var _ = Describe("rejectRemoteResources", func() {
	var memFS filesys.FileSystem

	BeforeEach(func() {
		memFS = filesys.MakeFsInMemory()
		Expect(memFS.WriteFile("/base/account.yaml", []byte("kind: ServiceAccount\n"))).To(Succeed())
		Expect(memFS.WriteFile("/other/kustomization.yaml", []byte("resources:\n- ../base/account.yaml\n"))).To(Succeed())
		Expect(memFS.WriteFile("/nested/kustomization.yaml", []byte("resources:\n- github.com/org/repo//dir\n"))).To(Succeed())
	})

	It("accepts local files and directories", func() {
		Expect(memFS.WriteFile("/base/kustomization.yaml", []byte("resources:\n- account.yaml\n- ../other\n"))).To(Succeed())
		Expect(rejectRemoteResources(memFS, "/base")).To(Succeed())
	})

	DescribeTable("rejects what kustomize would fetch",
		func(kustomization string) {
			Expect(memFS.WriteFile("/base/kustomization.yaml", []byte(kustomization))).To(Succeed())
			Expect(rejectRemoteResources(memFS, "/base")).To(MatchError(ContainSubstring("which is not a local file")))
		},
		Entry("URL", "resources:\n- https://github.com/fluxcd/source-controller/releases/download/v1.9.5/source-controller.crds.yaml\n"),
		Entry("git reference without scheme", "resources:\n- github.com/fluxcd/flux2//manifests/rbac?ref=v2.9.5\n"),
		Entry("remote component", "components:\n- https://example.com/component\n"),
		Entry("remote resource in an included directory", "resources:\n- ../nested\n"),
	)
})

// fakeCRDs generates CRDs from a map keyed by the api module directory.
type fakeCRDs map[string]map[string][]byte

func (f fakeCRDs) GenerateCRDs(_ context.Context, apiDir, controllerGenVersion string) (map[string][]byte, error) {
	if controllerGenVersion != "v0.19.0" {
		return nil, fmt.Errorf("unexpected controller-gen %s", controllerGenVersion)
	}
	if files, ok := f[apiDir]; ok {
		return files, nil
	}
	return nil, fmt.Errorf("no CRDs for %s", apiDir)
}

func crd(controllerGen, schema string) []byte {
	return []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n    controller-gen.kubebuilder.io/version: " +
		controllerGen + "\n  name: alerts.example.com\nspec:\n  " + schema + "\n")
}

var _ = Describe("crdsFromAPI", func() {
	var (
		modules fakeDownloader
		crds    fakeCRDs
		g       *Generator
		shipped string
		sub     = substitute{config: "v1.6.0", controllerGen: "v0.19.0"}
	)

	BeforeEach(func() {
		modules = fakeDownloader{
			"example.com/ctrl/api@v1.6.0": "/api-v1.6.0",
			"example.com/ctrl/api@v1.7.5": "/api-v1.7.5",
		}
		crds = fakeCRDs{}
		g = &Generator{Downloader: modules, CRDs: crds}
		shipped = GinkgoT().TempDir()
		// The release was built with an older controller-gen, which only changes the annotation.
		Expect(os.WriteFile(filepath.Join(shipped, "example.com_alerts.yaml"), crd("v0.16.1", "old: schema"), 0o600)).To(Succeed())
	})

	It("generates the CRDs of the version once controller-gen reproduces the substitute's", func(ctx SpecContext) {
		crds["/api-v1.6.0"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "old: schema")}
		crds["/api-v1.7.5"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "new: schema")}
		Expect(g.crdsFromAPI(ctx, "example.com/ctrl", "v1.7.5", sub, shipped)).To(Equal(map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "new: schema")}))
	})

	It("refuses a controller-gen that does not reproduce the shipped CRDs", func(ctx SpecContext) {
		crds["/api-v1.6.0"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "other: schema")}
		crds["/api-v1.7.5"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "new: schema")}
		_, err := g.crdsFromAPI(ctx, "example.com/ctrl", "v1.7.5", sub, shipped)
		Expect(err).To(MatchError("controller-gen v0.19.0 does not reproduce the CRDs of v1.6.0 from example.com/ctrl/api@v1.6.0: example.com_alerts.yaml differs"))
	})

	It("refuses a version with other CRDs than the substitute's kustomization lists", func(ctx SpecContext) {
		crds["/api-v1.6.0"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "old: schema")}
		crds["/api-v1.7.5"] = map[string][]byte{"example.com_alerts.yaml": crd("v0.19.0", "new: schema"), "example.com_new.yaml": crd("v0.19.0", "x: y")}
		_, err := g.crdsFromAPI(ctx, "example.com/ctrl", "v1.7.5", sub, shipped)
		Expect(err).To(MatchError(ContainSubstring("example.com/ctrl/api@v1.7.5 defines other CRDs than v1.6.0")))
	})

	It("needs a CRD generator", func(ctx SpecContext) {
		g.CRDs = nil
		_, err := g.crdsFromAPI(ctx, "example.com/ctrl", "v1.7.5", sub, shipped)
		Expect(err).To(MatchError("no CRD generator configured"))
	})
})

var _ = Describe("sameCRDs", func() {
	var shipped string

	BeforeEach(func() {
		shipped = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(shipped, "a.yaml"), crd("v0.16.1", "a: b"), 0o600)).To(Succeed())
	})

	It("ignores the controller-gen version", func() {
		Expect(sameCRDs(map[string][]byte{"a.yaml": crd("v0.19.0", "a: b")}, shipped)).To(Succeed())
	})

	DescribeTable("rejects other CRDs",
		func(generated map[string][]byte, message string) {
			Expect(sameCRDs(generated, shipped)).To(MatchError(message))
		},
		Entry("other content", map[string][]byte{"a.yaml": crd("v0.16.1", "a: c")}, "a.yaml differs"),
		Entry("missing file", map[string][]byte{}, "a.yaml is shipped but not generated"),
		Entry("extra file", map[string][]byte{"a.yaml": crd("v0.16.1", "a: b"), "b.yaml": nil}, "b.yaml is generated but not shipped"),
	)
})

var _ = Describe("imageVector", func() {
	It("writes entries that gardener reads, each bound to its release", func() {
		data := imageVector([]image{
			{Name: "flux-source-controller", SourceRepository: "github.com/fluxcd/source-controller", Repository: "ghcr.io/fluxcd/source-controller", Tag: "v1.7.4", TargetVersion: "v2.7.5"},
			{Name: "kluctl-controller", SourceRepository: "github.com/kluctl/kluctl", Repository: "ghcr.io/kluctl/kluctl", Tag: "v2.28.2", TargetVersion: "v2.28.2"},
		})
		Expect(string(data)).To(HavePrefix("# Code generated by hack/generate-flux-manifests; DO NOT EDIT.\n"))

		vector, _, err := gardenerimagevector.Read(data)
		Expect(err).NotTo(HaveOccurred())
		Expect(vector).To(HaveLen(2))
		Expect(*vector[0].TargetVersion).To(Equal("= 2.7.5"))
		found, err := vector.FindImage("flux-source-controller", gardenerimagevector.TargetVersion("v2.7.5"))
		Expect(err).NotTo(HaveOccurred())
		Expect(found.String()).To(Equal("ghcr.io/fluxcd/source-controller:v1.7.4"))
		_, err = vector.FindImage("flux-source-controller", gardenerimagevector.TargetVersion("v2.7.6"))
		Expect(err).To(HaveOccurred())
		found, err = vector.FindImage("kluctl-controller", gardenerimagevector.TargetVersion("v2.28.2"))
		Expect(err).NotTo(HaveOccurred())
		Expect(found.String()).To(Equal("ghcr.io/kluctl/kluctl:v2.28.2"))
	})
})

var _ = Describe("kluctlRepository", func() {
	It("reads the repository of the controller's image", func() {
		Expect(kluctlRepository([]byte(`apiVersion: v1
kind: Namespace
metadata:
  name: kluctl-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kluctl-controller
spec:
  template:
    spec:
      containers:
      - name: controller
        image: ghcr.io/kluctl/kluctl:latest
`))).To(Equal("ghcr.io/kluctl/kluctl"))
	})

	It("refuses a manager with more than the controller", func() {
		_, err := kluctlRepository([]byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: kluctl-controller
spec:
  template:
    spec:
      containers:
      - name: controller
        image: ghcr.io/kluctl/kluctl:latest
      - name: sidecar
        image: example.com/sidecar:v1
`))
		Expect(err).To(MatchError("deployment kluctl-controller has 2 containers, expected the controller only"))
	})
})
