#!/usr/bin/env bash
# Shared preamble of the hack scripts: strict mode, the toolchain settings the Makefile uses, the
# repository root and the cache outside the repository. Source it first:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set -o errexit
set -o nounset
set -o pipefail
# A failing command inside $(...) fails the function or script around it too.
shopt -s inherit_errexit

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
# As the Makefile sets them (see there for -trimpath).
export GOFLAGS="-mod=mod -trimpath"
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

# prints <pattern> <command...> succeeds when the command succeeds and a line of its output (stdout
# and stderr) matches the extended regular expression <pattern>. The output is read whole before it
# is matched: `command | grep -q` under pipefail fails at random, because grep exits at the first
# match and the command, still writing, dies of SIGPIPE (how a healthy etcd failed its version check).
prints() {
  local pattern=$1 out
  shift
  out=$("$@" 2>&1) || return 1
  grep -qE -- "${pattern}" <<<"${out}"
}
