#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Lists the fuzz targets of the module as "<package>:<FuzzName>", one per line, for make test-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' pkg cmd test 2>/dev/null | sort | while read -r file; do
  pkg="./$(dirname "$file")"
  grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
    echo "$pkg:$target"
  done
done
