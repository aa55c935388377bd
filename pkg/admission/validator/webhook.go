// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package validator contains the validating admission webhooks of shoot-flux for the garden
// cluster: the shoot-flux providerConfig of Shoots and the project ConfigMaps named flux-config.
// They apply the checks of the extension controller (package fluxconfig) when the user writes the
// object, so that mistakes are rejected by kubectl instead of surfacing later as a failed Extension.
package validator

import (
	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

const (
	// ShootWebhookName is the name of the Shoot webhook, also for --disable-webhooks.
	ShootWebhookName = "shoots"
	// ShootWebhookPath is the path the Shoot webhook is served at.
	ShootWebhookPath = "/webhooks/shoots"
	// ConfigMapWebhookName is the name of the project ConfigMap webhook, also for --disable-webhooks.
	ConfigMapWebhookName = "configmaps"
	// ConfigMapWebhookPath is the path the project ConfigMap webhook is served at.
	ConfigMapWebhookPath = "/webhooks/configmaps"
)

// AddToScheme adds the types the webhooks decode (core/v1 and core.gardener.cloud/v1beta1) to a
// scheme. The webhook handlers look up the kind of a request in the manager's scheme.
var AddToScheme = schemeBuilder.AddToScheme

var schemeBuilder = runtime.NewSchemeBuilder(clientgoscheme.AddToScheme, gardencorev1beta1.AddToScheme)

// NewShootWebhook creates the webhook that validates the shoot-flux providerConfig of Shoots, with
// the operator's host policy for repository hosts and limits of tenant inputs.
func NewShootWebhook(mgr manager.Manager, hosts *hostpolicy.Policy, limits config.Limits, lifecycle *releases.Lifecycle) (*extensionswebhook.Webhook, error) {
	return newWebhook(mgr, extensionswebhook.Args{
		Name: ShootWebhookName,
		Path: ShootWebhookPath,
		// The target only matters for gardener's automatic webhook registration, which this
		// admission does not use: the application chart registers the webhooks.
		Target: extensionswebhook.TargetSeed,
		Validators: map[extensionswebhook.Validator][]extensionswebhook.Type{
			NewShootValidator(manifests.SupportedVersions(), hosts, limits, lifecycle): {{Obj: &gardencorev1beta1.Shoot{}}},
		},
	})
}

// NewConfigMapWebhook creates the webhook that validates the project ConfigMaps named flux-config,
// with the operator's host policy for repository hosts and limits of tenant inputs.
func NewConfigMapWebhook(mgr manager.Manager, hosts *hostpolicy.Policy, limits config.Limits, lifecycle *releases.Lifecycle) (*extensionswebhook.Webhook, error) {
	return newWebhook(mgr, extensionswebhook.Args{
		Name:   ConfigMapWebhookName,
		Path:   ConfigMapWebhookPath,
		Target: extensionswebhook.TargetSeed,
		Validators: map[extensionswebhook.Validator][]extensionswebhook.Type{
			NewConfigMapValidator(manifests.SupportedVersions(), hosts, limits, lifecycle): {{Obj: &corev1.ConfigMap{}}},
		},
	})
}

// newWebhook creates a webhook with gardener's handler, whose responses carry the warnings of the
// validators.
func newWebhook(mgr manager.Manager, args extensionswebhook.Args) (*extensionswebhook.Webhook, error) {
	wh, err := extensionswebhook.New(mgr, args)
	if err != nil {
		return nil, err
	}
	wh.Webhook.Handler = withWarnings(wh.Webhook.Handler)
	return wh, nil
}
