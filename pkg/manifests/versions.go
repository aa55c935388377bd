// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

// Flux components the extension can install; the API owns the list.
const (
	SourceController       = fluxapi.ComponentSourceController
	KustomizeController    = fluxapi.ComponentKustomizeController
	HelmController         = fluxapi.ComponentHelmController
	NotificationController = fluxapi.ComponentNotificationController
)

// fluxComponents is also the order in which components are handed to Flux, so that the output
// does not depend on the order of FluxOptions.Components.
var fluxComponents = fluxapi.KnownComponents

//go:embed flux kluctl
var embedded embed.FS

var (
	fluxVersions   = mustVersions("flux")
	kluctlVersions = mustVersions("kluctl")
)

// FluxComponents returns the Flux components the extension can install, source-controller first.
func FluxComponents() []string {
	return slices.Clone(fluxComponents)
}

// SupportedVersions are the Flux and kluctl releases this build ships manifests for, which the
// controller and the admission webhook accept.
func SupportedVersions() validation.SupportedVersions {
	return validation.SupportedVersions{Flux: FluxVersions(), Kluctl: KluctlVersions()}
}

// FluxVersions returns the embedded Flux releases in ascending order.
func FluxVersions() []string {
	return slices.Clone(fluxVersions)
}

// KluctlVersions returns the embedded kluctl releases in ascending order.
func KluctlVersions() []string {
	return slices.Clone(kluctlVersions)
}

// NewestFluxVersion is the newest embedded Flux release.
func NewestFluxVersion() string {
	return fluxVersions[len(fluxVersions)-1]
}

// NewestKluctlVersion is the newest embedded kluctl release.
func NewestKluctlVersion() string {
	return kluctlVersions[len(kluctlVersions)-1]
}

func mustVersions(dir string) []string {
	entries, err := fs.ReadDir(embedded, dir)
	if err != nil {
		panic(fmt.Errorf("reading embedded %s manifests: %w", dir, err))
	}
	var versions []string
	for _, e := range entries {
		if e.IsDir() {
			versions = append(versions, e.Name())
		}
	}
	slices.SortFunc(versions, semver.Compare)
	return versions
}

func checkVersion(kind, version string, supported []string) error {
	if !slices.Contains(supported, version) {
		return fmt.Errorf("unsupported %s version %q, supported: %s", kind, version, strings.Join(supported, ", "))
	}
	return nil
}
