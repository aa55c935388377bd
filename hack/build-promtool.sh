#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds Prometheus' promtool from the Go module proxy into a cache outside the repository, for the
# alerting and recording rule tests (test/promrules), which run `promtool test rules` and
# `promtool check rules` as gardener's own rule tests do (pkg/component/test.PrometheusRule).
#
# Release binaries live on GitHub, which this project cannot reach. The build leaves out every
# service discovery (build tag remove_all_sd): promtool's rule tests need none, and they would pull
# the clients of every cloud. The requirements the repository shares are aligned to its go.mod, so
# a cold build cache compiles k8s.io/* and the like once for both.
#
# Prints the path of the binary on stdout.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
dest="$CACHE_ROOT/promtool/$PROMETHEUS_VERSION"
mkdir -p "$dest"
log() { echo "build-promtool: $*" >&2; }

exec 9>"$dest/.lock"
flock 9

# The stamp names the version built: promtool built this way reports no version of its own.
if [[ -x "$dest/promtool" && "$(cat "$dest/stamp" 2>/dev/null)" == "$PROMETHEUS_VERSION" ]]; then
  echo "$dest/promtool"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
log "building promtool of github.com/prometheus/prometheus $PROMETHEUS_VERSION"
(
  cd "$work"
  printf 'module promtoolbuild\ngo 1.26\n' >go.mod
  go get "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" >&2
  align_requirements
  go build -trimpath -tags remove_all_sd -ldflags "-s -w" -o "$dest/promtool.new" github.com/prometheus/prometheus/cmd/promtool >&2
)
"$dest/promtool.new" --help >/dev/null
mv "$dest/promtool.new" "$dest/promtool"
echo "$PROMETHEUS_VERSION" >"$dest/stamp"
log "built promtool $PROMETHEUS_VERSION in $(($(date +%s) - started))s"
echo "$dest/promtool"
