//go:build tools

// Package hack records the code generators that hack/update-codegen.sh runs, so that go.mod pins
// their version and `go mod tidy` keeps it.
package hack

import (
	_ "k8s.io/code-generator"
)
