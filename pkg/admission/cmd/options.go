// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package cmd wires the admission webhooks of shoot-flux into a controller-runtime manager.
package cmd

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	webhookcmd "github.com/gardener/gardener/extensions/pkg/webhook/cmd"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	configv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
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

// LimitsOptions are the operator's limits of tenant inputs: the controller's limits and defaults
// (configv1alpha1.DefaultLimits), one flag --limits-<field> per field of config.Limits, made from
// the fields so that the admission takes every limit the controller has. The admission checks
// those it can without reading other objects; the rest only the controller checks.
type LimitsOptions struct {
	limits config.Limits
}

// NewLimitsOptions returns the options with the controller's default limits.
func NewLimitsOptions() *LimitsOptions {
	return &LimitsOptions{limits: configv1alpha1.DefaultLimits()}
}

// limitFlag is the flag of one field of config.Limits.
type limitFlag struct {
	// flag is the flag's name, field the configuration field's JSON name.
	flag, field string
	value       *int32
}

// flags returns a flag per field of o.limits, in the order of the fields.
func (o *LimitsOptions) flags() []limitFlag {
	v := reflect.ValueOf(&o.limits).Elem()
	out := make([]limitFlag, 0, v.NumField())
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		out = append(out, limitFlag{
			flag:  "limits-" + kebab(name),
			field: strings.ToLower(name[:1]) + name[1:],
			value: v.Field(i).Addr().Interface().(*int32),
		})
	}
	return out
}

// kebab turns a Go field name into a flag's words: ProjectConfigMapMaxBytes becomes
// project-config-map-max-bytes, as helm's kebabcase does with the JSON name.
func kebab(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// AddFlags implements controllercmd.Flagger.
func (o *LimitsOptions) AddFlags(fs *pflag.FlagSet) {
	for _, f := range o.flags() {
		fs.Int32Var(f.value, f.flag, *f.value, "The controller's limits."+f.field+" (see docs/operations/configuration.md, \"Limits\").")
	}
}

// Complete implements controllercmd.Completer.
func (o *LimitsOptions) Complete() error {
	for _, f := range o.flags() {
		if *f.value <= 0 {
			return fmt.Errorf("--%s must be positive, got %d", f.flag, *f.value)
		}
	}
	return nil
}

// Completed returns the limits. Only call it after a successful Complete.
func (o *LimitsOptions) Completed() config.Limits {
	return o.limits
}

// ReleasesOptions are the operator's lifecycle of the embedded releases, the controller's
// rollout.releases: the flag --rollout-releases takes the same document as JSON, e.g.
// {"flux":[{"version":"v2.7.5","classification":"deprecated","expirationDate":"2027-03-01T00:00:00Z"}]},
// decoded strictly, defaulted and validated as the controller's configuration is.
type ReleasesOptions struct {
	raw       string
	lifecycle *releases.Lifecycle
	// now is the time expiration dates are checked against.
	now func() time.Time
}

// NewReleasesOptions returns the options without a lifecycle: every embedded release supported.
func NewReleasesOptions() *ReleasesOptions {
	return &ReleasesOptions{now: time.Now}
}

// AddFlags implements controllercmd.Flagger.
func (o *ReleasesOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.raw, "rollout-releases", o.raw,
		"The controller's rollout.releases as JSON: the classification and expirationDate of embedded releases (see docs/operations/upgrades.md).")
}

// Complete implements controllercmd.Completer.
func (o *ReleasesOptions) Complete() error {
	cfg, err := configv1alpha1.DecodeReleases([]byte(o.raw))
	if err != nil {
		return fmt.Errorf("--rollout-releases: %w", err)
	}
	fldPath := field.NewPath("rollout", "releases")
	if errs := releases.Validate(cfg, manifests.SupportedVersions(), o.now(), fldPath); len(errs) > 0 {
		return fmt.Errorf("--rollout-releases: %w", errs.ToAggregate())
	}
	o.lifecycle = releases.New(cfg, manifests.SupportedVersions())
	return nil
}

// Completed returns the lifecycle. Only call it after a successful Complete.
func (o *ReleasesOptions) Completed() *releases.Lifecycle {
	return o.lifecycle
}

// WebhookSwitchOptions are the admission's webhooks; --disable-webhooks turns single ones off. The
// webhooks are created after the options are completed, with the completed host policy, limits
// and release lifecycle.
func WebhookSwitchOptions(hosts *HostPolicyOptions, limits *LimitsOptions, lifecycle *ReleasesOptions) *webhookcmd.SwitchOptions {
	return webhookcmd.NewSwitchOptions(
		webhookcmd.Switch(validator.ShootWebhookName, func(mgr manager.Manager) (*extensionswebhook.Webhook, error) {
			return validator.NewShootWebhook(mgr, hosts.Completed(), limits.Completed(), lifecycle.Completed())
		}),
		webhookcmd.Switch(validator.ConfigMapWebhookName, func(mgr manager.Manager) (*extensionswebhook.Webhook, error) {
			return validator.NewConfigMapWebhook(mgr, hosts.Completed(), limits.Completed(), lifecycle.Completed())
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
