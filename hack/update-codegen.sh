#!/usr/bin/env bash
# Regenerates the deepcopy, defaulting and conversion functions (zz_generated.*.go) of pkg/apis with
# the k8s.io/code-generator version that go.mod requires, so that the committed files can be checked
# byte for byte: run it and `git diff --exit-code pkg/apis`.
set -o errexit
set -o nounset
set -o pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "${REPO_ROOT}"

export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS=-mod=mod

CODE_GEN_DIR="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
CODE_GEN_VERSION="$(go list -m -f '{{.Version}}' k8s.io/code-generator)"

# kube_codegen.sh installs the generators into $(go env GOBIN); a versioned cache directory keeps them
# from overwriting, or being shadowed by, other versions in $GOPATH/bin.
CACHE_ROOT="${SHOOT_FLUX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shoot-flux}"
export GOBIN="${CACHE_ROOT}/code-generator/${CODE_GEN_VERSION}"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODE_GEN_DIR}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${REPO_ROOT}/hack/boilerplate.go.txt" \
  "${REPO_ROOT}/pkg/apis"
