// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
)

// FluxControllersEnv is the variable through which make hands the Flux controller binaries to the
// integration tests and the demo: whitespace-separated "<image>=<binary>" words, as printed by
// hack/build-flux-controllers.sh, e.g. "source-controller:v1.9.5=/cache/source-controller/v1.9.5/source-controller".
const FluxControllersEnv = "FLUX_CONTROLLERS"

// KluctlControllersEnv is the variable through which make hands the kluctl controller binaries to
// the integration tests and the demo, in the format of FluxControllersEnv, as printed by
// hack/build-kluctl-controller.sh, e.g. "kluctl:v2.28.2=/cache/kluctl-controller/v2.28.2/kluctl".
const KluctlControllersEnv = "KLUCTL_CONTROLLERS"

// ParseControllers reads the value of the variable env (FluxControllersEnv or
// KluctlControllersEnv) into the map Options.FluxControllers and Options.KluctlControllers take.
func ParseControllers(env, value string) (map[string]string, error) {
	out := map[string]string{}
	for _, word := range strings.Fields(value) {
		image, binary, ok := strings.Cut(word, "=")
		if !ok || binary == "" {
			return nil, fmt.Errorf("%s: %q is not <image>=<binary>", env, word)
		}
		if _, dup := out[image]; dup {
			return nil, fmt.Errorf("%s: image %s is listed twice", env, image)
		}
		out[image] = binary
	}
	return out, nil
}

// ControllersFromEnv reads FluxControllersEnv and KluctlControllersEnv, for programs and specs
// that run the delivered controllers (ShootSpec.RunControllers); either is empty if its variable
// is unset.
func ControllersFromEnv() (flux, kluctl map[string]string, err error) {
	if flux, err = ParseControllers(FluxControllersEnv, os.Getenv(FluxControllersEnv)); err != nil {
		return nil, nil, err
	}
	if kluctl, err = ParseControllers(KluctlControllersEnv, os.Getenv(KluctlControllersEnv)); err != nil {
		return nil, nil, err
	}
	return flux, kluctl, nil
}

// FluxControllerImages returns the images of Options.FluxControllers the kubelet stand-in needs to
// run every runnable controller of every embedded Flux release, as "<component>:<tag>".
func FluxControllerImages() ([]string, error) {
	var images []string
	for _, version := range manifests.FluxVersions() {
		pinned, err := manifests.Images(manifests.FluxOptions{Version: version, Components: RunnableFluxControllers()}, nil)
		if err != nil {
			return nil, fmt.Errorf("failed reading the images of Flux %s: %w", version, err)
		}
		for _, image := range pinned {
			images = append(images, imageKey(image))
		}
	}
	slices.Sort(images)
	return images, nil
}

// NewestSourceController returns the binary of the source-controller of the newest embedded Flux
// release from binaries (keyed like Options.FluxControllers).
func NewestSourceController(binaries map[string]string) (string, error) {
	versions := manifests.FluxVersions()
	images, err := manifests.Images(manifests.FluxOptions{Version: versions[len(versions)-1], Components: []string{fluxapi.ComponentSourceController}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed reading the source-controller image: %w", err)
	}
	image := imageKey(images[fluxapi.ComponentSourceController])
	binary := binaries[image]
	if binary == "" {
		return "", fmt.Errorf("no binary for %s, the source-controller of Flux %s (hack/build-flux-controllers.sh)", image, versions[len(versions)-1])
	}
	return binary, nil
}

// KluctlControllerImages returns the images of Options.KluctlControllers the kubelet stand-in needs
// to run the controller of every embedded kluctl release, as "kluctl:<tag>".
func KluctlControllerImages() ([]string, error) {
	var images []string
	// The Flux options only make Images render; the kluctl image does not depend on them.
	flux := manifests.FluxOptions{Version: manifests.FluxVersions()[0], Components: []string{fluxapi.ComponentSourceController}}
	for _, version := range manifests.KluctlVersions() {
		pinned, err := manifests.Images(flux, &manifests.KluctlOptions{Version: version})
		if err != nil {
			return nil, fmt.Errorf("failed reading the image of kluctl %s: %w", version, err)
		}
		images = append(images, imageKey(pinned[manifests.KluctlComponent]))
	}
	slices.Sort(images)
	return images, nil
}

// validateKluctlControllers checks the keys and binaries of Options.KluctlControllers.
func validateKluctlControllers(binaries map[string]string) error {
	for image, binary := range binaries {
		name, tag, ok := strings.Cut(image, ":")
		if name != kluctlController {
			return fmt.Errorf("unknown kluctl controller image %q in Options.KluctlControllers, expected %s:<tag>", image, kluctlController)
		}
		if !ok || !semver.IsValid(tag) {
			return fmt.Errorf("image %q in Options.KluctlControllers has no version tag, e.g. %s:v2.28.2", image, kluctlController)
		}
		if binary == "" {
			return fmt.Errorf("no binary for kluctl controller image %s in Options.KluctlControllers", image)
		}
	}
	return nil
}

// validateFluxControllers checks the keys and binaries of Options.FluxControllers.
func validateFluxControllers(binaries map[string]string) error {
	for image, binary := range binaries {
		component, tag, ok := strings.Cut(image, ":")
		if _, known := runnableFluxControllers[component]; !known {
			return fmt.Errorf("unknown Flux controller image %q in Options.FluxControllers, known components: %s", image, strings.Join(RunnableFluxControllers(), ", "))
		}
		if !ok || !semver.IsValid(tag) {
			return fmt.Errorf("image %q in Options.FluxControllers has no version tag, e.g. %s:v1.9.5", image, component)
		}
		if binary == "" {
			return fmt.Errorf("no binary for Flux controller image %s in Options.FluxControllers", image)
		}
	}
	return nil
}

// imageName returns the last path element of an image reference without tag and digest:
// "source-controller" for ghcr.io/fluxcd/source-controller:v1.9.5.
func imageName(image string) string {
	name, _, _ := strings.Cut(imageKey(image), ":")
	return name
}

// imageKey returns the last path element of an image reference with its tag but without registry
// and digest: "source-controller:v1.9.5" for ghcr.io/fluxcd/source-controller:v1.9.5@sha256:...
// The registry is left out because operators mirror the images (the image vector's registry
// override); the tag is what tells the releases apart.
func imageKey(image string) string {
	image, _, _ = strings.Cut(image, "@")
	return path.Base(image)
}

// controllerBinaries returns the binaries of Options.FluxControllers and Options.KluctlControllers
// in one map, by image; their keys cannot collide (validateFluxControllers,
// validateKluctlControllers).
func (s *Sandbox) controllerBinaries() map[string]string {
	binaries := maps.Clone(s.opts.FluxControllers)
	if binaries == nil {
		binaries = map[string]string{}
	}
	maps.Copy(binaries, s.opts.KluctlControllers)
	return binaries
}
