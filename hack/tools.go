// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

//go:build tools

// Package hack records the code generators that hack/update-codegen.sh runs (the ones
// kube::codegen::gen_helpers installs), so that go.mod pins their version and `go mod tidy` keeps it.
package hack

import (
	_ "k8s.io/code-generator/cmd/conversion-gen"
	_ "k8s.io/code-generator/cmd/deepcopy-gen"
	_ "k8s.io/code-generator/cmd/defaulter-gen"
	_ "k8s.io/code-generator/cmd/validation-gen"
)
