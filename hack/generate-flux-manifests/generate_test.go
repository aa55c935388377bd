package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// committedTree is the output directory of the go:generate line in pkg/manifests.
var committedTree = filepath.Join("..", "..", "pkg", "manifests")

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

		files, err := (&Generator{Downloader: &GoModDownloader{}}).Generate(ctx, fluxVersions, kluctlVersions)
		Expect(err).NotTo(HaveOccurred())

		committed := readTree(committedTree, fluxDir, kluctlDir)
		Expect(keys(files)).To(ConsistOf(keys(committed)))
		for name, data := range files {
			Expect(string(committed[name])).To(Equal(string(data)), "%s is stale: run go generate ./pkg/manifests/...", name)
		}
	}, SpecTimeout(5*time.Minute))

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
