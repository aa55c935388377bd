#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds a Flux controller binary from the Go module proxy into a cache outside the repository,
# for integration tests that run it against envtest API servers.
#
# Usage: hack/build-flux-controller.sh <component>, e.g. source-controller, kustomize-controller,
# helm-controller.
#
# The version is the one the embedded manifests of a Flux release pin (the image tag in
# pkg/manifests/flux/<release>/<component>.yaml), so the tests run the controller the extension
# delivers. The release is FLUX_VERSION, by default the newest embedded one.
# <COMPONENT>_VERSION (e.g. KUSTOMIZE_CONTROLLER_VERSION=v1.9.4) overrides the controller version.
#
# Release binaries and images live on GitHub/ghcr.io, which this project cannot reach, and
# `go install` refuses the modules because their go.mod replaces ./api with a local path. So we
# write a throw-away module that requires the controller, copies its non-local replaces and maps
# the local ./api to the published github.com/fluxcd/<component>/api of the same version.
#
# A controller version the module proxy refuses (403) is built from the served version that stands
# in for it in the embedded manifests (hack/generate-flux-manifests/substitutes.txt, the list the
# manifest generator reads), so the binary runs the code whose config/ the extension delivers. The
# binary is cached under the refused version, which is the image tag it stands for, and its stamp
# names the stand-in.
#
# notification-controller stays unbuilt: the kubelet stand-in of the sandbox does not run it.
#
# Prints the path of the binary on stdout; the controller's CRDs of the version built are copied to
# the directory "crd" next to it, for test API servers.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

component=${1:-}
log() { echo "build-flux-controller${component:+ $component}: $*" >&2; }
[[ "$component" =~ ^[a-z]+-controller$ ]] || { log "usage: $0 <component>, e.g. source-controller"; exit 2; }

# Dependency versions the module proxy refuses (403), each replaced by the closest served version
# with the same API. A replace with a version on its left applies only where the build selects
# exactly that version, so a controller release that moves on is not pinned back.
#   github.com/fluxcd/pkg/artifact v0.18.3: source-controller v1.9.5 and v1.9.6 ask for it; v0.18.2
#   is refused too, and v0.18.1 has the same API as far as source-controller uses it.
refused_replacements=(
  "github.com/fluxcd/pkg/artifact v0.18.3 => github.com/fluxcd/pkg/artifact v0.18.1"
)

flux_version=${FLUX_VERSION:-$(find "$REPO_ROOT/pkg/manifests/flux" -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' | sort -V | tail -n 1)}
[[ -n "$flux_version" ]] || { log "no embedded Flux release under pkg/manifests/flux"; exit 1; }
manifest="$REPO_ROOT/pkg/manifests/flux/$flux_version/$component.yaml"
[[ -f "$manifest" ]] || { log "Flux $flux_version has no component $component ($manifest)"; exit 1; }
pinned=$(sed -n "s#^ *image: [^ ]*/$component:\(v[^ ]*\)\$#\1#p" "$manifest")
[[ -n "$pinned" ]] || { log "cannot read the image tag of $component from $manifest"; exit 1; }
version_var=$(tr 'a-z-' 'A-Z_' <<<"$component")_VERSION
version=${!version_var:-$pinned}

mod="github.com/fluxcd/$component"
# The version whose code is built: the stand-in of a refused version, else the version itself.
substitutes="$REPO_ROOT/hack/generate-flux-manifests/substitutes.txt"
build_version=$(awk -v key="$mod@$version" '$1 == key { print $2 }' "$substitutes")
build_version=${build_version:-$version}

dest="$CACHE_ROOT/$component/$version"
bin="$dest/$component"
stamp="$dest/$component.version"
crd_dir="$dest/crd"
mkdir -p "$dest"

# The controllers have no --version flag, so a stamp written after a successful build tells which
# version the binary is, with which substitutions it was built, and which version stands in for it.
stamp_content="$version ${refused_replacements[*]}"
if [[ "$build_version" != "$version" ]]; then
  stamp_content+=" (built from $mod@$build_version)"
fi

up_to_date() {
  [[ -x "$bin" && -f "$stamp" ]] || return 1
  [[ "$(cat "$stamp")" == "$stamp_content" ]] || return 1
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

if ! download=$(go mod download -json "$mod@$build_version" 2>&1); then
  log "cannot download $mod@$build_version: $(sed -n 's/^\t"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$download")"
  exit 1
fi
mod_dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$download")
[[ -n "$mod_dir" ]] || { log "cannot download $mod@$build_version: no module directory in $download"; exit 1; }

# The module directories of the controllers of the same release built here (source-, kustomize-
# and helm-controller), each in the version that is built for it.
sibling_dirs=()
for sibling in source-controller kustomize-controller helm-controller; do
  sibling_manifest="$REPO_ROOT/pkg/manifests/flux/$flux_version/$sibling.yaml"
  [[ -f "$sibling_manifest" ]] || continue
  sibling_version=$(sed -n "s#^ *image: [^ ]*/$sibling:\(v[^ ]*\)\$#\1#p" "$sibling_manifest")
  sibling_build=$(awk -v key="github.com/fluxcd/$sibling@$sibling_version" '$1 == key { print $2 }' "$substitutes")
  sibling_dir=$(go mod download -json "github.com/fluxcd/$sibling@${sibling_build:-$sibling_version}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d "$sibling_dir" ]] || { log "cannot download github.com/fluxcd/$sibling@${sibling_build:-$sibling_version}"; exit 1; }
  sibling_dirs+=("$sibling_dir")
done

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

# Prints the replace directives of a go.mod, one per line as "<left> => <right>"; a local target
# has no version after "=>".
replaces() {
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
      gsub(/^[ \t]+|[ \t]+$/, "", sides[1])
      gsub(/^[ \t]+|[ \t]+$/, "", sides[2])
      print sides[1] " => " sides[2]
    }
  ' "$1"
}

# Every replace of the controller's go.mod, with a local directory of its own repository (./api)
# mapped to the module published from it at the same version.
module_replaces() {
  local left right
  while IFS= read -r line; do
    left=${line%% => *}
    right=${line#* => }
    if [[ "$right" == ./* ]]; then
      [[ "$left" == "$mod/${right#./}" ]] || { log "cannot map the local replace $line to a published module"; return 1; }
      echo "	$left => $left $build_version"
    else
      echo "	$left => $right"
    fi
  done < <(replaces "$mod_dir/go.mod")
}

if [[ "$build_version" == "$version" ]]; then
  log "building $component $version (cold: ~5 min on 2 cores, warm module cache: ~2 min)"
else
  log "building $component $version from $build_version, which stands in for it (cold: ~5 min on 2 cores, warm module cache: ~2 min)"
fi
{
  echo "module fluxcontrollerbuild"
  echo "go 1.26"
  echo "require $mod $build_version"
  echo "replace ("
  module_replaces
  for r in "${refused_replacements[@]}"; do
    echo "	$r"
  done
  echo ")"
} >"$work/go.mod"
# The controller's go.sum vouches for its dependencies: the checksum database the proxy serves
# does not know some of those of older releases (404), which fails their verification.
install -m 0644 "$mod_dir/go.sum" "$work/go.sum"
started=$(date +%s)
(
  cd "$work"
  go get "$mod@$build_version" >&2
  # A release built on the Kubernetes minor of this repository shares its dependencies with the
  # extension's test binaries (lib.sh, align_requirements). An older one would not compile with
  # them, but its controllers share theirs with each other: each is built with the highest version
  # any of them requires, except of Flux's own modules, whose minor versions change their APIs.
  if [[ "$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f1,2)" == "$(module_version k8s.io/client-go | cut -d. -f1,2)" ]]; then
    align_requirements
  else
    align_requirements --exclude '^github\.com/fluxcd/' "${sibling_dirs[@]}"
  fi
  go build -trimpath -ldflags "-s -w" -o "$bin" "$mod" >&2
)
log "built $component $version in $(($(date +%s) - started))s"

timeout 20 "$bin" --help >/dev/null 2>&1 || { log "built binary does not start: $bin --help failed"; exit 1; }
echo "$stamp_content" >"$stamp"
echo "$bin"
