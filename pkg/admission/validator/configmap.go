// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// configMap validates the project ConfigMaps named flux-config.
type configMap struct {
	supported validation.SupportedVersions
	hosts     *hostpolicy.Policy
	limits    config.Limits
	// knownHosts bounds source.knownHosts of config.yaml as the extension controller does.
	knownHosts sshkey.KnownHostsLimits
	releases   releasePolicy
}

// NewConfigMapValidator returns a validator for project ConfigMaps named flux-config: it checks them
// as the extension controller decodes them, the repository host the extension would scan against
// the host policy, and the operator's limits. Other ConfigMaps are admitted; the webhook
// registration normally keeps them away.
func NewConfigMapValidator(supported validation.SupportedVersions, hosts *hostpolicy.Policy, limits config.Limits, lifecycle *releases.Lifecycle) extensionswebhook.Validator {
	return &configMap{supported: supported, hosts: hosts, limits: limits, knownHosts: sshkey.KnownHostsLimits(limits.KnownHosts()),
		releases: releasePolicy{lifecycle: lifecycle, now: time.Now}}
}

// Validate validates a created or updated ConfigMap. An update that keeps data and binaryData is
// admitted, so that labels, annotations, finalizers and deletion never fail because of a content
// that was valid when it was written.
func (c *configMap) Validate(ctx context.Context, newObj, oldObj client.Object) error {
	cm, ok := newObj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Errorf("wrong object type %T", newObj)
	}
	if cm.Name != constants.ProjectConfigMapName || cm.DeletionTimestamp != nil {
		return nil
	}
	var oldSelections []fluxconfig.Selection
	if oldObj != nil {
		old, ok := oldObj.(*corev1.ConfigMap)
		if !ok {
			return fmt.Errorf("wrong object type %T for old object", oldObj)
		}
		if maps.Equal(old.Data, cm.Data) && maps.EqualFunc(old.BinaryData, cm.BinaryData, bytes.Equal) {
			return nil
		}
		oldSelections = fluxconfig.ConfigMapSelections(old)
	}
	// First, so that an oversized document is refused without being decoded.
	if err := fluxconfig.ValidateConfigMapLimits(cm, c.limits); err != nil {
		return err
	}
	if err := fluxconfig.ValidateConfigMap(cm, c.supported, c.knownHosts); err != nil {
		return err
	}
	if errs := c.releases.check(ctx, fluxconfig.ConfigMapSelections(cm), oldSelections); len(errs) > 0 {
		return fmt.Errorf("ConfigMap %s/%s: %w", cm.Namespace, cm.Name, errs.ToAggregate())
	}
	return fluxconfig.ValidateConfigMapHost(cm, c.hosts)
}
