// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package imagevector_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gardener/gardener/pkg/utils/imagevector"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/imagevector"
)

// startOverwrite is the overwrite the test process was started with, which ImageVector has read.
var startOverwrite = os.Getenv(imagevector.OverrideEnv)

var _ = Describe("ImageVector", func() {
	BeforeEach(func() {
		GinkgoT().Setenv(imagevector.OverrideEnv, "")
	})

	It("has every image, bound to its release", func() {
		vector, err := Load()
		Expect(err).NotTo(HaveOccurred())

		// The releases are those of the entries; the generator writes one entry per component.
		releases := map[string][]string{}
		for _, image := range vector {
			Expect(image.TargetVersion).NotTo(BeNil(), "%s must be bound to a release", image.Name)
			release, ok := strings.CutPrefix(*image.TargetVersion, "= ")
			Expect(ok).To(BeTrue(), "%s must match exactly one release, not %q", image.Name, *image.TargetVersion)
			releases[image.Name] = append(releases[image.Name], "v"+release)
		}
		Expect(releases).To(HaveKey(FluxSourceController))
		Expect(releases).To(HaveKey(KluctlController))
		fluxNames := []string{FluxSourceController, FluxKustomizeController, FluxHelmController, FluxNotificationController}
		for _, name := range fluxNames {
			Expect(releases[name]).To(ConsistOf(releases[FluxSourceController]), "%s must have an image for every Flux release", name)
		}

		for name, versions := range releases {
			repository := "ghcr.io/fluxcd/" + strings.TrimPrefix(name, "flux-")
			if name == KluctlController {
				repository = "ghcr.io/kluctl/kluctl"
			}
			for _, release := range versions {
				found, err := vector.FindImage(name, imagevector.TargetVersion(release))
				Expect(err).NotTo(HaveOccurred())
				Expect(found.Repository).To(HaveValue(Equal(repository)))
				Expect(found.Tag).To(HaveValue(HavePrefix("v")))
				if name == KluctlController {
					Expect(found.Tag).To(HaveValue(Equal(release)))
				}

				// Neither the patch before nor the one after may match.
				major, minor, patch := semverParts(release)
				for _, other := range []string{fmt.Sprintf("v%d.%d.%d", major, minor, patch+1), fmt.Sprintf("v%d.%d.%d", major, minor+1, patch)} {
					if !slices.Contains(versions, other) {
						_, err := vector.FindImage(name, imagevector.TargetVersion(other))
						Expect(err).To(HaveOccurred(), "%s of %s must not match %s", name, release, other)
					}
				}
			}
		}
	})

	It("is what ImageVector returns for the environment the process started with", func() {
		GinkgoT().Setenv("IMAGEVECTOR_OVERWRITE", startOverwrite)
		vector, err := Load()
		Expect(err).NotTo(HaveOccurred())
		Expect(ImageVector()).To(Equal(vector))
	})

	It("merges the overwrite named by IMAGEVECTOR_OVERWRITE", func() {
		file := filepath.Join(GinkgoT().TempDir(), "overwrite.yaml")
		Expect(os.WriteFile(file, []byte(`images:
- name: flux-source-controller
  repository: registry.example.com/source-controller
  targetVersion: "= 2.9.5"
`), 0o600)).To(Succeed())
		GinkgoT().Setenv(imagevector.OverrideEnv, file)

		vector, err := Load()
		Expect(err).NotTo(HaveOccurred())
		found, err := vector.FindImage(FluxSourceController, imagevector.TargetVersion("v2.9.5"))
		Expect(err).NotTo(HaveOccurred())
		Expect(found.String()).To(Equal("registry.example.com/source-controller:v1.9.5"))
	})

	It("fails on an unreadable overwrite", func() {
		GinkgoT().Setenv(imagevector.OverrideEnv, filepath.Join(GinkgoT().TempDir(), "missing.yaml"))
		_, err := Load()
		Expect(err).To(MatchError(ContainSubstring("reading image vector overwrite from $IMAGEVECTOR_OVERWRITE")))
	})
})

func semverParts(version string) (major, minor, patch int) {
	GinkgoHelper()
	_, err := fmt.Sscanf(version, "v%d.%d.%d", &major, &minor, &patch)
	Expect(err).NotTo(HaveOccurred())
	return major, minor, patch
}
