// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package managedresource_test

import (
	"bytes"
	"io"
	"runtime"
	"time"

	"github.com/andybalholm/brotli"
	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	"github.com/gardener/gardener/pkg/client/kubernetes"
	"github.com/gardener/gardener/pkg/utils/managedresources"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
)

var _ = Describe("Data", func() {
	files := map[string][]byte{
		"b.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: x\n"),
		"a.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: x"),
		"c.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: x\n---\n"),
	}

	It("writes what gardener's managedresources.Registry writes for the same files", func() {
		registry := managedresources.NewRegistry(kubernetes.ShootScheme, kubernetes.ShootCodec, kubernetes.ShootSerializer)
		for name, content := range files {
			registry.AddSerialized(name, content)
		}
		want, err := registry.SerializedObjects()
		Expect(err).NotTo(HaveOccurred())

		// More often than writers run at once: a writer reused from the pool writes the same as a
		// new one.
		for range 2 * cap(managedresource.Compressions) {
			data, err := managedresource.Data(files)
			Expect(err).NotTo(HaveOccurred())
			Expect(data).To(HaveLen(1))
			Expect(decompress(data[resourcesv1alpha1.CompressedDataKey])).To(Equal(decompress(want[resourcesv1alpha1.CompressedDataKey])))
			objs, err := managedresource.ObjectsOfData(data)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).To(HaveLen(3))
			Expect(objs[0].GetName()).To(Equal("a"))
		}
	})

	// A burst of reconciles compresses with at most one writer per core (and maxCompressors): each
	// writer in use holds its window and hash tables.
	It("waits while as many compressions run as it allows writers", func() {
		Expect(cap(managedresource.Compressions)).To(Equal(min(runtime.GOMAXPROCS(0), 4)))
		for range cap(managedresource.Compressions) {
			managedresource.Compressions <- struct{}{}
		}
		done := make(chan error, 1)
		go func() {
			_, err := managedresource.Data(files)
			done <- err
		}()
		Consistently(done, 300*time.Millisecond).ShouldNot(Receive())
		for range cap(managedresource.Compressions) {
			<-managedresource.Compressions
		}
		Eventually(done, 5*time.Second).Should(Receive(BeNil()))
	})
})

func decompress(data []byte) string {
	GinkgoHelper()
	out, err := io.ReadAll(brotli.NewReader(bytes.NewReader(data)))
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}
