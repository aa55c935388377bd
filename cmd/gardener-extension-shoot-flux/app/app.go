// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package app wires the command line options into a controller manager.
package app

import (
	"context"
	"fmt"

	"github.com/gardener/gardener/extensions/pkg/controller/heartbeat"
	"github.com/spf13/cobra"
	"k8s.io/component-base/version/verflag"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fluxcmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/extension"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/controller/healthcheck"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/metrics/shoots"
)

// NewControllerCommand returns the command that runs the shoot-flux extension controller.
func NewControllerCommand() *cobra.Command {
	options := NewOptions()

	cmd := &cobra.Command{
		Use:           constants.ExtensionName,
		Short:         "Deploys Flux, the kluctl controller and a GitOps bootstrap into shoot clusters.",
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()

			if err := options.optionAggregator.Complete(); err != nil {
				return fmt.Errorf("error completing options: %w", err)
			}
			if err := options.heartbeatOptions.Validate(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return options.run(cmd.Context())
		},
	}

	verflag.AddFlags(cmd.Flags())
	options.optionAggregator.AddFlags(cmd.Flags())
	return cmd
}

func (o *Options) run(ctx context.Context) error {
	mgrOpts := o.managerOptions.Completed().Options()
	// A stopping pod hands the lease over at once instead of letting its successor wait for the
	// lease to expire; the process ends right after the manager, so nothing reconciles after that.
	mgrOpts.LeaderElectionReleaseOnCancel = true
	fluxcmd.ApplySeedCacheOptions(&mgrOpts)
	o.profilingOptions.Apply(&mgrOpts)

	mgr, err := manager.New(o.clientOptions.Apply(o.restOptions.Completed().Config), mgrOpts)
	if err != nil {
		return fmt.Errorf("could not instantiate controller-manager: %w", err)
	}
	if warning := o.profilingOptions.Warning(); warning != "" {
		mgr.GetLogger().Info("Warning: " + warning)
	}
	cfg := o.configOptions.Completed()
	cfg.GardenClusterIdentity = o.gardenOptions.ClusterIdentity
	gardenCluster, err := fluxcmd.SetUpManager(mgr, o.clientOptions.Apply(o.gardenOptions.Completed()), cfg.Limits)
	if err != nil {
		return err
	}

	extension.DefaultAddOptions.Config = *cfg
	extension.DefaultAddOptions.Lifecycle = o.configOptions.Lifecycle()
	if cfg.HealthCheckConfig != nil {
		healthcheck.DefaultAddOptions.HealthCheckConfig = *cfg.HealthCheckConfig
	}
	healthcheck.DefaultAddOptions.ExtensionClasses = o.generalOptions.Completed().ExtensionClasses
	extension.DefaultAddOptions.GardenCluster = gardenCluster
	extension.DefaultAddOptions.ExtensionClasses = o.generalOptions.Completed().ExtensionClasses
	o.controllerOptions.Completed().Apply(&extension.DefaultAddOptions.ControllerOptions)
	o.reconcileOptions.Completed().Apply(&extension.DefaultAddOptions.IgnoreOperationAnnotation)
	o.heartbeatOptions.Completed().Apply(&heartbeat.DefaultAddOptions)

	if err := shoots.AddToManager(mgr, heartbeat.DefaultAddOptions.Namespace, o.configOptions.Lifecycle()); err != nil {
		return fmt.Errorf("could not add the metrics of the shoots: %w", err)
	}
	if err := o.controllerSwitches.Completed().AddToManager(ctx, mgr); err != nil {
		return fmt.Errorf("could not add controllers to manager: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("error running manager: %w", err)
	}
	return nil
}
