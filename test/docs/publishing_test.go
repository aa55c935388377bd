// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// defaultRegistry is the Makefile's default REGISTRY, which the charts and examples name.
const defaultRegistry = "europe-docker.pkg.dev/gardener-project/public"

// published is what `make push` publishes, read from the commands `make -n` prints.
type published struct {
	images []string
	charts []string
	// chartSources maps the directory a chart is packaged from to its published name.
	chartSources map[string]string
	// imageRepositoryEdit is the sed expression that points the packaged charts' images to the
	// pushed ones.
	imageRepositoryEdits []string
}

var (
	dockerPush = regexp.MustCompile(`^\S*docker push (\S+)$`)
	helmPush   = regexp.MustCompile(`^\S*helm push \S+/([a-z0-9-]+)-(\S+)\.tgz oci://(\S+)$`)
	chartCopy  = regexp.MustCompile(`cp -R (\S+) \S+/([a-z0-9-]+)$`)
	valuesEdit = regexp.MustCompile(`sed -i '(s\|[^']+)'`)
)

func makePush(args ...string) published {
	GinkgoHelper()
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory", "push"}, args...)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	p := published{chartSources: map[string]string{}}
	for _, l := range strings.Split(string(out), "\n") {
		if m := dockerPush.FindStringSubmatch(l); m != nil {
			p.images = append(p.images, m[1])
		}
		if m := helmPush.FindStringSubmatch(l); m != nil {
			p.charts = append(p.charts, m[3]+"/"+m[1]+":"+m[2])
		}
		if m := chartCopy.FindStringSubmatch(l); m != nil {
			p.chartSources[m[1]] = m[2]
		}
		if m := valuesEdit.FindStringSubmatch(l); m != nil {
			p.imageRepositoryEdits = append(p.imageRepositoryEdits, m[1])
		}
	}
	return p
}

func version() string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(data))
}

// repository strips the tag of an image or chart ref.
func repository(ref string) string {
	return ref[:strings.LastIndex(ref, ":")]
}

// imageRepositoryOf reads image.repository from a values file.
func imageRepositoryOf(path string) string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	Expect(yaml.Unmarshal(data, &values)).To(Succeed())
	return values.Image.Repository
}

// refPattern finds refs of this repository's images and charts in text: the default registry or a
// placeholder for it, the repository below it and, if written, the tag.
var refPattern = regexp.MustCompile(`(?:` + regexp.QuoteMeta(defaultRegistry) + `|\$\(REGISTRY\)|<registry>)/((?:[a-z]+/)*gardener-extension-shoot-flux[a-z0-9-]*)(?::([A-Za-z0-9<>._-]+))?`)

var _ = Describe("publishing", func() {
	It("pushes both images and the four charts with the version of VERSION", func() {
		p := makePush()
		v := version()
		Expect(p.images).To(ConsistOf(
			defaultRegistry+"/extensions/gardener-extension-shoot-flux:"+v,
			defaultRegistry+"/extensions/gardener-extension-shoot-flux-admission:"+v,
		))
		Expect(p.charts).To(ConsistOf(
			defaultRegistry+"/charts/extensions/gardener-extension-shoot-flux:"+v,
			defaultRegistry+"/charts/extensions/gardener-extension-shoot-flux-admission:"+v,
			defaultRegistry+"/charts/extensions/gardener-extension-shoot-flux-admission-application:"+v,
			defaultRegistry+"/charts/extensions/gardener-extension-shoot-flux-admission-runtime:"+v,
		))
	})

	It("publishes each chart under its own name, which helm push uses", func() {
		p := makePush()
		Expect(p.chartSources).To(HaveLen(4))
		for dir, name := range p.chartSources {
			data, err := os.ReadFile(filepath.Join(repoRoot, dir, "Chart.yaml"))
			Expect(err).NotTo(HaveOccurred())
			var meta struct {
				Name string `json:"name"`
			}
			Expect(yaml.Unmarshal(data, &meta)).To(Succeed())
			Expect(meta.Name).To(Equal(name), "%s/Chart.yaml", dir)
		}
	})

	It("publishes charts whose default images are the pushed ones", func() {
		images := map[string]bool{}
		for _, ref := range makePush().images {
			images[repository(ref)] = true
		}
		for _, values := range []string{
			"charts/gardener-extension-shoot-flux/values.yaml",
			"charts/gardener-extension-shoot-flux-admission/charts/runtime/values.yaml",
		} {
			Expect(images).To(HaveKey(imageRepositoryOf(values)), values)
		}
	})

	It("points the charts pushed to another registry to the images pushed there", func() {
		p := makePush("REGISTRY=example.com/x")
		v := version()
		for _, ref := range append(p.images, p.charts...) {
			Expect(ref).To(HavePrefix("example.com/x/"))
			Expect(ref).To(HaveSuffix(":" + v))
		}
		Expect(p.imageRepositoryEdits).To(HaveLen(4))
		for _, edit := range p.imageRepositoryEdits {
			Expect(edit).To(Equal("s|repository: " + defaultRegistry + "/extensions/|repository: example.com/x/extensions/|"))
		}
		pushed := map[string]bool{}
		for _, ref := range p.images {
			pushed[repository(ref)] = true
		}
		for _, values := range []string{
			"charts/gardener-extension-shoot-flux/values.yaml",
			"charts/gardener-extension-shoot-flux-admission/charts/runtime/values.yaml",
		} {
			edited := strings.Replace(imageRepositoryOf(values), defaultRegistry+"/extensions/", "example.com/x/extensions/", 1)
			Expect(pushed).To(HaveKey(edited), values)
		}
	})

	It("names only published refs, with the version of VERSION, in docs, examples and charts", func() {
		p := makePush()
		v := version()
		repos := map[string]bool{}
		for _, ref := range append(p.images, p.charts...) {
			repos[strings.TrimPrefix(repository(ref), defaultRegistry+"/")] = true
		}
		var files []string
		for _, dir := range []string{"docs", "example", "charts"} {
			Expect(filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".go") {
					files = append(files, path)
				}
				return err
			})).To(Succeed())
		}
		found := 0
		for _, f := range files {
			data, err := os.ReadFile(f)
			Expect(err).NotTo(HaveOccurred())
			for _, m := range refPattern.FindAllStringSubmatch(string(data), -1) {
				found++
				Expect(repos).To(HaveKey(m[1]), "%s names %s, which make push does not publish", f, m[0])
				if tag := m[2]; tag != "" && !strings.HasPrefix(tag, "<") {
					Expect(tag).To(Equal(v), "%s names %s", f, m[0])
				}
			}
		}
		Expect(found).To(BeNumerically(">=", 8))
	})
})

var (
	buildCommand = regexp.MustCompile(`build -trimpath -ldflags "([^"]+)" -o \S+ \./cmd/(\S+)`)
	publishFlag  = regexp.MustCompile(`--([a-z-]+)=("[^"]*"|\S*)`)
	baseStage    = regexp.MustCompile(`(?m)^FROM (\S+) AS base$`)
)

// makeN prints the commands of a make target.
func makeN(args ...string) string {
	GinkgoHelper()
	cmd := exec.Command("make", append([]string{"-n", "--no-print-directory"}, args...)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	return string(out)
}

var _ = Describe("make publish", func() {
	It("builds like make build, from the Dockerfile's base, with VERSION and the registry given", func() {
		flags := map[string]string{}
		for _, m := range publishFlag.FindAllStringSubmatch(makeN("publish", "REGISTRY=example.com/x"), -1) {
			flags[m[1]] = strings.Trim(m[2], `"`)
		}
		Expect(flags).To(HaveKeyWithValue("registry", "example.com/x"))
		Expect(flags).To(HaveKeyWithValue("version", version()))
		Expect(flags).To(HaveKeyWithValue("default-registry", defaultRegistry))

		dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
		Expect(err).NotTo(HaveOccurred())
		base := baseStage.FindStringSubmatch(string(dockerfile))
		Expect(base).NotTo(BeNil(), "the Dockerfile has no base stage")
		Expect(flags).To(HaveKeyWithValue("base-image", base[1]))

		ldflags := map[string]string{}
		for _, m := range buildCommand.FindAllStringSubmatch(makeN("build"), -1) {
			ldflags[m[2]] = m[1]
		}
		Expect(ldflags).To(HaveLen(2))
		Expect(flags).To(HaveKeyWithValue("extension-ldflags", ldflags["gardener-extension-shoot-flux"]))
		Expect(flags).To(HaveKeyWithValue("admission-ldflags", ldflags["gardener-extension-shoot-flux-admission"]))
	})
})
