// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// substitutesFile lists the controller versions the Go module proxy refuses and their stand-ins.
// hack/build-flux-controller.sh reads the same file to build the test binaries of those versions,
// so the manifests and the binaries cannot disagree on what stands in.
//
//go:embed substitutes.txt
var substitutesFile []byte

// substitutes are keyed by module@version. Every manager of a substitute is taken as it is: Flux
// changes the Deployment of a controller rarely (notification-controller's config/manager is the same
// from v1.6.0 to v1.9.3 apart from the image tag), while its CRDs change with its API.
var substitutes, substitutesErr = parseSubstitutes(substitutesFile)

// parseSubstitutes reads lines of "<module>@<version> <config version> [<controller-gen release>]";
// blank lines and lines starting with # are skipped.
func parseSubstitutes(data []byte) (map[string]substitute, error) {
	out := map[string]substitute{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 && len(fields) != 3 {
			return nil, fmt.Errorf("substitutes.txt line %d: expected <module>@<version> <config version> [<controller-gen release>], got %q", n, line)
		}
		module, version, ok := strings.Cut(fields[0], "@")
		if !ok || module == "" || !semver.IsValid(version) {
			return nil, fmt.Errorf("substitutes.txt line %d: %q is not <module>@<version>", n, fields[0])
		}
		sub := substitute{config: fields[1]}
		if len(fields) == 3 {
			sub.controllerGen = fields[2]
		}
		for _, v := range []string{sub.config, sub.controllerGen} {
			if v != "" && !semver.IsValid(v) {
				return nil, fmt.Errorf("substitutes.txt line %d: %q is not a version", n, v)
			}
		}
		if _, dup := out[fields[0]]; dup {
			return nil, fmt.Errorf("substitutes.txt line %d: %s is listed twice", n, fields[0])
		}
		out[fields[0]] = sub
	}
	return out, scanner.Err()
}
