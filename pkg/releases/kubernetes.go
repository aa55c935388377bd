// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package releases

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// KubernetesRange is the range of Kubernetes versions a Flux minor supports, as Flux's release
// notes state it. The bounds are inclusive; Max is a minor, so every patch of it is in range.
type KubernetesRange struct {
	// Min is the lowest supported version, a minor (v1.32) or a patch (v1.34.1).
	Min string
	// Max is the highest supported minor.
	Max string
}

// fluxKubernetes is the one table of the Kubernetes versions each Flux minor supports
// (fluxcd.io/flux/installation/#prerequisites and the release notes): every embedded Flux release
// must have an entry, which the package's specs check. v2.9.0's notes raise its floor to 1.34.1.
var fluxKubernetes = map[string]KubernetesRange{
	"v2.7": {Min: "v1.32", Max: "v1.34"},
	"v2.8": {Min: "v1.33", Max: "v1.35"},
	"v2.9": {Min: "v1.34.1", Max: "v1.36"},
}

// FluxKubernetesRange returns the Kubernetes range of a Flux release; false if the table has none.
func FluxKubernetesRange(release string) (KubernetesRange, bool) {
	r, ok := fluxKubernetes[semver.MajorMinor(canonical(release))]
	return r, ok
}

// Contains tells whether the Kubernetes version (1.33.2 or v1.33.2) is in the range. A version that
// does not parse is not.
func (r KubernetesRange) Contains(kubernetesVersion string) bool {
	v := canonical(kubernetesVersion)
	if !semver.IsValid(v) {
		return false
	}
	return semver.Compare(v, canonical(r.Min)) >= 0 && semver.Compare(semver.MajorMinor(v), canonical(r.Max)) <= 0
}

// String is the range as users read it, e.g. 1.34.1 to 1.36.
func (r KubernetesRange) String() string {
	return strings.TrimPrefix(r.Min, "v") + " to " + strings.TrimPrefix(r.Max, "v")
}

// FluxSupportsKubernetes tells whether a Flux release supports the Kubernetes version; a release
// without an entry supports none, so that a new embedded release without one is never installed
// on a guess (the specs catch the missing entry first).
func FluxSupportsKubernetes(release, kubernetesVersion string) bool {
	r, ok := FluxKubernetesRange(release)
	return ok && r.Contains(kubernetesVersion)
}

// NewestForKubernetes returns the newest of releases that supports the Kubernetes version; empty
// if none does.
func NewestForKubernetes(releases []string, kubernetesVersion string) string {
	var newest string
	for _, r := range releases {
		if FluxSupportsKubernetes(r, kubernetesVersion) && (newest == "" || semver.Compare(canonical(r), canonical(newest)) > 0) {
			newest = r
		}
	}
	return newest
}

// KubernetesRanges describes the ranges of releases for messages, e.g.
// "v2.7.5 supports Kubernetes 1.32 to 1.34, v2.9.5 1.34.1 to 1.36".
func KubernetesRanges(releases []string) string {
	sorted := slices.Clone(releases)
	slices.SortFunc(sorted, func(a, b string) int { return semver.Compare(canonical(a), canonical(b)) })
	parts := make([]string, 0, len(sorted))
	for _, rel := range sorted {
		if r, ok := FluxKubernetesRange(rel); ok {
			parts = append(parts, fmt.Sprintf("%s: Kubernetes %s", rel, r))
		}
	}
	return strings.Join(parts, ", ")
}

// KubernetesWarning tells the shoot owner that the Flux release does not support the shoot's
// Kubernetes version, and the fix; empty if it does. subject comes before the release, e.g.
// "Flux" or "selects Flux".
func KubernetesWarning(subject, release, kubernetesVersion string, embedded []string) string {
	if FluxSupportsKubernetes(release, kubernetesVersion) {
		return ""
	}
	msg := fmt.Sprintf("%s %s, which has no Kubernetes range, not the shoot's %s", subject, release, strings.TrimPrefix(kubernetesVersion, "v"))
	if r, ok := FluxKubernetesRange(release); ok {
		msg = fmt.Sprintf("%s %s, which supports Kubernetes %s, not the shoot's %s", subject, release, r, strings.TrimPrefix(kubernetesVersion, "v"))
	}
	if fit := NewestForKubernetes(embedded, kubernetesVersion); fit != "" {
		return msg + fmt.Sprintf("; select flux.version %s, which supports it", semver.MajorMinor(fit))
	}
	return msg + "; no embedded Flux release supports it (" + KubernetesRanges(embedded) + "): change the shoot's Kubernetes version"
}

func canonical(v string) string {
	if v != "" && !strings.HasPrefix(v, "v") {
		return "v" + v
	}
	return v
}
