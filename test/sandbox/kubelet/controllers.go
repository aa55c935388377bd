// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package kubelet

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

// ParseControllers reads the value of the variable env (FluxControllersEnv or KluctlControllersEnv)
// into the map sandbox.Options.FluxControllers and sandbox.Options.KluctlControllers take.
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

// ControllersFromEnv reads FluxControllersEnv and KluctlControllersEnv, for programs and specs that
// run the delivered controllers (sandbox.ShootSpec.RunControllers); either is empty if its variable
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

// FluxControllerImages returns the images of sandbox.Options.FluxControllers the kubelet stand-in
// needs to run every runnable controller of every embedded Flux release, as "<component>:<tag>".
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
// release from binaries (keyed like sandbox.Options.FluxControllers).
func NewestSourceController(binaries map[string]string) (string, error) {
	version := manifests.NewestFluxVersion()
	images, err := manifests.Images(manifests.FluxOptions{Version: version, Components: []string{fluxapi.ComponentSourceController}}, nil)
	if err != nil {
		return "", fmt.Errorf("failed reading the source-controller image: %w", err)
	}
	image := imageKey(images[fluxapi.ComponentSourceController])
	binary := binaries[image]
	if binary == "" {
		return "", fmt.Errorf("no binary for %s, the source-controller of Flux %s (hack/build-flux-controllers.sh)", image, version)
	}
	return binary, nil
}

// KluctlControllerImages returns the images of sandbox.Options.KluctlControllers the kubelet
// stand-in needs to run the controller of every embedded kluctl release, as "kluctl:<tag>".
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

// ValidateKluctlControllers checks the keys and binaries of sandbox.Options.KluctlControllers.
func ValidateKluctlControllers(binaries map[string]string) error {
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

// ValidateFluxControllers checks the keys and binaries of sandbox.Options.FluxControllers.
func ValidateFluxControllers(binaries map[string]string) error {
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

// Binaries returns the binaries of sandbox.Options.FluxControllers and
// sandbox.Options.KluctlControllers in one map, by image, as Start takes them; their keys cannot
// collide (ValidateFluxControllers, ValidateKluctlControllers).
func Binaries(flux, kluctl map[string]string) map[string]string {
	binaries := maps.Clone(flux)
	if binaries == nil {
		binaries = map[string]string{}
	}
	maps.Copy(binaries, kluctl)
	return binaries
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

// sourceController is the Flux component that fetches sources; the others act on its artifacts.
const sourceController = "source-controller"

// listenFlag is a controller flag that takes a listen address, with the port it listens on in a
// cluster when the Deployment does not set the flag.
type listenFlag struct {
	name string
	port int32
}

// runnableController says how the kubelet stand-in runs a controller on a machine without cluster
// networking.
type runnableController struct {
	// listen are the flags that take listen addresses. Every process gets free 127.0.0.1 ports:
	// all of them share the machine's network, where the ports of the pod spec collide.
	listen []listenFlag
	// advertise maps a flag that tells clients where a listener is to that listener's flag: the
	// in-cluster Service name it holds does not resolve here.
	advertise map[string]string
	// leaderElection is the flag that enables leader election, which the stand-in turns off
	// (docs/development/sandbox.md says why).
	leaderElection string
	// command is the executable of the image the binary stands in for, for containers that name
	// it in their command instead of running the image's entrypoint (see containerCommand).
	command string
	// imageEnv is the environment the image sets (its ENV), which the container's env overrides.
	imageEnv []string
}

// runnableFluxControllers are the Flux controllers the kubelet stand-in can run, by the name of
// their image repository, which is also the Flux component name.
var runnableFluxControllers = map[string]runnableController{
	sourceController: {
		listen: []listenFlag{{name: "storage-addr", port: 9090}, {name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		// kustomize- and helm-controller fetch artifacts from the URL source-controller advertises.
		advertise:      map[string]string{"storage-adv-addr": "storage-addr"},
		leaderElection: "enable-leader-election",
	},
	"kustomize-controller": {
		listen:         []listenFlag{{name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		leaderElection: "enable-leader-election",
	},
	"helm-controller": {
		listen:         []listenFlag{{name: "metrics-addr", port: 8080}, {name: "health-addr", port: 9440}},
		leaderElection: "enable-leader-election",
	},
}

// kluctlController is the name of the kluctl image repository, and the component name of the
// kluctl controller in the kubelet stand-in.
const kluctlController = "kluctl"

// runnableKluctlController says how the kubelet stand-in runs the kluctl controller: the
// delivered container runs "tini -- kluctl controller run" with the flags of controller-runtime's
// manager. Its leader election takes the lease namespace from --controller-namespace and would
// work, but is off as for Flux: one process per Deployment has no one to elect.
var runnableKluctlController = runnableController{
	listen: []listenFlag{
		{name: "metrics-bind-address", port: 8080},
		{name: "health-probe-bind-address", port: 8081},
		{name: "source-override-bind-address", port: 8082},
	},
	leaderElection: "leader-elect",
	command:        "kluctl",
	// As the image sets them: the image has git on its PATH, which kluctl runs when go-git cannot
	// read the status of a checkout of its repository cache, and keeps its caches in /tmp.
	imageEnv: []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HELM_CACHE_HOME=/tmp/helm-cache",
		"KLUCTL_CACHE_DIR=/tmp/kluctl-cache",
	},
}

// runnableControllers returns how the kubelet stand-in runs a component, a Flux controller or
// kluctlController.
func runnableControllers(component string) runnableController {
	if component == kluctlController {
		return runnableKluctlController
	}
	return runnableFluxControllers[component]
}

// RunnableFluxControllers returns the Flux components the kubelet stand-in of a shoot with
// sandbox.ShootSpec.RunControllers can run when sandbox.Options.FluxControllers has their binaries.
func RunnableFluxControllers() []string {
	names := make([]string, 0, len(runnableFluxControllers))
	for name := range runnableFluxControllers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
