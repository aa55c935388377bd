# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# Images of the shoot-flux extension: one target per binary, e.g.
#   docker build --build-arg EFFECTIVE_VERSION=$(cat VERSION) --target gardener-extension-shoot-flux .

############# builder
FROM golang:1.26.8 AS builder

WORKDIR /go/src/github.com/shoot-flux/gardener-extension-shoot-flux

# Dependencies first, so that source changes do not invalidate the downloaded module layer.
COPY go.mod go.sum ./
RUN GOTOOLCHAIN=local go mod download

COPY . .

# Overrides the VERSION file in the binaries' version information (release builds pass the tag).
ARG EFFECTIVE_VERSION

# The Makefile builds without cgo (statically linked, as distroless/static needs) and with the
# version ldflags.
RUN make install ${EFFECTIVE_VERSION:+VERSION=$EFFECTIVE_VERSION}

############# base
FROM gcr.io/distroless/static-debian12:nonroot AS base
WORKDIR /

############# gardener-extension-shoot-flux
FROM base AS gardener-extension-shoot-flux

COPY --from=builder /go/bin/gardener-extension-shoot-flux /gardener-extension-shoot-flux
ENTRYPOINT ["/gardener-extension-shoot-flux"]

############# gardener-extension-shoot-flux-admission
FROM base AS gardener-extension-shoot-flux-admission

COPY --from=builder /go/bin/gardener-extension-shoot-flux-admission /gardener-extension-shoot-flux-admission
ENTRYPOINT ["/gardener-extension-shoot-flux-admission"]
