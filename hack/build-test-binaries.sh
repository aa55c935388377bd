#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds everything the integration tests, the demo and the bench run besides the extension, into
# the cache outside the repository: kube-apiserver and etcd (hack/build-envtest.sh), the Flux
# controllers (hack/build-flux-controllers.sh), the kluctl controller
# (hack/build-kluctl-controller.sh) and promtool for the rule tests (hack/build-promtool.sh). The
# builds run side by side: each has stretches in which
# it downloads modules or links on one core, which the others fill. On a warm cache it only checks
# the binaries (a few seconds).
#
# Each build logs to a file; a failed one prints its log and fails the script, naming the build.
# Prints how long each took, the figures of the cold-CI breakdown.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

log() { echo "build-test-binaries: $*" >&2; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

declare -A pids started
for script in build-envtest.sh build-flux-controllers.sh build-kluctl-controller.sh build-promtool.sh; do
  started[$script]=$(date +%s)
  "$REPO_ROOT/hack/$script" >"$logs/$script.out" 2>"$logs/$script.log" &
  pids[$script]=$!
done

failed=()
for script in build-envtest.sh build-flux-controllers.sh build-kluctl-controller.sh build-promtool.sh; do
  if wait "${pids[$script]}"; then
    log "$script done after $(($(date +%s) - started[$script]))s"
    # The per-binary figures ("built ... in Ns") of the breakdown.
    sed -n 's/^\(build-[a-z-]*\( [a-z-]*\)\{0,1\}: built .*\)$/  \1/p' "$logs/$script.log" >&2
  else
    failed+=("$script")
    log "$script FAILED after $(($(date +%s) - started[$script]))s; its output:"
    sed 's/^/  /' "$logs/$script.log" >&2
  fi
done
((${#failed[@]} == 0)) || { log "failed: ${failed[*]}"; exit 1; }
