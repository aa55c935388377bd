// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package charts embeds the helm chart that gardenlet deploys into seeds, so that tests render
// exactly the files that example/controller-registration.yaml is generated from.
package charts

import "embed"

//go:generate ../hack/update-chart-versions.sh
//go:generate ../hack/generate-controller-registration.sh

const (
	// ExtensionChartName is the directory and name of the extension controller chart.
	ExtensionChartName = "gardener-extension-shoot-flux"
)

// FS holds the chart directories. "all:" keeps files starting with "." or "_" (_helpers.tpl),
// which plain go:embed patterns drop.
//
//go:embed all:gardener-extension-shoot-flux
var FS embed.FS
