#!/usr/bin/env bash
# Generates example/controller-registration.yaml (ControllerDeployment + ControllerRegistration for
# Extension:shoot-flux) with gardener's own hack/generate-controller-registration.sh from the
# gardener module that go.mod requires, so the output follows exactly what that gardener version
# expects (rawChart packaging, injectGardenKubeconfig, pod-security-enforce annotation).
#
# gardener's script calls `helm package` and `yq`. Neither is a Debian package here, so both are
# built from the Go module proxy into a versioned cache outside the repository: helm in the
# version gardener itself requires (the chart is rendered by that helm library in gardenlet), yq
# pinned below.
#
# Usage: hack/generate-controller-registration.sh [destination]
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

NAME=shoot-flux
CHART_DIR="${REPO_ROOT}/charts/gardener-extension-shoot-flux"
DEST="${1:-${REPO_ROOT}/example/controller-registration.yaml}"
VERSION="$(cat "${REPO_ROOT}/VERSION")"

# mikefarah/yq; newer releases need module versions the proxy refuses.
YQ_VERSION=v4.50.1
HELM_VERSION="$(module_version helm.sh/helm/v4)"
GARDENER_HACK_DIR="$(module_dir github.com/gardener/gardener)/hack"

# install_tool <binary> <package> <version> prints the directory holding the binary.
install_tool() {
  local name="$1" pkg="$2" version="$3"
  local dir="${CACHE_ROOT}/tools/${name}-${version}"
  if [[ ! -x "${dir}/${name}" ]]; then
    echo "generate-controller-registration: building ${name} ${version} (once)" >&2
    mkdir -p "${dir}"
    # `go install pkg@version` resolves the tool's own module graph; -mod=mod does not apply.
    GOFLAGS= GOBIN="${dir}" go install "${pkg}@${version}" >&2
  fi
  echo "${dir}"
}

helm_dir="$(install_tool helm helm.sh/helm/v4/cmd/helm "${HELM_VERSION}")"
yq_dir="$(install_tool yq github.com/mikefarah/yq/v4 "${YQ_VERSION}")"
export PATH="${helm_dir}:${yq_dir}:${PATH}"

# The pod meets the restricted Pod Security Standard (non-root, no capabilities, RuntimeDefault
# seccomp, only configMap/secret/projected/emptyDir volumes), so its namespace can enforce it.
bash "${GARDENER_HACK_DIR}/generate-controller-registration.sh" \
  --pod-security-enforce=restricted \
  --inject-garden-kubeconfig \
  "${NAME}" "${CHART_DIR}" "${VERSION}" "${DEST}" Extension:shoot-flux
