#!/usr/bin/env bash
# Builds the Flux source-controller binary from the Go module proxy into a cache outside the
# repository, for integration tests that run it against an envtest API server.
#
# Release binaries and images live on GitHub/ghcr.io, which this project cannot reach, and
# `go install` refuses the module because its go.mod replaces ./api with a local path. So we
# write a throw-away module that requires source-controller, copies its non-local replaces and
# maps ./api to the published github.com/fluxcd/source-controller/api of the same version.
#
# Prints the path of the binary on stdout; the source.toolkit.fluxcd.io CRDs of the same version
# are copied to the directory "crd" next to it, for test API servers.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SOURCE_CONTROLLER_VERSION=${SOURCE_CONTROLLER_VERSION:-v1.9.6}
# v1.9.6 asks for github.com/fluxcd/pkg/artifact v0.18.3, which the module proxy refuses (403);
# v0.18.1 has the same API as far as source-controller uses it.
ARTIFACT_VERSION=${ARTIFACT_VERSION:-v0.18.1}
dest="$CACHE_ROOT/source-controller/$SOURCE_CONTROLLER_VERSION"
bin="$dest/source-controller"
stamp="$dest/source-controller.version"
crd_dir="$dest/crd"
mkdir -p "$dest"

log() { echo "build-source-controller: $*" >&2; }

# source-controller has no --version flag, so a stamp written after a successful build tells
# which version the binary is.
up_to_date() {
  [[ -x "$bin" && -f "$stamp" ]] || return 1
  [[ "$(cat "$stamp")" == "$SOURCE_CONTROLLER_VERSION" ]] || return 1
  timeout 20 "$bin" --help >/dev/null 2>&1
}

crds_present() {
  compgen -G "$crd_dir/*.yaml" >/dev/null
}

exec 9>"$dest/.lock"
flock 9

if up_to_date && crds_present; then
  echo "$bin"
  exit 0
fi

mod="github.com/fluxcd/source-controller"
mod_dir=$(go mod download -json "$mod@$SOURCE_CONTROLLER_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -n "$mod_dir" ]] || { log "cannot download $mod@$SOURCE_CONTROLLER_VERSION"; exit 1; }

if ! crds_present; then
  # Files in the module cache are read-only; install gives the copies ordinary modes.
  rm -rf "$crd_dir.tmp"
  mkdir -p "$crd_dir.tmp"
  install -m 0644 "$mod_dir"/config/crd/bases/*.yaml "$crd_dir.tmp/"
  rm -rf "$crd_dir"
  mv "$crd_dir.tmp" "$crd_dir"
fi

if up_to_date; then
  echo "$bin"
  exit 0
fi
rm -f "$stamp"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Prints the replace directives of a go.mod whose target is a module version, skipping the ones
# that point at local directories (a local target has no version after "=>").
remote_replaces() {
  awk '
    /^replace[ \t]*\($/ { block = 1; next }
    block && /^\)/       { block = 0; next }
    {
      line = $0
      sub(/\/\/.*/, "", line)
      if (block) { spec = line }
      else if (line ~ /^replace[ \t]/) { spec = line; sub(/^replace[ \t]+/, "", spec) }
      else next
      n = split(spec, sides, "=>")
      if (n != 2) next
      m = split(sides[2], target, " ")
      if (m == 2) { gsub(/^[ \t]+|[ \t]+$/, "", sides[1]); print "\t" sides[1] " => " target[1] " " target[2] }
    }
  ' "$1"
}

log "building source-controller $SOURCE_CONTROLLER_VERSION (cold: ~5 min on 2 cores)"
{
  echo "module sourcecontrollerbuild"
  echo "go 1.26"
  echo "require $mod $SOURCE_CONTROLLER_VERSION"
  echo "replace ("
  remote_replaces "$mod_dir/go.mod" | grep -v "^	github.com/fluxcd/pkg/artifact " || true
  echo "	$mod/api => $mod/api $SOURCE_CONTROLLER_VERSION"
  echo "	github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact $ARTIFACT_VERSION"
  echo ")"
} >"$work/go.mod"
(
  cd "$work"
  go get "$mod@$SOURCE_CONTROLLER_VERSION" >&2
  go build -trimpath -ldflags "-s -w" -o "$bin" "$mod" >&2
)

timeout 20 "$bin" --help >/dev/null 2>&1 || { log "built binary does not start: $bin --help failed"; exit 1; }
echo "$SOURCE_CONTROLLER_VERSION" >"$stamp"
echo "$bin"
