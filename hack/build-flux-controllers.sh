#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds the Flux controllers the sandbox's kubelet stand-in runs, for every embedded Flux release,
# with hack/build-flux-controller.sh, and prints them as the value of FLUX_CONTROLLERS for the
# integration tests and the demo: one "<component>:<version>=<binary>" per line, the version being
# the image tag of the embedded manifests (the directory build-flux-controller.sh caches it in).
#
# Usage: hack/build-flux-controllers.sh [component...]; the components default to source-,
# kustomize- and helm-controller. FLUX_VERSIONS (space-separated releases, e.g. "v2.9.5", or
# "newest") limits the releases; by default every one under pkg/manifests/flux.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

components=("$@")
((${#components[@]})) || components=(source-controller kustomize-controller helm-controller)
embedded=$(find "$REPO_ROOT/pkg/manifests/flux" -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' | sort -V)
case "${FLUX_VERSIONS:-}" in
  "") read -r -d '' -a releases <<<"$embedded" || true ;;
  newest) releases=("$(tail -n 1 <<<"$embedded")") ;;
  *) read -r -a releases <<<"$FLUX_VERSIONS" ;;
esac
((${#releases[@]})) || { echo "build-flux-controllers: no embedded Flux release under pkg/manifests/flux" >&2; exit 1; }

for release in "${releases[@]}"; do
  for component in "${components[@]}"; do
    bin=$(FLUX_VERSION=$release "$REPO_ROOT/hack/build-flux-controller.sh" "$component")
    echo "$component:$(basename "$(dirname "$bin")")=$bin"
  done
done
