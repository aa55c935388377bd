// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package archive writes the tar.gz archives test servers hand out: Helm charts and Flux OCI
// artifacts.
package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"slices"
	"time"
)

// modTime makes archives independent of when the test runs.
var modTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// TarGz archives files (path to content) as regular files, in path order.
func TarGz(files map[string]string) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)

	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		content := []byte(files[name])
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: modTime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", name, err)
		}
		if _, err := tw.Write(content); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", name, err)
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return nil, fmt.Errorf("closing the archive: %w", err)
	}
	return buf.Bytes(), nil
}
