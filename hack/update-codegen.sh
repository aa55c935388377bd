#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Regenerates the deepcopy, defaulting and conversion functions (zz_generated.*.go) of pkg/apis with
# the k8s.io/code-generator version that go.mod requires, so that the committed files can be checked
# byte for byte: run it and `git diff --exit-code pkg/apis`.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

CODE_GEN_DIR="$(module_dir k8s.io/code-generator)"
CODE_GEN_VERSION="$(module_version k8s.io/code-generator)"

# kube_codegen.sh installs the generators into $(go env GOBIN); a versioned cache directory keeps them
# from overwriting, or being shadowed by, other versions in $GOPATH/bin.
export GOBIN="${CACHE_ROOT}/code-generator/${CODE_GEN_VERSION}"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODE_GEN_DIR}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${REPO_ROOT}/hack/boilerplate.go.txt" \
  "${REPO_ROOT}/pkg/apis"
