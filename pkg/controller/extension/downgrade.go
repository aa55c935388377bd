package extension

import (
	"fmt"

	"golang.org/x/mod/semver"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// checkDowngrade refuses a configuration that would install an older minor of Flux or kluctl than
// the shoot runs, as the providerStatus of the last successful reconcile records it. The older
// release's CRDs would replace the newer ones: the API server then prunes the fields only the newer
// release knows from the users' objects, and the older controllers meet objects written for the
// newer ones. Within a minor, Flux and kluctl keep their APIs, so an older patch is accepted: it is
// what rolling back an extension version that brought a newer patch installs. The check runs before
// anything is written, so the running controllers stay as they are until the configuration
// selects the installed minor or a newer one.
func checkDowngrade(previous *fluxv1alpha1.FluxStatus, cfg *fluxapi.FluxConfig) error {
	if previous == nil {
		return nil
	}
	if err := checkMinorDowngrade("flux.version", "Flux", "fluxVersion", previous.FluxVersion, cfg.Flux.Version); err != nil {
		return err
	}
	if cfg.Kluctl.Enabled {
		return checkMinorDowngrade("kluctl.version", "kluctl", "kluctlVersion", previous.KluctlVersion, cfg.Kluctl.Version)
	}
	return nil
}

func checkMinorDowngrade(field, project, statusField, installed, selected string) error {
	// An empty or unreadable record (kluctl was disabled, or an earlier release wrote it) has
	// nothing to protect.
	if !semver.IsValid(installed) || !semver.IsValid(selected) {
		return nil
	}
	if semver.Compare(semver.MajorMinor(selected), semver.MajorMinor(installed)) >= 0 {
		return nil
	}
	return configurationError(fmt.Errorf("%s: selects %s %s, but the shoot runs %s (providerStatus.%s); downgrading %s to an older minor is not supported, "+
		"as the older CRDs would drop what the newer release stored in the shoot's objects: select %s or a newer release",
		field, project, selected, installed, statusField, project, semver.MajorMinor(installed)))
}
