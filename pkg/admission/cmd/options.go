// Package cmd wires the admission webhooks of shoot-flux into a controller-runtime manager.
package cmd

import (
	"errors"
	"fmt"

	webhookcmd "github.com/gardener/gardener/extensions/pkg/webhook/cmd"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
)

// WebhookSwitchOptions are the admission's webhooks; --disable-webhooks turns single ones off.
func WebhookSwitchOptions() *webhookcmd.SwitchOptions {
	return webhookcmd.NewSwitchOptions(
		webhookcmd.Switch(validator.ShootWebhookName, validator.NewShootWebhook),
		webhookcmd.Switch(validator.ConfigMapWebhookName, validator.NewConfigMapWebhook),
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
