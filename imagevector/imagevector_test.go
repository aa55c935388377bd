package imagevector_test

import (
	"os"
	"path/filepath"

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

		for release, images := range map[string]map[string]string{
			"v2.9.5": {
				FluxSourceController:       "ghcr.io/fluxcd/source-controller:v1.9.5",
				FluxKustomizeController:    "ghcr.io/fluxcd/kustomize-controller:v1.9.5",
				FluxHelmController:         "ghcr.io/fluxcd/helm-controller:v1.6.4",
				FluxNotificationController: "ghcr.io/fluxcd/notification-controller:v1.9.4",
			},
			// The images flux2 v2.7.5 pins, including those whose modules the proxy does not serve.
			"v2.7.5": {
				FluxSourceController:       "ghcr.io/fluxcd/source-controller:v1.7.4",
				FluxKustomizeController:    "ghcr.io/fluxcd/kustomize-controller:v1.7.3",
				FluxHelmController:         "ghcr.io/fluxcd/helm-controller:v1.4.5",
				FluxNotificationController: "ghcr.io/fluxcd/notification-controller:v1.7.5",
			},
		} {
			for name, image := range images {
				found, err := vector.FindImage(name, imagevector.TargetVersion(release))
				Expect(err).NotTo(HaveOccurred())
				Expect(found.String()).To(Equal(image))
			}
		}
		for _, name := range []string{FluxSourceController, FluxKustomizeController, FluxHelmController, FluxNotificationController} {
			for _, other := range []string{"v2.8.0", "v2.9.4", "v2.7.6"} {
				_, err := vector.FindImage(name, imagevector.TargetVersion(other))
				Expect(err).To(HaveOccurred(), "%s must not match Flux %s", name, other)
			}
		}

		found, err := vector.FindImage(KluctlController, imagevector.TargetVersion("v2.28.2"))
		Expect(err).NotTo(HaveOccurred())
		Expect(found.String()).To(Equal("ghcr.io/kluctl/kluctl:v2.28.2"))
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
