// Package cmd wires the admission webhooks of shoot-flux into a controller-runtime manager.
package cmd

import (
	"errors"
	"fmt"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	webhookcmd "github.com/gardener/gardener/extensions/pkg/webhook/cmd"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
)

// HostPolicyOptions are the operator's host policy for repository hosts, the same settings as the
// controller's hostPolicy.allowedNetworks and hostPolicy.allowedPorts, parsed and defaulted by the
// same package (hostpolicy). The admission refuses what the policy refuses without DNS; the seed's
// networks, which the controller always refuses, are only known when a shoot is reconciled.
type HostPolicyOptions struct {
	// AllowedNetworks are CIDRs that are allowed although they are not public.
	AllowedNetworks []string
	// AllowedPorts are ports or ranges like 1024-65535; empty means hostpolicy.DefaultAllowedPorts.
	AllowedPorts []string

	policy *hostpolicy.Policy
}

// AddFlags implements controllercmd.Flagger.
func (o *HostPolicyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.AllowedNetworks, "host-policy-allowed-networks", o.AllowedNetworks,
		"CIDRs of repository hosts that are allowed although they are not public; the controller's hostPolicy.allowedNetworks.")
	fs.StringSliceVar(&o.AllowedPorts, "host-policy-allowed-ports", o.AllowedPorts,
		"Ports or ranges like 1024-65535 of repository hosts that are allowed (default: the controller's defaults); the controller's hostPolicy.allowedPorts.")
}

// Complete implements controllercmd.Completer.
func (o *HostPolicyOptions) Complete() error {
	policy, err := hostpolicy.New(o.AllowedNetworks, o.AllowedPorts, nil)
	if err != nil {
		return fmt.Errorf("invalid host policy: %w", err)
	}
	o.policy = policy
	return nil
}

// Completed returns the host policy. Only call it after a successful Complete.
func (o *HostPolicyOptions) Completed() *hostpolicy.Policy {
	return o.policy
}

// LimitsOptions are the operator's limits of tenant inputs that the admission can check without
// reading other objects: the same settings as the controller's limits, with the same defaults
// (configv1alpha1.DefaultLimits). The size of additional Secrets, known_hosts in Secrets and the
// deploy keys are only checked by the controller.
type LimitsOptions struct {
	limits config.Limits
}

// NewLimitsOptions returns the options with the controller's default limits.
func NewLimitsOptions() *LimitsOptions {
	return &LimitsOptions{limits: configv1alpha1.DefaultLimits()}
}

// AddFlags implements controllercmd.Flagger.
func (o *LimitsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Int32Var(&o.limits.ProjectConfigMapMaxBytes, "limits-project-config-map-max-bytes", o.limits.ProjectConfigMapMaxBytes,
		"Maximum size of the data of a project ConfigMap flux-config; the controller's limits.projectConfigMapMaxBytes.")
	fs.Int32Var(&o.limits.ProjectConfigMaxBytes, "limits-project-config-max-bytes", o.limits.ProjectConfigMaxBytes,
		"Maximum size of config.yaml of a project ConfigMap flux-config; the controller's limits.projectConfigMaxBytes.")
	fs.Int32Var(&o.limits.KluctlArgsMaxBytes, "limits-kluctl-args-max-bytes", o.limits.KluctlArgsMaxBytes,
		"Maximum size of bootstrap.kluctl.args of a configuration layer as JSON; the controller's limits.kluctlArgsMaxBytes.")
	fs.Int32Var(&o.limits.ControllersMaxBytes, "limits-controllers-max-bytes", o.limits.ControllersMaxBytes,
		"Maximum size of controllers of a configuration layer as JSON; the controller's limits.controllersMaxBytes.")
	fs.Int32Var(&o.limits.AdditionalSecretResourcesMaxCount, "limits-additional-secret-resources-max-count", o.limits.AdditionalSecretResourcesMaxCount,
		"Maximum number of additionalSecretResources; the controller's limits.additionalSecretResourcesMaxCount.")
}

// Complete implements controllercmd.Completer.
func (o *LimitsOptions) Complete() error {
	for _, l := range []struct {
		flag  string
		value int32
	}{
		{"limits-project-config-map-max-bytes", o.limits.ProjectConfigMapMaxBytes},
		{"limits-project-config-max-bytes", o.limits.ProjectConfigMaxBytes},
		{"limits-kluctl-args-max-bytes", o.limits.KluctlArgsMaxBytes},
		{"limits-controllers-max-bytes", o.limits.ControllersMaxBytes},
		{"limits-additional-secret-resources-max-count", o.limits.AdditionalSecretResourcesMaxCount},
	} {
		if l.value <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", l.flag, l.value)
		}
	}
	return nil
}

// Completed returns the limits. Only call it after a successful Complete.
func (o *LimitsOptions) Completed() config.Limits {
	return o.limits
}

// WebhookSwitchOptions are the admission's webhooks; --disable-webhooks turns single ones off. The
// webhooks are created after the options are completed, with the completed host policy and limits.
func WebhookSwitchOptions(hosts *HostPolicyOptions, limits *LimitsOptions) *webhookcmd.SwitchOptions {
	return webhookcmd.NewSwitchOptions(
		webhookcmd.Switch(validator.ShootWebhookName, func(mgr manager.Manager) (*extensionswebhook.Webhook, error) {
			return validator.NewShootWebhook(mgr, hosts.Completed(), limits.Completed())
		}),
		webhookcmd.Switch(validator.ConfigMapWebhookName, func(mgr manager.Manager) (*extensionswebhook.Webhook, error) {
			return validator.NewConfigMapWebhook(mgr, hosts.Completed(), limits.Completed())
		}),
	)
}

// AddToManager creates the enabled webhooks and serves each at its path on the manager's webhook
// server. The webhooks are registered with the API server by the application chart (a
// ValidatingWebhookConfiguration with a caBundle from the chart values), not by this process:
// the admission needs no access to any API server.
func AddToManager(mgr manager.Manager, switches *webhookcmd.SwitchConfig) error {
	if switches.Disabled {
		return errors.New("all webhooks are disabled: the admission would serve nothing")
	}
	webhooks, err := switches.WebhooksFactory(mgr)
	if err != nil {
		return fmt.Errorf("failed creating webhooks: %w", err)
	}
	server := mgr.GetWebhookServer()
	for _, wh := range webhooks {
		server.Register(wh.Path, wh.Webhook)
	}
	return nil
}
