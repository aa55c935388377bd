#!/usr/bin/env bash
# Shared preamble of the hack scripts: strict mode, the toolchain settings the Makefile uses, the
# repository root and the cache outside the repository. Source it first:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set -o errexit
set -o nounset
set -o pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS=-mod=mod
CACHE_ROOT="${SHOOT_FLUX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoot-flux}"

# module_dir <module> prints the module cache directory of the version go.mod requires.
# `go list -m -f '{{.Dir}}'` prints an empty Dir while the module is not downloaded yet (a fresh
# machine), so the module is downloaded first; that is a no-op on a warm cache.
module_dir() {
  local dir
  dir="$(cd "${REPO_ROOT}" && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -n "${dir}" && -d "${dir}" ]] || { echo "cannot download module $1" >&2; return 1; }
  echo "${dir}"
}

# module_version <module> prints the version go.mod requires.
module_version() {
  (cd "${REPO_ROOT}" && go list -m -f '{{.Version}}' "$1")
}
