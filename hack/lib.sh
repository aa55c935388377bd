#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

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

# align_requirements [--exclude <regex>] [<module directory>...] raises, in the go.mod of the
# current directory (the module of a test binary such as kube-apiserver or the kluctl controller),
# every requirement that the go.mod of a module directory also has to the highest version among
# them; the directories default to this repository. A package both builds import, e.g. of
# k8s.io/client-go or google.golang.org/grpc, is then the same source with the same dependencies in
# both, and the build cache compiles it once: on a cold machine kube-apiserver and kluctl share most
# of their dependencies with the extension's test binaries. A requirement the module has at a
# higher version stays; a module it does not require is not added; modules matching the regex stay
# as they are. The directories' go.sum files vouch for the raised versions.
align_requirements() {
  local exclude='^$'
  if [[ "${1:-}" == "--exclude" ]]; then
    exclude=$2
    shift 2
  fi
  local -a refs=("$@")
  ((${#refs[@]})) || refs=("${REPO_ROOT}")
  local -A highest=()
  local path version theirs ref args=()
  for ref in "${refs[@]}"; do
    while read -r path version; do
      [[ "${path}" =~ ${exclude} ]] && continue
      if [[ -z "${highest[$path]:-}" || "$(printf '%s\n%s\n' "${highest[$path]}" "${version}" | sort -V | tail -n 1)" == "${version}" ]]; then
        highest[$path]=${version}
      fi
    done < <(go mod edit -print "${ref}/go.mod" | awk '
      /^require \(/ { block = 1; next }
      block && /^\)/ { block = 0; next }
      block && NF >= 2 { print $1, $2 }
      /^require [^(]/ { print $2, $3 }')
  done
  while read -r path theirs; do
    version=${highest[$path]:-}
    [[ -n "${version}" && "${version}" != "${theirs}" ]] || continue
    if [[ "$(printf '%s\n%s\n' "${theirs}" "${version}" | sort -V | tail -n 1)" == "${version}" ]]; then
      args+=("-require=${path}@${version}")
    fi
  done < <(go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all)
  if ((${#args[@]})); then
    go mod edit "${args[@]}"
  fi
  touch go.sum
  for ref in "${refs[@]}"; do
    if [[ -f "${ref}/go.sum" ]]; then
      sort -u -o go.sum go.sum "${ref}/go.sum"
    fi
  done
}
