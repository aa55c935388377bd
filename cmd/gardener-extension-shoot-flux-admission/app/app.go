// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package app wires the command line options of the admission into a manager with a webhook
// server.
package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	runtimelog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	admissioncmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/cmd"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
)

// NewAdmissionCommand returns the command that serves the shoot-flux admission webhooks.
func NewAdmissionCommand() *cobra.Command {
	options := NewOptions()

	cmd := &cobra.Command{
		Use:           Name,
		Short:         "Validates shoot-flux Shoot providerConfigs and project ConfigMaps in the garden cluster.",
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			verflag.PrintAndExitIfRequested()

			if err := options.optionAggregator.Complete(); err != nil {
				return fmt.Errorf("error completing options: %w", err)
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
	mgrConfig := o.managerOptions.Completed()
	runtimelog.SetLogger(mgrConfig.Logger)
	log := runtimelog.Log.WithName(Name)
	log.Info("Starting admission", "version", version.Get().GitVersion)

	scheme := runtime.NewScheme()
	if err := validator.AddToScheme(scheme); err != nil {
		return fmt.Errorf("could not build scheme: %w", err)
	}
	mgrOpts := mgrConfig.Options()
	mgrOpts.Scheme = scheme

	// The webhooks validate the objects of the request only. The manager needs a REST config to
	// be created but never calls the API server, unless leader election is switched on, which the
	// webhooks do not need.
	mgr, err := manager.New(o.restOptions.Completed().Config, mgrOpts)
	if err != nil {
		return fmt.Errorf("could not instantiate manager: %w", err)
	}
	if err := admissioncmd.AddToManager(mgr, o.webhookSwitches.Completed()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("could not add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-server", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("could not add ready check for the webhook server: %w", err)
	}

	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("error running manager: %w", err)
	}
	return nil
}
