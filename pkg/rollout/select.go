// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"github.com/go-logr/logr"
	"golang.org/x/mod/semver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// Input is what the release selection of one reconcile starts from.
type Input struct {
	// Config is the resolved configuration; Select sets its releases to the ones to install.
	Config *fluxapi.FluxConfig
	// Requested are the selectors the tenants' layers wrote.
	Requested fluxv1alpha1.RequestedVersions
	// Previous is the providerStatus of the last reconcile, nil if there is none.
	Previous *fluxv1alpha1.FluxStatus
	Shoot    *gardencorev1beta1.Shoot
	Window   config.RolloutWindow
	Now      time.Time
}

// Selection is the outcome of the release selection.
type Selection struct {
	// Pending is the change that waits for the maintenance time window, nil if there is none.
	Pending *fluxv1alpha1.PendingRelease
	// Moves are the moves off expired releases this reconcile makes.
	Moves []fluxv1alpha1.ForcedMove
	// ForcedMoves are the last move of each component, for the providerStatus.
	ForcedMoves []fluxv1alpha1.ForcedMove
	// KubernetesWarning tells why the shoot does not get the selected Flux release, empty if it does.
	KubernetesWarning string
	// Unfit is set in flux.management handover when no embedded Flux release supports the shoot's
	// Kubernetes version and none is installed yet: the reconcile fails with it unless the shoot runs
	// a Flux of its own (another extension installed it), which is then left as it is.
	Unfit error
}

// Select sets the releases of in.Config to install (see docs/development/architecture.md#release-selection):
// the operator's lifecycle replaces expired releases, changes nobody of the project asked for wait
// for the maintenance time window, Flux stays within the shoot's Kubernetes range, and no
// component goes back to an older minor. Its errors are configuration errors.
func Select(log logr.Logger, lifecycle *releases.Lifecycle, in Input) (Selection, error) {
	var sel Selection
	sel.Pending, sel.Moves = selectReleases(log, lifecycle, in)
	warning, err := fitKubernetes(lifecycle.Flux(), in)
	if err != nil && in.Config.Flux.Management == fluxapi.ManagementHandover {
		sel.Unfit, err = err, nil
	}
	if err != nil {
		return Selection{}, err
	}
	sel.KubernetesWarning = warning
	if err := CheckDowngrade(in.Previous, in.Config); err != nil {
		return Selection{}, err
	}
	sel.ForcedMoves = forcedMoves(in.Previous, sel.Moves)
	return sel, nil
}

// selectReleases replaces expired releases and holds back the changes nobody of the project asked
// for until the shoot's maintenance time window.
func selectReleases(log logr.Logger, lifecycle *releases.Lifecycle, in Input) (*fluxv1alpha1.PendingRelease, []fluxv1alpha1.ForcedMove) {
	var (
		pending fluxv1alpha1.PendingRelease
		reasons []string
		moves   []fluxv1alpha1.ForcedMove
	)
	for _, c := range lifecycle.Components() {
		if !c.Enabled(in.Config) {
			continue
		}
		version := c.Version(in.Config)
		release, move := c.Replacement(*version, in.Now)
		if move != nil && move.To == "" {
			log.Info("Keeping an expired release: no supported release replaces it", "component", c.Key, "release", move.From)
		}
		installed := ""
		if in.Previous != nil {
			installed = *c.Installed(in.Previous)
		}
		if installed == "" {
			// The first installation, or kluctl newly enabled: nothing to keep.
			*version = release
		} else {
			change := Change{Component: c.Name, Installed: installed, Selected: release, Requested: *c.Requested(&in.Requested), Embedded: c.Embedded}
			if in.Previous.Requested != nil {
				change.PreviouslyKnown, change.PreviouslyRequested = true, *c.Requested(in.Previous.Requested)
			}
			if move != nil && move.To != "" {
				change.Forced = move.Reason(c.Name)
			}
			d := Decide(change, in.Window, in.Shoot, in.Now)
			*version, *c.Pending(&pending) = d.Release, d.Pending
			if d.Pending != "" {
				reasons = append(reasons, d.Reason)
			}
		}
		if move != nil && move.To != "" && *version == move.To && installed != move.To {
			moves = append(moves, fluxv1alpha1.ForcedMove{Component: c.Key, From: move.From, To: move.To,
				ExpirationDate: metav1.Time{Time: move.Expired}, Time: metav1.Time{Time: in.Now}})
		}
	}
	if len(reasons) == 0 {
		return nil, moves
	}
	pending.Reason = strings.Join(reasons, "; ")
	pending.NextMaintenance = &metav1.Time{Time: NextWindow(in.Shoot, in.Now)}
	log.Info("Keeping the installed releases until the shoot's maintenance time window", "pendingFluxVersion", pending.FluxVersion,
		"pendingKluctlVersion", pending.KluctlVersion, "nextMaintenance", pending.NextMaintenance.UTC().Format(time.RFC3339))
	return &pending, moves
}

// fitKubernetes keeps the shoot on a Flux release that supports its Kubernetes version: a selected
// release outside the range is not installed; the installed one stays, with a warning naming the
// range and the fix. Without an installed release the newest usable one in range is installed.
func fitKubernetes(flux releases.Component, in Input) (string, error) {
	cfg := in.Config
	kubernetes := in.Shoot.Spec.Kubernetes.Version
	selected := cfg.Flux.Version
	embedded := flux.Embedded
	if kubernetes == "" || releases.FluxSupportsKubernetes(selected, kubernetes) {
		return "", nil
	}
	// A release no manifests are embedded of was handed over as another installer left it (see
	// package adoption): there is nothing of it to keep installing, so the selection is fitted as on
	// a first installation.
	if in.Previous != nil && in.Previous.FluxVersion != "" && slices.Contains(embedded, in.Previous.FluxVersion) {
		installed := in.Previous.FluxVersion
		cfg.Flux.Version = installed
		// Only a release of the installed minor or a later one can be the fix: CheckDowngrade
		// refuses older minors.
		var later []string
		for _, r := range embedded {
			if semver.Compare(semver.MajorMinor(r), semver.MajorMinor(installed)) >= 0 {
				later = append(later, r)
			}
		}
		if releases.FluxSupportsKubernetes(installed, kubernetes) {
			return fmt.Sprintf("keeping Flux %s: %s", installed, releases.KubernetesWarning("the selected Flux", selected, kubernetes, later)), nil
		}
		return "keeping " + releases.KubernetesWarning("Flux", installed, kubernetes, later), nil
	}
	fit := releases.NewestForKubernetes(flux.Usable(in.Now), kubernetes)
	if fit == "" {
		return "", configerror.Wrap(fmt.Errorf("flux.version: no embedded Flux release supports the shoot's Kubernetes %s (%s); select a Kubernetes version in one of the ranges",
			kubernetes, releases.KubernetesRanges(embedded)))
	}
	cfg.Flux.Version = fit
	return fmt.Sprintf("installed Flux %s instead: %s", fit, releases.KubernetesWarning("the selected Flux", selected, kubernetes, embedded)), nil
}

// CheckDowngrade refuses a configuration that would install an older minor of a component than
// the shoot runs: the older CRDs would drop what the newer release stored in the users' objects
// (see docs/development/architecture.md#release-selection). An older patch is accepted.
func CheckDowngrade(previous *fluxv1alpha1.FluxStatus, cfg *fluxapi.FluxConfig) error {
	if previous == nil {
		return nil
	}
	for _, s := range releases.Specs {
		if !s.Enabled(cfg) {
			continue
		}
		// Handed-over controllers stay as they are, whatever is selected (a newer Flux in the shoot
		// is handed over as it is); the check applies once the owner chooses continuous.
		if s.Key == releases.KeyFlux && previous.HandedOverAt != nil && cfg.Flux.Management == fluxapi.ManagementHandover {
			continue
		}
		if err := checkMinorDowngrade(s, *s.Installed(previous), *s.Version(cfg)); err != nil {
			return err
		}
	}
	return nil
}

func checkMinorDowngrade(s *releases.Spec, installed, selected string) error {
	// An empty or unreadable record (kluctl was disabled, or an earlier release wrote it) has
	// nothing to protect.
	if !semver.IsValid(installed) || !semver.IsValid(selected) {
		return nil
	}
	if semver.Compare(semver.MajorMinor(selected), semver.MajorMinor(installed)) >= 0 {
		return nil
	}
	return configerror.Wrap(fmt.Errorf("%s: selects %s %s, but the shoot runs %s (providerStatus.%s); downgrading %s to an older minor is not supported, "+
		"as the older CRDs would drop what the newer release stored in the shoot's objects: select %s or a newer release",
		s.VersionPath(nil), s.Name, selected, installed, s.StatusField, s.Name, semver.MajorMinor(installed)))
}

// forcedMoves returns the last move of each component: those of previous, replaced by the ones
// made now.
func forcedMoves(previous *fluxv1alpha1.FluxStatus, now []fluxv1alpha1.ForcedMove) []fluxv1alpha1.ForcedMove {
	var out []fluxv1alpha1.ForcedMove
	if previous != nil {
		for _, m := range previous.ForcedMoves {
			if !slices.ContainsFunc(now, func(n fluxv1alpha1.ForcedMove) bool { return n.Component == m.Component }) {
				out = append(out, m)
			}
		}
	}
	return append(out, now...)
}
