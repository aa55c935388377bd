#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Fails when a generated file is stale: runs every generator (hack/update-codegen.sh for the
# zz_generated files of pkg/apis, hack/generate-api-reference.sh for docs/api-reference,
# `go generate ./...` for pkg/manifests, the operator Extension in example/extension/base and
# example/controller-registration.yaml) and compares the work tree
# before and after. Comparing the work tree rather than `git diff` against HEAD keeps the check
# meaningful with uncommitted changes: it asks whether the tree as it is reproduces itself.
# Regenerated files are left in place, so a failing run is also the fix.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

# snapshot prints "<sha256>  <path>" for every tracked or untracked, not ignored file.
snapshot() {
  git ls-files --cached --others --exclude-standard -z |
    while IFS= read -r -d '' f; do
      if [[ -f "$f" ]]; then
        sha256sum -- "$f"
      else
        echo "deleted  $f"
      fi
    done | sort -k2
}

before="$(mktemp)"
after="$(mktemp)"
trap 'rm -f "${before}" "${after}"' EXIT

snapshot >"${before}"
hack/update-codegen.sh
hack/generate-api-reference.sh
go generate ./...
snapshot >"${after}"

if ! diff -u "${before}" "${after}" >/dev/null; then
  echo "check-generate: generated files are stale; the generators changed:" >&2
  diff "${before}" "${after}" | sed -n 's/^[<>] [^ ]*  //p' | sort -u >&2
  echo "check-generate: commit the regenerated files (run: hack/update-codegen.sh && hack/generate-api-reference.sh && go generate ./...)" >&2
  exit 1
fi
echo "check-generate: generated files are up to date"
