#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds the kluctl controller of every embedded kluctl release (pkg/manifests/kluctl/<version>) into
# a cache outside the repository, for the sandbox's kubelet stand-in, and prints them as the value of
# KLUCTL_CONTROLLERS: one "kluctl:<version>=<binary>" per line, keyed like the image the delivered
# Deployment runs.
#
# kluctl cannot be built as a module dependency: its go.mod replaces github.com/kluctl/kluctl/lib
# with ./lib, and two go-git pseudo-versions it pins are refused by the module proxy reachable here.
# So it is built from its source tree, taken from
#   - KLUCTL_SOURCE, when set: whitespace-separated .tar.gz files or directories of the layout of
#     ../shared/kluctl/kluctl-<version>-src.tar.gz (a directory kluctl-<version>/ holding kluctl/,
#     go-git/ and go-billy/, with kluctl/go.mod replacing go-git and go-billy with those
#     directories); a directory may also be kluctl-<version>/ itself. The entry whose name carries
#     the version is used;
#   - else a shallow clone of the kluctl repository at the version's tag (machines that reach
#     GitHub; its go-git pseudo-versions then come from the module proxy). Untested here.
#
# The binary is what the image runs (`kluctl controller run`); it is checked with `kluctl version`.
# Cold: about 11 CPU-minutes (6-8 minutes on two idle cores).
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KLUCTL_REPOSITORY=${KLUCTL_REPOSITORY:-https://github.com/kluctl/kluctl.git}

log() { echo "build-kluctl-controller: $*" >&2; }

# source_of <version> prints the KLUCTL_SOURCE entry for the version, or nothing.
source_of() {
  local version=$1 entry
  for entry in ${KLUCTL_SOURCE:-}; do
    case "$(basename "$entry")" in
      *"$version"*) echo "$entry"; return 0 ;;
    esac
    if [[ -d "$entry/kluctl-$version" ]]; then
      echo "$entry/kluctl-$version"
      return 0
    fi
  done
}

# unpack <entry> <version> <work> prints the kluctl/ directory of the source tree of the version.
unpack() {
  local entry=$1 version=$2 work=$3
  if [[ -f "$entry" ]]; then
    tar -xzf "$entry" -C "$work" || { log "cannot unpack $entry"; return 1; }
    entry="$work/kluctl-$version"
  fi
  [[ -f "$entry/kluctl/go.mod" ]] || { log "$entry has no kluctl/go.mod: not the layout of kluctl-$version-src.tar.gz"; return 1; }
  echo "$entry/kluctl"
}

# build <version> builds the controller of one release and prints its binary.
build() {
  local version=$1 dest bin entry src work started
  dest="$CACHE_ROOT/kluctl-controller/$version"
  bin="$dest/kluctl"
  mkdir -p "$dest"
  exec 9>"$dest/.lock"
  flock 9
  if [[ -x "$bin" ]] && prints "^${version#v}\$" "$bin" version; then
    echo "$bin"
    return 0
  fi

  work=$(mktemp -d)
  # shellcheck disable=SC2064 # the directory of this call
  trap "rm -rf '$work'" RETURN
  entry=$(source_of "$version")
  if [[ -n "$entry" ]]; then
    log "building kluctl $version from $entry (cold: ~7 min on 2 idle cores, 11 CPU-minutes)"
    src=$(unpack "$entry" "$version" "$work") || return 1
  else
    log "KLUCTL_SOURCE names no source of $version: cloning $KLUCTL_REPOSITORY at $version (cold: ~7 min on 2 idle cores)"
    git clone --quiet --depth 1 --branch "$version" "$KLUCTL_REPOSITORY" "$work/kluctl" >&2 ||
      { log "cannot clone $KLUCTL_REPOSITORY at $version; set KLUCTL_SOURCE to a source tarball"; return 1; }
    src="$work/kluctl"
  fi
  started=$(date +%s)
  (
    cd "$src"
    align_requirements
    go build -trimpath -ldflags "-s -w -X main.version=${version#v}" -o "$bin.tmp" ./cmd >&2
  ) || { log "building kluctl $version failed"; return 1; }
  prints "^${version#v}\$" "$bin.tmp" version || { log "built binary does not report version ${version#v}: $bin.tmp version"; return 1; }
  mv "$bin.tmp" "$bin"
  log "built kluctl $version in $(($(date +%s) - started))s"
  echo "$bin"
}

embedded=$(find "$REPO_ROOT/pkg/manifests/kluctl" -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' | sort -V)
[[ -n "$embedded" ]] || { log "no embedded kluctl release under pkg/manifests/kluctl"; exit 1; }
for version in $embedded; do
  bin=$(build "$version")
  echo "kluctl:$version=$bin"
done
