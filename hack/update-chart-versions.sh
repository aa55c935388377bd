#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Writes the content of VERSION into every Chart.yaml below charts/: the chart's version (the tag
# `helm push` gives the OCI artifact, and the version gardener's registration script packages),
# its appVersion (the image tag the charts deploy when image.tag is empty) and the versions of the
# admission chart's dependencies. VERSION is the only place a release number is written; `make
# push` and the generated examples take it from there, and check-generate fails when a Chart.yaml
# is stale.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

VERSION="$(tr -d '[:space:]' <VERSION)"

while IFS= read -r -d '' chart; do
  sed -i -E \
    -e "s/^(  )?version: .*/\1version: ${VERSION}/" \
    -e "s/^appVersion: .*/appVersion: ${VERSION}/" \
    "${chart}"
  grep -q '^appVersion: ' "${chart}" || {
    echo "update-chart-versions: ${chart} has no appVersion line" >&2
    exit 1
  }
done < <(find charts -name Chart.yaml -print0)
