# SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
#
# SPDX-License-Identifier: Apache-2.0

# gardener-extension-shoot-flux

REPO_ROOT      := $(shell pwd)
VERSION        := $(shell cat VERSION)
EXTENSION_NAME := gardener-extension-shoot-flux
ADMISSION_NAME := $(EXTENSION_NAME)-admission
# VERSION is the only place the release is written: the image tags, the charts' version and
# appVersion (hack/update-chart-versions.sh) and the OCI refs of the examples derive from it.
# Images go to $(REGISTRY)/extensions, charts to $(REGISTRY)/charts/extensions (see
# docs/development/getting-started.md#publishing); the charts' default image repository is this default.
REGISTRY       ?= europe-docker.pkg.dev/gardener-project/public
DEFAULT_REGISTRY := europe-docker.pkg.dev/gardener-project/public
IMAGE_REPOSITORY := $(REGISTRY)/extensions
CHART_REPOSITORY := $(REGISTRY)/charts/extensions
CHART_BUILD      := $(REPO_ROOT)/bin/charts
DOCKER ?= docker
HELM   ?= helm

# gardener's gozstd ships a prebuilt library that fails to link with cgo: everything is built
# and tested without cgo (and therefore without -race).
# -trimpath for every go command, not only for the release builds (build, publish): a package is
# compiled once for all of them. Without it `make test` compiled the extension's dependencies
# twice on a cold cache, once for the tests and once with -trimpath for `make publish` (test/publish).
export CGO_ENABLED := 0
export GOTOOLCHAIN := local
export GOFLAGS     := -mod=mod -trimpath

GO       ?= go
TOOLS_BIN := $(REPO_ROOT)/hack/tools/bin
GOLANGCI_LINT_VERSION ?= v2.15.0
DLV_VERSION           ?= v1.27.2
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint
DLV           := $(TOOLS_BIN)/dlv

LD_FLAGS = -s -w -X k8s.io/component-base/version.gitVersion=$(VERSION) -X k8s.io/component-base/version/verflag.programName=$(1)

# Real API servers and the Flux and kluctl controllers the integration tests, the demo and the bench
# run, built from the Go module proxy (kluctl from its source, KLUCTL_SOURCE) into a cache outside
# the repository (hack/build-test-binaries.sh builds them side by side). Each recipe reads the
# paths from the scripts in its own shell: a failing build stops make with the script's message
# (a $(shell ...) would hand an empty path to the tests), and a second call is a cache check.
# FLUX_CONTROLLERS: the source-, kustomize- and helm-controller of every embedded Flux release;
# KLUCTL_CONTROLLERS: the kluctl controller of every embedded kluctl release; both as
# "<image>=<binary>" words. The kubelet stand-in runs the binary of the image a Deployment names.
KLUCTL_SOURCE ?= $(wildcard $(REPO_ROOT)/../shared/kluctl/kluctl-*-src.tar.gz)
export KLUCTL_SOURCE
ENVTEST_ENV = assets=$$(hack/build-envtest.sh) && export KUBEBUILDER_ASSETS="$$assets" &&
# PROMTOOL: Prometheus' promtool, which the rule tests (test/promrules) run.
PROMTOOL_ENV = promtool=$$(hack/build-promtool.sh) && export PROMTOOL="$$promtool" &&
# CONTROLLERS_ENV takes the arguments of hack/build-flux-controllers.sh (default: all).
CONTROLLERS_ENV = $(ENVTEST_ENV) $(PROMTOOL_ENV) flux=$$(hack/build-flux-controllers.sh $(1)) && kluctl=$$(hack/build-kluctl-controller.sh) && \
	export FLUX_CONTROLLERS="$$flux" KLUCTL_CONTROLLERS="$$kluctl" &&

# A count of executions, not a duration: go1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" when a -fuzztime duration ends while a worker is mid-call
# (golang/go#75804, fixed in go1.27). A count sets no deadline. 10000 runs take 2-16 s per target.
FUZZTIME ?= 10000x

# help lists every target with the line after its "##".
.PHONY: help
help: ## list the targets
	@awk -F ':.*## ' '/^[a-z][a-z0-9-]*:.*## / { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

.PHONY: all
all: check test build ## check, test and build everything

#########################################
# Build                                 #
#########################################

.PHONY: build
build: ## build the extension and admission binaries into bin/
	$(GO) build -trimpath -ldflags "$(call LD_FLAGS,$(EXTENSION_NAME))" -o bin/$(EXTENSION_NAME) ./cmd/$(EXTENSION_NAME)
	$(GO) build -trimpath -ldflags "$(call LD_FLAGS,$(ADMISSION_NAME))" -o bin/$(ADMISSION_NAME) ./cmd/$(ADMISSION_NAME)

.PHONY: install
install: ## go install both binaries
	$(GO) install -trimpath -ldflags "$(call LD_FLAGS,$(EXTENSION_NAME))" ./cmd/$(EXTENSION_NAME)
	$(GO) install -trimpath -ldflags "$(call LD_FLAGS,$(ADMISSION_NAME))" ./cmd/$(ADMISSION_NAME)

.PHONY: docker-images
docker-images: ## build both images with a Docker engine
	$(DOCKER) build --build-arg EFFECTIVE_VERSION=$(VERSION) -t $(IMAGE_REPOSITORY)/$(EXTENSION_NAME):$(VERSION) --target $(EXTENSION_NAME) .
	$(DOCKER) build --build-arg EFFECTIVE_VERSION=$(VERSION) -t $(IMAGE_REPOSITORY)/$(ADMISSION_NAME):$(VERSION) --target $(ADMISSION_NAME) .

.PHONY: docker-push
docker-push: docker-images ## push both images (Docker engine, logged in)
	$(DOCKER) push $(IMAGE_REPOSITORY)/$(EXTENSION_NAME):$(VERSION)
	$(DOCKER) push $(IMAGE_REPOSITORY)/$(ADMISSION_NAME):$(VERSION)

# chart-push packages the chart in directory $(1), published as $(2), and pushes it to
# $(CHART_REPOSITORY)/$(2):$(VERSION). A copy is packaged so that the default image repository of
# the published chart is the one the images were pushed to.
define chart-push
	rm -rf $(CHART_BUILD)/$(2) && mkdir -p $(CHART_BUILD) && cp -R $(1) $(CHART_BUILD)/$(2)
	find $(CHART_BUILD)/$(2) -name values.yaml -exec sed -i 's|repository: $(DEFAULT_REGISTRY)/extensions/|repository: $(IMAGE_REPOSITORY)/|' {} +
	$(HELM) package $(CHART_BUILD)/$(2) --version $(VERSION) --app-version $(VERSION) --destination $(CHART_BUILD)
	$(HELM) push $(CHART_BUILD)/$(2)-$(VERSION).tgz oci://$(CHART_REPOSITORY)
endef

.PHONY: chart-push
chart-push: ## package and push all charts with helm (logged in)
	$(call chart-push,charts/$(EXTENSION_NAME),$(EXTENSION_NAME))
	$(call chart-push,charts/$(ADMISSION_NAME)/charts/application,$(ADMISSION_NAME)-application)
	$(call chart-push,charts/$(ADMISSION_NAME)/charts/runtime,$(ADMISSION_NAME)-runtime)
	$(call chart-push,charts/$(ADMISSION_NAME),$(ADMISSION_NAME))

# push publishes both images and all charts of VERSION to REGISTRY (docker and helm logged in).
.PHONY: push
push: docker-push chart-push ## push images and charts of VERSION to REGISTRY

# publish pushes what push pushes without a Docker engine or helm (hack/publish, with
# go-containerregistry and helm's library): the binaries built for PLATFORM and added to
# BASE_IMAGE (the Dockerfile's base; "scratch" for none), the charts pointed to the pushed images.
# It then writes a ControllerRegistration/ControllerDeployment and an operator Extension that name
# exactly what it pushed, by digest, into INSTALL_DIR (see docs/operations/installation.md). Credentials come
# from the Docker config ($$DOCKER_CONFIG/config.json). CHART_PULL_SECRET names the garden Secret
# gardenlet and gardener-operator pull the charts with, for a private registry. INSECURE=true
# reaches the registry over plain HTTP (always done for loopback addresses).
BASE_IMAGE        ?= $(shell sed -n 's/^FROM \([^ ]*\) AS base$$/\1/p' Dockerfile)
PLATFORM          ?= linux/amd64
INSTALL_DIR       ?= $(REPO_ROOT)/bin/install
CHART_PULL_SECRET ?=
INSECURE          ?= false
.PHONY: publish
publish: ## push images and charts without Docker or helm, write bin/install
	$(GO) run ./hack/publish --registry=$(REGISTRY) --version=$(VERSION) --default-registry=$(DEFAULT_REGISTRY) \
		--base-image=$(BASE_IMAGE) --platform=$(PLATFORM) --output=$(INSTALL_DIR) --chart-pull-secret=$(CHART_PULL_SECRET) --insecure=$(INSECURE) \
		--extension-ldflags="$(call LD_FLAGS,$(EXTENSION_NAME))" --admission-ldflags="$(call LD_FLAGS,$(ADMISSION_NAME))"

.PHONY: vendor
vendor: ## write vendor/ for air-gapped builders
	$(GO) mod vendor

#########################################
# Code generation and checks            #
#########################################

.PHONY: generate
generate: ## regenerate code, API references, manifests and registration
	hack/update-codegen.sh
	hack/generate-api-reference.sh
	$(GO) generate ./...

.PHONY: check-generate
check-generate: ## fail when a generated file is stale
	hack/check-generate.sh

.PHONY: format
format: ## gofmt every Go file
	gofmt -s -w $$(git ls-files '*.go')

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(DLV):
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/go-delve/delve/cmd/dlv@$(DLV_VERSION)

# golangci-lint's govet runs go vet's analyzers (those of go1.26's cmd/vet, see
# .golangci.yaml), so a separate `go vet ./...` would only analyze every dependency a second time:
# 340 s of a cold CI run.
.PHONY: check
check: $(GOLANGCI_LINT) ## gofmt, golangci-lint and the REUSE licensing check
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "not gofmt-ed"; exit 1; }
	$(GOLANGCI_LINT) run ./...
	$(GO) run ./hack/reuse

#########################################
# Tests                                 #
#########################################

.PHONY: test
test: test-binaries test-unit test-suites test-fuzz ## build the test binaries, run unit, integration and fuzz tests

# test-suites runs the integration suites (test-integration) beside the scenarios labelled
# "deployed" (test-deployed), each with its own API servers and controllers: both mostly wait for
# them (the machine is 55-70 % idle while one runs), and side by side they take as long as the
# deployed suite alone (1,321 s). A third process fills the two cores: the deployed scenarios in
# two shards beside the integration suites took 1,332 s (docs/performance.md). Each target's output
# is printed when it ends. The scenarios labelled "deployed" run once, as deployed, not in-process
# too: the in-process run proves nothing the deployed one does not, and takes minutes.
.PHONY: test-suites
test-suites: test-binaries ## run the integration suites and the deployed scenarios side by side
	@# Compiles the test binaries once: two `go test` started together would compile the same
	@# packages side by side on a cold build cache.
	$(GO) test -run '^$$' ./test/... >/dev/null
	$(MAKE) --no-print-directory --output-sync=target -j2 test-integration test-deployed INTEGRATION_LABEL_FILTER='!deployed'

.PHONY: test-binaries
test-binaries: ## build envtest, Flux, kluctl controllers and promtool into the cache
	hack/build-test-binaries.sh

.PHONY: test-unit
test-unit: ## run the unit tests (everything outside test/)
	$(GO) test $$($(GO) list ./... | grep -v /test/)

# INTEGRATION_LABEL_FILTER selects the scenarios by label (ginkgo's --label-filter); empty runs all,
# those labelled "deployed" in-process too.
INTEGRATION_LABEL_FILTER ?=
.PHONY: test-integration
test-integration: ## run the integration suites (INTEGRATION_LABEL_FILTER selects)
	$(CONTROLLERS_ENV) $(GO) test -timeout 40m ./test/... -ginkgo.label-filter='$(INTEGRATION_LABEL_FILTER)'

# The scenarios labelled "deployed" once more, with the extension installed as in a landscape
# (published into an in-process registry, installed by gardener-controller-manager's and gardenlet's
# ControllerInstallation controllers) and run as deployed: the binary with the chart's args and
# volumes, a read-only root, the chart's seed roles and the garden ClusterRole and admission policy
# of example/garden-rbac.yaml (see docs/development/sandbox.md). Needs root (mount namespaces, chroot).
.PHONY: test-deployed
test-deployed: ## run the scenarios labelled deployed as deployed (needs root)
	$(CONTROLLERS_ENV) SHOOT_FLUX_DEPLOYED=true $(GO) test -timeout 45m ./test/integration -ginkgo.label-filter=deployed $(TEST_ARGS)

# Records the metrics of the delivered controllers (scraped through the shoot API server's pod proxy
# as the shoot's Prometheus does) and of the extension as deployed, in healthy and failing states,
# into the samples the alert rules' tests read (test/sandbox/record-metrics). Needs root, as
# test-deployed. Commit the result.
.PHONY: record-metrics
record-metrics: ## record the delivered controllers' metrics samples (needs root)
	$(CONTROLLERS_ENV) $(GO) run ./test/sandbox/record-metrics -out test/promrules/samples

.PHONY: test-fuzz
test-fuzz: ## run every fuzz target for FUZZTIME
	@for pkg_target in $$(hack/fuzz-targets.sh); do \
		pkg=$${pkg_target%%:*}; target=$${pkg_target##*:}; \
		echo "fuzzing $$target in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

.PHONY: bench
# source-controller: what kluctl mode delivers besides the kluctl controller (-first-deploy runs both).
bench: ## run the benchmark of the extension at scale (BENCH_ARGS)
	$(call CONTROLLERS_ENV,source-controller) $(GO) run ./test/bench $(BENCH_ARGS)

#########################################
# Sandbox and local development         #
#########################################

.PHONY: demo
demo: ## start the sandbox with two demo shoots
	export FLUX_VERSIONS=newest && $(call CONTROLLERS_ENV,source-controller kustomize-controller) $(GO) run ./hack/sandbox demo

.PHONY: sandbox-up
sandbox-up: ## start the sandbox and leave it running
	$(ENVTEST_ENV) $(GO) run ./hack/sandbox up

# hack/start.sh passes --config only when CONFIG is set, or dev/config.yaml (make sandbox-up) exists
# and the seed is the sandbox's: that file's host policy allows loopback (docs/development/sandbox.md).
.PHONY: start
start: ## run the extension locally against a seed (ARGS)
	GO="$(GO)" LDFLAGS="$(call LD_FLAGS,$(EXTENSION_NAME))" hack/start.sh run $(ARGS)

.PHONY: debug
debug: $(DLV) ## run the extension under dlv (DLV_ARGS, ARGS)
	DLV="$(DLV)" DLV_ARGS="$(DLV_ARGS)" hack/start.sh debug $(ARGS)
