#!/usr/bin/env bash
# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Builds the Flux source-controller; kept for callers of its old name. hack/build-flux-controller.sh
# owns the logic (version, substitutions, cache).
exec "$(dirname "${BASH_SOURCE[0]}")/build-flux-controller.sh" source-controller
