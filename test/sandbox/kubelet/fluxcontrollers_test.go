// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/mod/semver"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

var _ = Describe("Flux controller binaries", func() {
	It("reads image=binary words", func() {
		Expect(ParseControllers(FluxControllersEnv, " source-controller:v1.9.5=/a/source-controller\n helm-controller:v1.4.5=/b ")).To(Equal(map[string]string{
			"source-controller:v1.9.5": "/a/source-controller",
			"helm-controller:v1.4.5":   "/b",
		}))
		Expect(ParseControllers(FluxControllersEnv, "")).To(BeEmpty())
	})

	DescribeTable("rejects malformed words",
		func(value, message string) {
			_, err := ParseControllers(FluxControllersEnv, value)
			Expect(err).To(MatchError(ContainSubstring(message)))
		},
		Entry("a path only", "/cache/source-controller", `"/cache/source-controller" is not <image>=<binary>`),
		Entry("no binary", "source-controller:v1.9.5=", `is not <image>=<binary>`),
		Entry("an image twice", "source-controller:v1.9.5=/a source-controller:v1.9.5=/b", "image source-controller:v1.9.5 is listed twice"),
	)

	DescribeTable("validates Options.FluxControllers",
		func(binaries map[string]string, message string) {
			Expect(ValidateFluxControllers(binaries)).To(MatchError(ContainSubstring(message)))
		},
		Entry("a component the stand-in cannot run", map[string]string{"notification-controller:v1.9.4": "/n"}, `unknown Flux controller image "notification-controller:v1.9.4"`),
		Entry("no tag", map[string]string{"source-controller": "/s"}, `image "source-controller" in Options.FluxControllers has no version tag`),
		Entry("no binary", map[string]string{"source-controller:v1.9.5": ""}, "no binary for Flux controller image source-controller:v1.9.5"),
	)

	It("lists the images of every embedded release", func() {
		images, err := FluxControllerImages()
		Expect(err).NotTo(HaveOccurred())
		Expect(images).To(HaveLen(len(manifests.FluxVersions()) * len(RunnableFluxControllers())))
		binaries := map[string]string{}
		for _, image := range images {
			binaries[image] = "/cache/" + image
		}
		Expect(ValidateFluxControllers(binaries)).To(Succeed())
	})

	It("starts the source-controller of the newest release", func() {
		images, err := FluxControllerImages()
		Expect(err).NotTo(HaveOccurred())
		binaries := map[string]string{}
		var newest string
		for _, image := range images {
			binaries[image] = image
			if tag, ok := strings.CutPrefix(image, "source-controller:"); ok && (newest == "" || semver.Compare(tag, newest) > 0) {
				newest = tag
			}
		}
		Expect(NewestSourceController(binaries)).To(Equal("source-controller:" + newest))
		delete(binaries, "source-controller:"+newest)
		_, err = NewestSourceController(binaries)
		Expect(err).To(MatchError(ContainSubstring("no binary for source-controller:" + newest)))
	})
})
