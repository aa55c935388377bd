// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package app

import (
	"os"

	controllercmd "github.com/gardener/gardener/extensions/pkg/controller/cmd"
	webhookcmd "github.com/gardener/gardener/extensions/pkg/webhook/cmd"

	admissioncmd "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/cmd"
)

// Name is the name of the admission component.
const Name = "gardener-extension-shoot-flux-admission"

// Options hold the command line options of the admission.
type Options struct {
	restOptions      *controllercmd.RESTOptions
	managerOptions   *controllercmd.ManagerOptions
	hostPolicy       *admissioncmd.HostPolicyOptions
	limits           *admissioncmd.LimitsOptions
	releases         *admissioncmd.ReleasesOptions
	webhookSwitches  *webhookcmd.SwitchOptions
	optionAggregator controllercmd.OptionAggregator
}

// NewOptions returns the options with their defaults.
func NewOptions() *Options {
	hostPolicy := &admissioncmd.HostPolicyOptions{}
	limits := admissioncmd.NewLimitsOptions()
	releases := admissioncmd.NewReleasesOptions()
	o := &Options{
		restOptions: &controllercmd.RESTOptions{},
		managerOptions: &controllercmd.ManagerOptions{
			// Webhook servers answer from every replica; the admission has no controller that
			// needs a leader, so it needs no Lease and no permissions for one.
			LeaderElection:          false,
			LeaderElectionID:        controllercmd.LeaderElectionNameID(Name),
			LeaderElectionNamespace: os.Getenv("LEADER_ELECTION_NAMESPACE"),
			WebhookServerPort:       10250,
			WebhookCertDir:          "/etc/" + Name + "/tls",
		},
		hostPolicy:      hostPolicy,
		limits:          limits,
		releases:        releases,
		webhookSwitches: admissioncmd.WebhookSwitchOptions(hostPolicy, limits, releases),
	}
	o.optionAggregator = controllercmd.NewOptionAggregator(
		o.restOptions,
		o.managerOptions,
		o.hostPolicy,
		o.limits,
		o.releases,
		o.webhookSwitches,
	)
	return o
}
