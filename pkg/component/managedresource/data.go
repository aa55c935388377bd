// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yamlserializer "k8s.io/apimachinery/pkg/runtime/serializer/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// maxCompressors bounds the brotli writers the process keeps, whatever its number of cores.
	maxCompressors = 4
	// compressionWindowBits is the writers' window. brotli's default of 4 MiB costs a writer ~12 MiB
	// for the largest payload the extension writes (every Flux component, ~460 KiB of YAML);
	// 256 KiB costs 4.4 MiB, and the output is 0.6 % larger (27.0 instead of 26.9 KiB).
	compressionWindowBits = 18
)

// compressions bounds the brotli writers in use at once, and writers keeps the idle ones until the
// garbage collector drops them: a new writer per ManagedResource (up to ~12 MiB each) grew the heap
// by ~100 MiB in a burst of reconciles. More writers than cores would only add memory (see
// docs/development/design-notes.md, "Compression").
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

// yamlDecoder decodes the manifests in ManagedResource Secrets into unstructured objects, so that
// kinds no scheme of the extension knows (Flux and kluctl objects) are read too.
var yamlDecoder = yamlserializer.NewDecodingSerializer(unstructured.UnstructuredJSONScheme)

// Objects returns the objects of a ManagedResource as gardener-resource-manager reads them from its
// Secrets, brotli-compressed data included.
func Objects(ctx context.Context, reader client.Reader, namespace, name string) ([]*unstructured.Unstructured, error) {
	mr := &resourcesv1alpha1.ManagedResource{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, mr); err != nil {
		return nil, fmt.Errorf("failed reading managed resource %s/%s: %w", namespace, name, err)
	}
	var out []*unstructured.Unstructured
	for _, ref := range mr.Spec.SecretRefs {
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("failed reading Secret %s of managed resource %s/%s: %w", ref.Name, namespace, name, err)
		}
		objects, err := ObjectsOfData(secret.Data)
		if err != nil {
			return nil, fmt.Errorf("managed resource %s/%s, Secret %s: %w", namespace, name, ref.Name, err)
		}
		out = append(out, objects...)
	}
	return out, nil
}

// ObjectsOfData decodes the data of a ManagedResource Secret, as a component's Data function
// returns it.
func ObjectsOfData(data map[string][]byte) ([]*unstructured.Unstructured, error) {
	objects, err := managedresources.ExtractObjectsFromSecret(yamlDecoder, &corev1.Secret{Data: data})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objects))
	for _, obj := range objects {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	return out, nil
}
