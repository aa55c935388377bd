// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// versionSelector matches a release (v2.9.5: exactly it) or a minor (v2.9, v2.9.x: its newest
// embedded patch, so a newer extension moves such shoots without a configuration change); the "v"
// is optional, as in the original extension's ConfigMaps. There is no selector for a major: a
// Flux minor upgrade can drop API versions, so it is never a side effect of a rollout.
var versionSelector = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*|x))?$`)

// CanonicalVersionSelector returns the canonical form of a version selector: vX.Y.Z for a release,
// vX.Y for a minor. ok is false if s is no selector.
func CanonicalVersionSelector(s string) (canonical string, ok bool) {
	m := versionSelector.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	if m[3] == "" || m[3] == "x" {
		return "v" + m[1] + "." + m[2], true
	}
	return "v" + m[1] + "." + m[2] + "." + m[3], true
}

// IsMinorSelector tells whether s selects a minor rather than a release.
func IsMinorSelector(s string) bool {
	canonical, ok := CanonicalVersionSelector(s)
	return ok && strings.Count(canonical, ".") == 1
}

// ResolveVersion returns the release of releases (canonical vX.Y.Z, in any order) that selector
// chooses. This is the only place that turns what users and operators write into a release: the
// controller and the admission webhook both validate and resolve through it.
func ResolveVersion(selector string, releases []string) (string, error) {
	canonical, ok := CanonicalVersionSelector(selector)
	if !ok {
		return "", fmt.Errorf("version %q is neither a release (e.g. v2.9.5) nor a minor (e.g. v2.9, 2.9.x); supported: %s",
			selector, strings.Join(VersionSelectors(releases), ", "))
	}
	if !IsMinorSelector(canonical) {
		if slices.Contains(releases, canonical) {
			return canonical, nil
		}
		return "", fmt.Errorf("version %q is not embedded; supported: %s", selector, strings.Join(VersionSelectors(releases), ", "))
	}
	newest := ""
	for _, release := range releases {
		if semver.MajorMinor(release) == canonical && (newest == "" || semver.Compare(release, newest) > 0) {
			newest = release
		}
	}
	if newest == "" {
		return "", fmt.Errorf("no embedded release of minor %q; supported: %s", selector, strings.Join(VersionSelectors(releases), ", "))
	}
	return newest, nil
}

// VersionSelectors returns the canonical selectors that choose one of releases: every release and
// its minor, in ascending order with each minor before its releases.
func VersionSelectors(releases []string) []string {
	var selectors []string
	for _, release := range releases {
		if canonical, ok := CanonicalVersionSelector(release); ok && canonical == release {
			selectors = append(selectors, release)
			if minor := semver.MajorMinor(release); !slices.Contains(selectors, minor) {
				selectors = append(selectors, minor)
			}
		}
	}
	// semver reads the minor v2.9 as v2.9.0, so a minor is put before its releases explicitly.
	slices.SortFunc(selectors, func(a, b string) int {
		if c := semver.Compare(semver.MajorMinor(a), semver.MajorMinor(b)); c != 0 {
			return c
		}
		if IsMinorSelector(a) != IsMinorSelector(b) {
			if IsMinorSelector(a) {
				return -1
			}
			return 1
		}
		return semver.Compare(a, b)
	})
	return selectors
}
