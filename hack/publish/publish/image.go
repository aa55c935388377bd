// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package publish

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	scratch = "scratch"
	// nonrootUser is the user of the Dockerfile's base image (distroless "nonroot"). An image
	// without a base gets it too, so that the pods run as the same user whatever the base.
	nonrootUser = "65532"
)

// epoch is the modification time of every file in the layers and charts: the same sources give
// the same digests, so publishing a version again does not move what a pinned install names.
var epoch = time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)

// buildBinary builds cmd/<name> for the platform the way the Makefile's build target does
// (no cgo, -trimpath, the given ldflags) and returns the binary's path.
func buildBinary(ctx context.Context, o Options, root, work, binary, ldflags string) (string, error) {
	platform := o.Platform
	goos, goarch, found := strings.Cut(platform, "/")
	if !found || goos == "" || goarch == "" || strings.Contains(goarch, "/") {
		return "", fmt.Errorf("--platform %q: want os/arch, e.g. linux/amd64", platform)
	}
	out := filepath.Join(work, "bin", binary)
	o.printf("building %s for %s\n", binary, platform)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/"+binary)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = o.out(), io.MultiWriter(o.out(), &stderr)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("failed building %s: %w: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// baseImage is the image the binaries are added to, for the platform.
func baseImage(ctx context.Context, o Options, remoteOpts []remote.Option) (v1.Image, error) {
	p, err := v1.ParsePlatform(o.Platform)
	if err != nil {
		return nil, fmt.Errorf("--platform %q: %w", o.Platform, err)
	}
	if o.BaseImage == scratch {
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
		return mutate.ConfigFile(img, cfg)
	}
	// The base comes from its own registry, which may need TLS even where --insecure is set.
	ref, err := name.ParseReference(o.BaseImage)
	if err != nil {
		return nil, fmt.Errorf("--base-image %q: %w", o.BaseImage, err)
	}
	img, err := remote.Image(ref, append(remoteOpts, remote.WithContext(ctx), remote.WithPlatform(*p))...)
	if err != nil {
		return nil, fmt.Errorf("failed pulling the base image %s: %w", ref, err)
	}
	return img, nil
}

// pushImage adds the binary to the base image as the Dockerfile does (/<name>, entrypoint
// ["/<name>"], working directory /, the base's user) and pushes it as repository:version.
func pushImage(ctx context.Context, o Options, repository, binary string, remoteOpts []remote.Option) (Pushed, error) {
	base, err := baseImage(ctx, o, remoteOpts)
	if err != nil {
		return Pushed{}, err
	}
	manifestType, err := base.MediaType()
	if err != nil {
		return Pushed{}, err
	}
	// Docker and OCI media types must not be mixed in one manifest.
	layerType := types.DockerLayer
	if manifestType == types.OCIManifestSchema1 {
		layerType = types.OCILayer
	}
	layerFile := binary + ".tar"
	if err := writeLayer(layerFile, binary); err != nil {
		return Pushed{}, err
	}
	// The layer is compressed once, for its digest and the upload.
	layer, err := tarball.LayerFromFile(layerFile, tarball.WithMediaType(layerType), tarball.WithCompressedCaching)
	if err != nil {
		return Pushed{}, fmt.Errorf("failed reading the layer of %s: %w", binary, err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "hack/publish: COPY " + filepath.Base(binary) + " /"},
	})
	if err != nil {
		return Pushed{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Pushed{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/" + filepath.Base(binary)}
	cfg.Config.Cmd = nil
	cfg.Config.WorkingDir = "/"
	if cfg.Config.User == "" {
		cfg.Config.User = nonrootUser
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return Pushed{}, err
	}

	tag, err := name.NewTag(repository+":"+o.Version, o.nameOptions()...)
	if err != nil {
		return Pushed{}, err
	}
	if err := remote.Write(tag, img, remoteOpts...); err != nil {
		return Pushed{}, fmt.Errorf("failed pushing %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Pushed{}, err
	}
	return Pushed{Repository: repository, Tag: o.Version, Digest: digest.String()}, nil
}

// writeLayer writes a tar with the binary at the root of the file system, executable by all.
func writeLayer(path, binary string) error {
	in, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     filepath.Base(binary),
		Mode:     0o755,
		Size:     info.Size(),
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}); err != nil {
		_ = out.Close()
		return err
	}
	if _, err := io.Copy(tw, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
