// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// The media types of helm.sh/helm/v4/pkg/registry (ConfigMediaType, ChartLayerMediaType), which
// gardenlet's and gardener-operator's chart puller (gardener's pkg/utils/oci) looks for. That
// package is not imported because it brings oras-go into the module graph for two constants.
const (
	helmConfigMediaType     types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	helmChartLayerMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// publishedChart is a chart directory and the name it is published under: the set of the
// Makefile's chart-push (test/publish compares both).
type publishedChart struct {
	dir, name string
	// image marks the charts whose default image.repository names a pushed image.
	image bool
}

var publishedCharts = []publishedChart{
	{dir: "charts/" + ExtensionName, name: ExtensionName, image: true},
	{dir: "charts/" + admissionName + "/charts/application", name: admissionName + "-application"},
	{dir: "charts/" + admissionName + "/charts/runtime", name: admissionName + "-runtime", image: true},
	{dir: "charts/" + admissionName, name: admissionName, image: true},
}

// pushChart packages a copy of the chart, whose default image repositories name the images
// pushed to the registry, with the version as version and appVersion (what `helm package
// --version --app-version` does), and pushes it as a Helm OCI artifact (what `helm push` writes) to
// <registry>/charts/extensions/<name>:<version>.
func pushChart(ctx context.Context, o Options, root, work string, c publishedChart, registryPath string, remoteOpts []remote.Option) (Pushed, error) {
	dir := filepath.Join(work, "charts", c.name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, c.dir))); err != nil {
		return Pushed{}, fmt.Errorf("failed copying %s: %w", c.dir, err)
	}
	rewritten, err := rewriteImageRepositories(dir, o.DefaultRegistry+"/extensions/", registryPath+"/extensions/")
	if err != nil {
		return Pushed{}, err
	}
	if c.image && rewritten == 0 {
		return Pushed{}, fmt.Errorf("%s: no values.yaml names an image below %s/extensions/ (--default-registry)", c.dir, o.DefaultRegistry)
	}

	ch, err := loader.LoadDir(dir)
	if err != nil {
		return Pushed{}, fmt.Errorf("failed loading %s: %w", c.dir, err)
	}
	if ch.Name() != c.name {
		return Pushed{}, fmt.Errorf("%s/Chart.yaml: name is %q, published as %q", c.dir, ch.Name(), c.name)
	}
	ch.Metadata.Version = o.Version
	ch.Metadata.AppVersion = o.Version
	pinModTimes(ch)
	archive, err := chartutil.Save(ch, filepath.Join(work, "packages"))
	if err != nil {
		return Pushed{}, fmt.Errorf("failed packaging %s: %w", c.dir, err)
	}
	content, err := os.ReadFile(archive)
	if err != nil {
		return Pushed{}, err
	}
	config, err := json.Marshal(ch.Metadata)
	if err != nil {
		return Pushed{}, err
	}

	repository := registryPath + "/charts/extensions/" + c.name
	tag, err := name.NewTag(repository+":"+o.Version, o.nameOptions()...)
	if err != nil {
		return Pushed{}, err
	}
	digest, err := pushHelmArtifact(tag, config, content, map[string]string{
		"org.opencontainers.image.title":       ch.Metadata.Name,
		"org.opencontainers.image.version":     ch.Metadata.Version,
		"org.opencontainers.image.description": ch.Metadata.Description,
	}, remoteOpts)
	if err != nil {
		return Pushed{}, fmt.Errorf("failed pushing %s: %w", tag, err)
	}
	return Pushed{Repository: repository, Tag: o.Version, Digest: digest.String()}, nil
}

// pushHelmArtifact writes the manifest helm push writes: an OCI image manifest whose config is the
// chart's metadata (JSON) and whose single layer is the chart archive, each with helm's media type.
// go-containerregistry's image types would replace the config with an image config.
func pushHelmArtifact(tag name.Tag, config, archive []byte, annotations map[string]string, remoteOpts []remote.Option) (v1.Hash, error) {
	configLayer := static.NewLayer(config, helmConfigMediaType)
	chartLayer := static.NewLayer(archive, helmChartLayerMediaType)
	manifest := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Annotations:   annotations,
	}
	for i, l := range []v1.Layer{configLayer, chartLayer} {
		if err := remote.WriteLayer(tag.Context(), l, remoteOpts...); err != nil {
			return v1.Hash{}, err
		}
		desc, err := partial.Descriptor(l)
		if err != nil {
			return v1.Hash{}, err
		}
		if i == 0 {
			manifest.Config = *desc
		} else {
			manifest.Layers = append(manifest.Layers, *desc)
		}
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(tag, rawManifest{raw: raw, mediaType: types.OCIManifestSchema1}, remoteOpts...); err != nil {
		return v1.Hash{}, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(raw))
	return digest, err
}

// rawManifest is a manifest to push as it is.
type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }

// rewriteImageRepositories replaces the prefix of `repository:` values in every values.yaml below
// dir, as the Makefile's chart-push does with sed, and returns the number of replacements.
func rewriteImageRepositories(dir, from, to string) (int, error) {
	count := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != chartutil.ValuesfileName {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		old := "repository: " + from
		n := strings.Count(string(data), old)
		if n == 0 {
			return nil
		}
		count += n
		return os.WriteFile(path, []byte(strings.ReplaceAll(string(data), old, "repository: "+to)), 0o644)
	})
	return count, err
}

// pinModTimes sets the time of every file of the chart and its subcharts to epoch, so that the
// archive, and with it the pushed digest, only depends on the content.
func pinModTimes(ch *chart.Chart) {
	ch.ModTime = epoch
	ch.SchemaModTime = epoch
	for _, files := range [][]*common.File{ch.Raw, ch.Templates, ch.Files} {
		for _, f := range files {
			f.ModTime = epoch
		}
	}
	for _, dep := range ch.Dependencies() {
		pinModTimes(dep)
	}
}
