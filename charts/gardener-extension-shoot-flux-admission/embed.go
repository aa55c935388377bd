// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package admissionchart embeds the helm charts of the shoot-flux admission, so that tests render
// exactly the files that are released.
package admissionchart

import "embed"

const (
	// ApplicationChartPath is the path in FS of the chart for the garden cluster: the
	// ValidatingWebhookConfiguration.
	ApplicationChartPath = "charts/application"
	// RuntimeChartPath is the path in FS of the chart for the runtime cluster: the webhook server.
	RuntimeChartPath = "charts/runtime"
	// UmbrellaChartPath is the path in FS of the chart that installs both into one cluster.
	UmbrellaChartPath = "."
)

// FS holds the charts. "all:" keeps files starting with "." or "_" (_helpers.tpl), which
// embed patterns without it drop.
//
//go:embed Chart.yaml values.yaml all:charts
var FS embed.FS
