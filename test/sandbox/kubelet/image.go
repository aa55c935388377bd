// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// The seed's kubelet stand-in pulls the extension's image as a container runtime would, and runs
// its entrypoint.

// pull pulls the image from the sandbox's registry, as the container runtime would, and returns
// its entrypoint extracted into the sandbox's directory (once per image).
func (k *SeedKubelet) pull(ctx context.Context, image string) (string, error) {
	k.mu.Lock()
	binary, ok := k.images[image]
	k.mu.Unlock()
	if ok {
		return binary, nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", fmt.Errorf("invalid image %q: %w", image, err)
	}
	img, err := remote.Image(ref, k.opts.RegistryAuth, remote.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("failed pulling %s: %w", image, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("failed reading the config of %s: %w", image, err)
	}
	if len(cfg.Config.Entrypoint) != 1 {
		return "", fmt.Errorf("image %s has entrypoint %v, want one executable", image, cfg.Config.Entrypoint)
	}
	entrypoint := strings.TrimPrefix(path.Clean(cfg.Config.Entrypoint[0]), "/")
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(k.opts.Dir, "images", digest.Hex)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("failed creating the directory of image %s: %w", image, err)
	}
	binary = filepath.Join(dir, path.Base(entrypoint))
	layers, err := img.Layers()
	if err != nil {
		return "", err
	}
	found := false
	// The last layer that holds the file wins, as in the image's file system.
	for i := len(layers) - 1; i >= 0 && !found; i-- {
		if found, err = extractFile(layers[i].Uncompressed, entrypoint, binary); err != nil {
			return "", fmt.Errorf("failed extracting %s from %s: %w", entrypoint, image, err)
		}
	}
	if !found {
		return "", fmt.Errorf("image %s has no %s", image, entrypoint)
	}
	k.mu.Lock()
	k.images[image] = binary
	k.mu.Unlock()
	return binary, nil
}

// extractFile writes the regular file file of a layer to out, executable; false if the layer
// does not hold it.
func extractFile(open func() (io.ReadCloser, error), file, out string) (bool, error) {
	rc, err := open()
	if err != nil {
		return false, err
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if strings.TrimPrefix(path.Clean(hdr.Name), "/") != file || hdr.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755) //nolint:gosec // the image's executable for the pod
		if err != nil {
			return false, err
		}
		if _, err := io.Copy(f, tr); err != nil { //nolint:gosec // an image the sandbox built
			_ = f.Close()
			return false, err
		}
		return true, f.Close()
	}
}
