// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package rollout decides when a change of a shoot's Flux or kluctl release reaches the shoot: at
// once when the shoot's owner or project admin made it, else in the shoot's maintenance time window
// as Gardener's own auto-updates (docs/development/architecture.md#release-selection,
// docs/usage/versions.md).
package rollout

import (
	"fmt"
	"slices"
	"time"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	gardenerutils "github.com/gardener/gardener/pkg/utils/gardener"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
)

// Change is the release of one component (Flux or kluctl) a reconcile would install.
type Change struct {
	// Component names it for the reason, e.g. "Flux".
	Component string
	// Installed is the release the shoot runs, empty if none.
	Installed string
	// Selected is the release the configuration selects now.
	Selected string
	// Requested and PreviouslyRequested are the selectors the tenants' layers wrote now and at
	// the installation of Installed (empty for the operator's default). PreviouslyKnown is false
	// when the status of the installation does not tell (an earlier extension version).
	Requested, PreviouslyRequested string
	PreviouslyKnown                bool
	// Embedded are the releases this extension version delivers.
	Embedded []string
	// Forced is the reason of a move off an expired release (releases.Move), empty if Selected
	// replaces no expired release.
	Forced string
}

// Decision is what a reconcile installs.
type Decision struct {
	// Release is the release to install.
	Release string
	// Pending is the selected release that waits for the maintenance window; empty if none.
	Pending string
	// Reason tells why Pending waits.
	Reason string
}

// Decide applies the rule to one component's change for a shoot at now.
func Decide(c Change, window config.RolloutWindow, shoot *gardencorev1beta1.Shoot, now time.Time) Decision {
	apply := Decision{Release: c.Selected}
	switch {
	case c.Installed == "" || c.Installed == c.Selected:
		return apply
	case c.PreviouslyKnown && c.Requested != c.PreviouslyRequested:
		// The owner or the project admin changed the selector.
		return apply
	case !slices.Contains(c.Embedded, c.Installed):
		// This extension version cannot deliver the installed release any more.
		return apply
	case window == config.RolloutWindowImmediate || InWindow(shoot, now):
		return apply
	}
	reason := fmt.Sprintf("%s %s is a newer release of %q, which the shoot selects", c.Component, c.Selected, c.Requested)
	switch {
	case c.Forced != "":
		reason = c.Forced
	case c.Requested == "":
		reason = fmt.Sprintf("%s %s is what the operator's default version selects now", c.Component, c.Selected)
	}
	return Decision{Release: c.Installed, Pending: c.Selected, Reason: reason + "; it is installed in the shoot's maintenance time window"}
}

// InWindow tells whether a change nobody asked for may be applied to the shoot at now: in its
// effective maintenance time window, or while it is maintained on request (the maintain
// operation).
func InWindow(shoot *gardencorev1beta1.Shoot, now time.Time) bool {
	if shoot == nil {
		return true
	}
	if slices.Contains(v1beta1helper.GetShootGardenerOperations(shoot.Annotations), v1beta1constants.ShootOperationMaintain) {
		return true
	}
	return gardenerutils.EffectiveShootMaintenanceTimeWindow(shoot).Contains(now)
}

// NextWindow returns the begin of the shoot's next effective maintenance time window after now,
// or now if it is in one.
func NextWindow(shoot *gardencorev1beta1.Shoot, now time.Time) time.Time {
	if InWindow(shoot, now) {
		return now
	}
	begin := gardenerutils.EffectiveShootMaintenanceTimeWindow(shoot).AdjustedBegin(now)
	if begin.Before(now) {
		begin = begin.AddDate(0, 0, 1)
	}
	return begin
}
