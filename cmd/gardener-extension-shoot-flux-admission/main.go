// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Command gardener-extension-shoot-flux-admission serves the validating admission webhooks of the
// shoot-flux extension for the garden cluster.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/manager/signals"

	"github.com/shoot-flux/gardener-extension-shoot-flux/cmd/gardener-extension-shoot-flux-admission/app"
)

func main() {
	cmd := app.NewAdmissionCommand()
	if err := cmd.ExecuteContext(signals.SetupSignalHandler()); err != nil {
		// The logger honours --log-level and --log-format, so it only exists once the flags are
		// parsed; errors are printed plainly instead.
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
