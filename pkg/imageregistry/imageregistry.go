// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package imageregistry checks the registry that replaces the registry of the images. It is a leaf,
// so the configuration API and the render apply the same rule without importing each other.
package imageregistry

import (
	"fmt"
	"strings"
)

// Validate checks a registry that replaces the registry of the images (the operator's
// registry setting): a host with an optional port and path, e.g. my.mirror:5000/cache. The
// configuration is checked with the same function the render uses, so that a registry the
// configuration accepts renders.
func Validate(registry string) error {
	if registry == "" {
		return nil
	}
	if strings.Contains(registry, "://") || strings.ContainsAny(registry, " \t\r\n@") ||
		strings.HasPrefix(registry, "/") || strings.HasSuffix(registry, "/") || strings.Contains(registry, "//") {
		return fmt.Errorf("expected a host with optional port and path, e.g. my.mirror:5000/cache, without scheme, whitespace, \"@\" or empty path components")
	}
	// Without a dot, port or "localhost" container runtimes would read the first component as a
	// Docker Hub namespace and pull from docker.io.
	if host, _, _ := strings.Cut(registry, "/"); !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("%q is not a registry host: it needs a dot, a port or to be localhost, e.g. %s.example.com or %s:5000", host, host, host)
	}
	return nil
}
