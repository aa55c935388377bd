// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package releases applies the operator's lifecycle of the embedded Flux and kluctl releases
// (rollout.releases: supported, deprecated, preview, expired). The extension controller and the
// admission build the same Lifecycle; an expired release is replaced as Gardener force-updates an
// expired Kubernetes version (docs/operations/upgrades.md).
package releases

import (
	"fmt"
	"slices"
	"time"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	fluxhelper "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
)

// Lifecycle is the lifecycle of the embedded releases of every component of Specs.
type Lifecycle struct {
	components []Component
}

// Component is the lifecycle of the embedded releases of one component.
type Component struct {
	*Spec
	// Embedded are the releases this extension version delivers.
	Embedded []string
	listed   map[string]config.ReleaseLifecycle
}

// New returns the lifecycle of the embedded releases. A release the configuration does not list is
// supported and does not expire; a listed release that is not embedded is ignored here and refused
// by Validate at the start. The extension builds it once (package cmd) for the controller, the
// metrics and the admission.
func New(cfg config.Releases, embedded validation.SupportedVersions) *Lifecycle {
	l := &Lifecycle{}
	for _, s := range Specs {
		l.components = append(l.components, newComponent(s, s.lifecycles(cfg), s.embedded(embedded)))
	}
	return l
}

func newComponent(s *Spec, listed []config.ReleaseLifecycle, embedded []string) Component {
	c := Component{Spec: s, Embedded: slices.Clone(embedded), listed: make(map[string]config.ReleaseLifecycle, len(listed))}
	for _, r := range listed {
		c.listed[r.Version] = r
	}
	return c
}

// Components returns the lifecycle of each component, in the order of Specs.
func (l *Lifecycle) Components() []Component {
	if l == nil || len(l.components) == 0 {
		// Without a lifecycle every release is supported, none embedded.
		out := make([]Component, 0, len(Specs))
		for _, s := range Specs {
			out = append(out, Component{Spec: s})
		}
		return out
	}
	return l.components
}

// Component returns the lifecycle of the component with key.
func (l *Lifecycle) Component(key string) Component {
	for _, c := range l.Components() {
		if c.Key == key {
			return c
		}
	}
	return Component{Spec: &Spec{Key: key, Name: key}}
}

// Flux returns the lifecycle of the Flux releases.
func (l *Lifecycle) Flux() Component { return l.Component(KeyFlux) }

var releaseClassifications = []config.ReleaseClassification{config.ReleaseSupported, config.ReleaseDeprecated, config.ReleasePreview}

// Validate validates the operator's lifecycle (rollout.releases): each entry an embedded release,
// once, of a known classification, and each expiration one an embedded release can take over
// from. A lifecycle the extension cannot deliver is a mistake (a typo, another extension version's
// configuration) that would silently have no effect or leave shoots on an expired release.
func Validate(cfg config.Releases, embedded validation.SupportedVersions, now time.Time, fldPath *field.Path) field.ErrorList {
	if errs := validateForm(cfg, fldPath); len(errs) > 0 {
		return errs
	}
	var allErrs field.ErrorList
	for _, c := range New(cfg, embedded).Components() {
		for i, r := range c.lifecycles(cfg) {
			idxPath := fldPath.Child(c.Key).Index(i)
			if !slices.Contains(c.Embedded, r.Version) {
				allErrs = append(allErrs, field.NotSupported(idxPath.Child("version"), r.Version, c.Embedded))
				continue
			}
			if r.ExpirationDate == nil {
				continue
			}
			at := r.ExpirationDate.Time
			if at.Before(now) {
				at = now
			}
			if _, move := c.Replacement(r.Version, at); move != nil && move.To == "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("expirationDate"), r.ExpirationDate.UTC().Format(time.RFC3339),
					fmt.Sprintf("no supported release of %s or a later minor replaces %s when it expires; classify a later release as supported or remove the date",
						semver.MajorMinor(r.Version), r.Version)))
			}
		}
	}
	return allErrs
}

// validateForm checks what needs no embedded releases: each entry a release, once, of a known
// classification.
func validateForm(cfg config.Releases, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for _, s := range Specs {
		seen := map[string]bool{}
		for i, release := range s.lifecycles(cfg) {
			idxPath := fldPath.Child(s.Key).Index(i)
			if canonical, ok := fluxhelper.CanonicalVersionSelector(release.Version); !ok || canonical != release.Version || fluxhelper.IsMinorSelector(canonical) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("version"), release.Version, "must be a release with a leading v, e.g. v2.9.5"))
			} else if seen[release.Version] {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("version"), release.Version))
			}
			seen[release.Version] = true
			if !slices.Contains(releaseClassifications, release.Classification) {
				allErrs = append(allErrs, field.NotSupported(idxPath.Child("classification"), release.Classification, releaseClassifications))
			}
		}
	}
	return allErrs
}

// Classification returns the classification of an embedded release.
func (c Component) Classification(release string) config.ReleaseClassification {
	if r, ok := c.listed[release]; ok && r.Classification != "" {
		return r.Classification
	}
	return config.ReleaseSupported
}

// Expiration returns when release expires, and false if it does not.
func (c Component) Expiration(release string) (time.Time, bool) {
	if r, ok := c.listed[release]; ok && r.ExpirationDate != nil {
		return r.ExpirationDate.Time, true
	}
	return time.Time{}, false
}

// Expired tells whether release has expired at now.
func (c Component) Expired(release string, now time.Time) bool {
	date, ok := c.Expiration(release)
	return ok && !now.Before(date)
}

// usable tells whether release is a target of a forced move at now.
func (c Component) usable(release string, now time.Time) bool {
	return c.Classification(release) == config.ReleaseSupported && !c.Expired(release, now)
}

// Usable returns the embedded releases that are supported and not expired at now.
func (c Component) Usable(now time.Time) []string {
	var out []string
	for _, r := range c.Embedded {
		if c.usable(r, now) {
			out = append(out, r)
		}
	}
	return out
}

// Move is the forced move of a shoot off an expired release.
type Move struct {
	// From is the expired release, To the release it is replaced by; empty if no embedded release
	// can replace it.
	From, To string
	// Expired is when From expired.
	Expired time.Time
}

// Reason tells the shoot owner why the release changes.
func (m Move) Reason(component string) string {
	if m.To == "" {
		return fmt.Sprintf("%s %s expired on %s and no supported release of its or a later minor is embedded to replace it",
			component, m.From, m.Expired.UTC().Format(time.DateOnly))
	}
	return fmt.Sprintf("%s %s expired on %s; it is replaced by %s", component, m.From, m.Expired.UTC().Format(time.DateOnly), m.To)
}

// Replacement returns the release that replaces release at now: release itself unless it has
// expired, else the newest supported, unexpired later patch of its minor, else that of the next minor
// which has one. The Move is nil if release has not expired.
func (c Component) Replacement(release string, now time.Time) (string, *Move) {
	if !c.Expired(release, now) {
		return release, nil
	}
	date, _ := c.Expiration(release)
	move := &Move{From: release, Expired: date}
	minor := semver.MajorMinor(release)
	var sameMinor, nextMinor string
	for _, candidate := range c.Embedded {
		if !c.usable(candidate, now) {
			continue
		}
		switch m := semver.MajorMinor(candidate); {
		case m == minor:
			// Never an older patch: Gardener's force-update only moves forward.
			if semver.Compare(candidate, release) <= 0 {
				continue
			}
			if sameMinor == "" || semver.Compare(candidate, sameMinor) > 0 {
				sameMinor = candidate
			}
		case semver.Compare(m, minor) > 0:
			// The lowest later minor, and of it the newest patch.
			if nextMinor == "" || semver.Compare(m, semver.MajorMinor(nextMinor)) < 0 ||
				(m == semver.MajorMinor(nextMinor) && semver.Compare(candidate, nextMinor) > 0) {
				nextMinor = candidate
			}
		}
	}
	switch {
	case sameMinor != "":
		move.To = sameMinor
	case nextMinor != "":
		move.To = nextMinor
	default:
		return release, move
	}
	return move.To, move
}

// Warning returns the admission's warning for a selection that resolves to release at now, empty
// if there is none; field names what the user wrote.
func (c Component) Warning(field, release string, now time.Time) string {
	if date, ok := c.Expiration(release); ok && c.Expired(release, now) {
		msg := fmt.Sprintf("%s selects %s %s, which expired on %s", field, c.Name, release, date.UTC().Format(time.DateOnly))
		if to, _ := c.Replacement(release, now); to != release {
			msg += fmt.Sprintf("; shoots on it are moved to %s in their maintenance time window", to)
		}
		return msg
	}
	switch c.Classification(release) {
	case config.ReleaseDeprecated:
		msg := fmt.Sprintf("%s selects %s %s, which is deprecated", field, c.Name, release)
		if date, ok := c.Expiration(release); ok {
			msg += fmt.Sprintf(" and expires on %s; shoots on it are then moved to a supported release in their maintenance time window", date.UTC().Format(time.DateOnly))
		}
		return msg
	case config.ReleasePreview:
		return fmt.Sprintf("%s selects %s %s, which is a preview release", field, c.Name, release)
	}
	if date, ok := c.Expiration(release); ok && !c.Expired(release, now) {
		return fmt.Sprintf("%s selects %s %s, which expires on %s", field, c.Name, release, date.UTC().Format(time.DateOnly))
	}
	return ""
}
