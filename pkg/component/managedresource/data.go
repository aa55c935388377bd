// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource

import (
	"bytes"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
)

const (
	// maxCompressors bounds the brotli writers the process keeps, whatever its number of cores.
	maxCompressors = 4
	// compressionWindowBits is the writers' window. brotli's default of 4 MiB costs a writer ~12 MiB
	// for the largest payload the extension writes (every Flux component, ~460 KiB of YAML);
	// 256 KiB costs 4.4 MiB, and the output is 0.6 % larger (27.0 instead of 26.9 KiB).
	compressionWindowBits = 18
)

// compressions bounds the brotli writers in use at once, and writers keeps the idle ones until
// the garbage collector drops them. A writer allocates its window and hash tables on first use and
// keeps them across Reset. A new writer per ManagedResource, as gardener's
// managedresources.Registry takes, allocated up to ~12 MiB per reconcile, and a burst of reconciles
// (a project ConfigMap change reaches all of the project's shoots at once) grew the heap by
// ~100 MiB before the garbage collector caught up; during a burst the writers are reused, and a
// quiet process gives them back. Compression is CPU-bound, so more writers than cores would only
// add memory.
var (
	compressions = make(chan struct{}, min(runtime.GOMAXPROCS(0), maxCompressors))
	writers      = sync.Pool{New: func() any {
		return brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: brotli.DefaultCompression, LGWin: compressionWindowBits})
	}}
)

// Data returns the Secret data of a ManagedResource that holds the given YAML files, in the format
// gardener-resource-manager reads and gardener's managedresources.Registry writes: the files in
// the order of their names, each ending in a newline, separated by "---", brotli-compressed into
// the one key resourcesv1alpha1.CompressedDataKey.
func Data(files map[string][]byte) (map[string][]byte, error) {
	compressions <- struct{}{}
	w := writers.Get().(*brotli.Writer)
	defer func() {
		writers.Put(w)
		<-compressions
	}()

	var buf bytes.Buffer
	w.Reset(&buf)
	names := slices.Sorted(maps.Keys(files))
	for i, name := range names {
		content := files[name]
		if err := write(w, content); err != nil {
			return nil, fmt.Errorf("failed compressing %s: %w", name, err)
		}
		if !bytes.HasSuffix(content, []byte("\n")) {
			if err := write(w, []byte("\n")); err != nil {
				return nil, fmt.Errorf("failed compressing %s: %w", name, err)
			}
		}
		if !bytes.HasSuffix(content, []byte("---\n")) && i < len(names)-1 {
			if err := write(w, []byte("---\n")); err != nil {
				return nil, fmt.Errorf("failed compressing %s: %w", name, err)
			}
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("failed compressing ManagedResource data: %w", err)
	}
	return map[string][]byte{resourcesv1alpha1.CompressedDataKey: buf.Bytes()}, nil
}

func write(w *brotli.Writer, p []byte) error {
	_, err := w.Write(p)
	return err
}
