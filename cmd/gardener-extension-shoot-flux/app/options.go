// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"os"

	controllercmd "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	heartbeatcmd "github.com/gardener/gardener/extensions/pkg/controller/heartbeat/cmd"

	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// Options hold the command line options of the extension controller.
type Options struct {
	generalOptions     *controllercmd.GeneralOptions
	configOptions      *fluxcmd.ConfigOptions
	gardenOptions      *fluxcmd.GardenOptions
	clientOptions      *fluxcmd.ClientOptions
	profilingOptions   *fluxcmd.ProfilingOptions
	restOptions        *controllercmd.RESTOptions
	managerOptions     *controllercmd.ManagerOptions
	controllerOptions  *controllercmd.ControllerOptions
	reconcileOptions   *controllercmd.ReconcilerOptions
	heartbeatOptions   *heartbeatcmd.Options
	controllerSwitches *controllercmd.SwitchOptions
	optionAggregator   controllercmd.OptionAggregator
}

// NewOptions returns the options with their defaults.
func NewOptions() *Options {
	o := &Options{
		generalOptions:   &controllercmd.GeneralOptions{},
		configOptions:    &fluxcmd.ConfigOptions{},
		gardenOptions:    &fluxcmd.GardenOptions{},
		clientOptions:    fluxcmd.NewClientOptions(),
		profilingOptions: &fluxcmd.ProfilingOptions{},
		restOptions:      &controllercmd.RESTOptions{},
		managerOptions: &controllercmd.ManagerOptions{
			LeaderElection:          true,
			LeaderElectionID:        controllercmd.LeaderElectionNameID(constants.ExtensionName),
			LeaderElectionNamespace: os.Getenv("LEADER_ELECTION_NAMESPACE"),
			MetricsBindAddress:      ":8080",
			HealthBindAddress:       ":8081",
		},
		// Reconciles mostly wait for gardener-resource-manager; many of them fit on two cores.
		controllerOptions: &controllercmd.ControllerOptions{MaxConcurrentReconciles: 20},
		reconcileOptions:  &controllercmd.ReconcilerOptions{},
		heartbeatOptions: &heartbeatcmd.Options{
			ExtensionName:        constants.ExtensionName,
			RenewIntervalSeconds: 30,
			Namespace:            os.Getenv("LEADER_ELECTION_NAMESPACE"),
		},
		controllerSwitches: fluxcmd.ControllerSwitches(),
	}
	o.optionAggregator = controllercmd.NewOptionAggregator(
		o.generalOptions,
		o.configOptions,
		o.gardenOptions,
		o.clientOptions,
		o.profilingOptions,
		o.restOptions,
		o.managerOptions,
		o.controllerOptions,
		o.reconcileOptions,
		controllercmd.PrefixOption("heartbeat-", o.heartbeatOptions),
		o.controllerSwitches,
	)
	return o
}
