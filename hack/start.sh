#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Runs the extension on this machine: `make start` (hack/start.sh run) and `make debug`
# (hack/start.sh debug, under dlv). Extra arguments are passed on as flags (make's ARGS).
#
# KUBECONFIG and GARDEN_KUBECONFIG default to the sandbox's (make sandbox-up); a missing garden
# kubeconfig stops with a hint, since the extension cannot start without one. CONFIG names the
# operator configuration; without it the sandbox's dev/config.yaml is used when it exists and the
# seed is the sandbox's, else no --config is passed and the built-in defaults apply.
#
# dev/config.yaml is not passed implicitly to another seed: its host policy lets the extension scan
# loopback addresses on any port, so on a real seed every project could make the extension connect
# to the ports of the machine it runs on. A configuration that allows loopback is only warned about
# when it is named explicitly.
#
# Environment: GO (default go), DLV (default dlv), LDFLAGS (make's version stamp, run only), DLV_ARGS
# (flags of dlv debug, e.g. --headless --listen=:2345 --api-version=2).
set -euo pipefail

mode="${1:-}"
shift || true
case "$mode" in
run | debug) ;;
*)
  echo "usage: $0 run|debug [flag...]" >&2
  exit 2
  ;;
esac

sandbox_seed=dev/seed.kubeconfig
sandbox_config=dev/config.yaml
kubeconfig="${KUBECONFIG:-$sandbox_seed}"
garden_kubeconfig="${GARDEN_KUBECONFIG:-dev/garden.kubeconfig}"

# The sandbox's seed is named by its path from the repository root (make runs here); a KUBECONFIG
# with several files (a:b) never is.
is_sandbox_seed() {
  case "$kubeconfig" in
  "$sandbox_seed" | "./$sandbox_seed" | "$PWD/$sandbox_seed") return 0 ;;
  *) return 1 ;;
  esac
}

# allows_loopback tells whether a configuration's host policy lets the scan reach loopback:
# 127.0.0.0/8 or ::1 (the sandbox's), or every address.
allows_loopback() {
  grep -Eq "(^|[^0-9.])127\.[0-9.]+/[0-9]+|::1/128|0\.0\.0\.0/0|::/0" -- "$1"
}

config="${CONFIG:-}"
if [ -z "$config" ] && [ -f "$sandbox_config" ]; then
  if is_sandbox_seed; then
    config="$sandbox_config"
  else
    echo "WARNING: not passing $sandbox_config, the sandbox's configuration, to the seed of $kubeconfig;" \
      "the built-in defaults apply. Set CONFIG to pass a configuration." >&2
  fi
fi
if [ -n "$config" ] && ! is_sandbox_seed && allows_loopback "$config"; then
  echo "WARNING: $config allows host key scans of loopback addresses, and the seed of $kubeconfig is not the sandbox's:" \
    "every project of that seed can make this process connect to ports of this machine." >&2
fi

if [ ! -f "$garden_kubeconfig" ]; then
  echo "$garden_kubeconfig does not exist: set GARDEN_KUBECONFIG to a kubeconfig of the garden with the extension's garden identity" \
    "(docs/development/debugging.md), or run make sandbox-up for the sandbox." >&2
  exit 1
fi

if is_sandbox_seed; then
  # The sandbox's Extensions carry no operation annotation: nobody plays gardenlet there.
  args=(--ignore-operation-annotation=true --heartbeat-namespace=garden)
else
  # A real seed: reconcile only the Extensions annotated with gardener.cloud/operation (all of
  # the seed's would be reconciled at once otherwise), and write no heartbeat Lease: the only one
  # gardenlet reads is in the extension's namespace, and one in the seed's garden namespace would
  # be left behind.
  args=(--ignore-operation-annotation=false --disable-controllers=heartbeat)
  # The health check reaches a shoot with the kubeconfig gardenlet keeps in the shoot's namespace:
  # gardener's library prefers gardener-internal, whose API server address only resolves inside the
  # seed. external makes it take the Secret gardener, with the address reachable from outside.
  export GARDENER_SHOOT_CLIENT="${GARDENER_SHOOT_CLIENT:-external}"
fi
args+=(
  --leader-election=false
  "--kubeconfig=$kubeconfig"
  "--garden-kubeconfig=$garden_kubeconfig"
)
if [ -n "$config" ]; then
  args+=("--config=$config")
fi
args+=(--metrics-bind-address=:18080 --health-bind-address=:18081 --log-format=text "$@")

pkg=./cmd/gardener-extension-shoot-flux
case "$mode" in
run) exec "${GO:-go}" run -ldflags "${LDFLAGS:-}" "$pkg" "${args[@]}" ;;
# Without LDFLAGS: their -s -w would strip the symbols dlv needs.
debug)
  # shellcheck disable=SC2086 # DLV_ARGS are several flags
  # Without -trimpath (the Makefile's GOFLAGS): dlv finds the sources by their full paths.
  GOFLAGS=-mod=mod exec "${DLV:-dlv}" debug ${DLV_ARGS:-} "$pkg" -- "${args[@]}"
  ;;
esac
