#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds kube-apiserver and etcd from the Go module proxy into a cache outside the repository.
#
# Upstream envtest tarballs live on GCS, which this project cannot reach; `go install` of
# kube-apiserver fails because k8s.io/kubernetes replaces its staging modules with local paths.
# So we write a throw-away module that requires k8s.io/kubernetes and maps every staging replace
# to the published k8s.io/<module> v0.<minor>.<patch>.
#
# Prints the directory holding the binaries (usable as KUBEBUILDER_ASSETS) on stdout.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K8S_VERSION=${K8S_VERSION:-v1.36.4}
dest="$CACHE_ROOT/envtest/$K8S_VERSION"
mkdir -p "$dest"

log() { echo "build-envtest: $*" >&2; }

apiserver_up_to_date() {
  [[ -x "$dest/kube-apiserver" ]] && prints "^Kubernetes $K8S_VERSION\$" "$dest/kube-apiserver" --version
}

up_to_date() {
  [[ -x "$dest/kube-apiserver" && -x "$dest/etcd" ]] || return 1
  apiserver_up_to_date || return 1
  [[ -f "$dest/etcd.version" ]] && prints "^etcd Version: $(cat "$dest/etcd.version")\$" "$dest/etcd" --version
}

exec 9>"$dest/.lock"
flock 9

if up_to_date; then
  echo "$dest"
  exit 0
fi

k8s_dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d "$k8s_dir" ]] || { log "cannot download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
etcd_version=v$(awk '/name: "etcd"/{getline; print $2; exit}' "$k8s_dir/build/dependencies.yaml")
staging_version="v0.${K8S_VERSION#v1.}"
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! apiserver_up_to_date; then
  log "building kube-apiserver $K8S_VERSION (cold: ~15 min on 2 cores)"
  mkdir -p "$work/apiserver"
  {
    echo "module envtestbuild"
    echo "go 1.26"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    sed -n 's#^\t\(k8s.io/[^ ]*\) => ./staging/src/k8s.io/.*#\t\1 => \1 '"$staging_version"'#p' "$k8s_dir/go.mod"
    echo ")"
  } >"$work/apiserver/go.mod"
  started=$(date +%s)
  (
    cd "$work/apiserver"
    go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" >&2
    align_requirements
    ldflags=""
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    done
    go build -trimpath -ldflags "-s -w$ldflags" -o "$dest/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
  )
  log "built kube-apiserver $K8S_VERSION in $(($(date +%s) - started))s"
fi

log "building etcd $etcd_version"
started=$(date +%s)
mkdir -p "$work/etcd"
printf 'module etcdbuild\ngo 1.26\n' >"$work/etcd/go.mod"
(
  cd "$work/etcd"
  go get "go.etcd.io/etcd/server/v3@$etcd_version" >&2
  go build -trimpath -ldflags "-s -w" -o "$dest/etcd" go.etcd.io/etcd/server/v3 >&2
)
echo "${etcd_version#v}" >"$dest/etcd.version"
log "built etcd $etcd_version in $(($(date +%s) - started))s"

up_to_date || { log "built binaries do not report the expected versions"; exit 1; }
echo "$dest"
