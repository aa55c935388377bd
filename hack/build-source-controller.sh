#!/usr/bin/env bash
# Builds the Flux source-controller; kept for callers of its old name. hack/build-flux-controller.sh
# owns the logic (version, substitutions, cache).
exec "$(dirname "${BASH_SOURCE[0]}")/build-flux-controller.sh" source-controller
