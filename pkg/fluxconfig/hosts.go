// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"bytes"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/conversion/stackit"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// hostNotAllowedMessage is all a user learns about a refused repository host, whichever rule
// refused it, like the controller's message about a failed scan.
const hostNotAllowedMessage = "the host is not allowed by the operator's host policy for SSH host key scans from the seed; known host keys in source.knownHosts skip the scan"

// ValidateConfigMapHost checks the repository host of a project ConfigMap against the host policy
// (hostpolicy.Policy.CheckHost) if the ConfigMap on its own makes the extension scan the host's SSH
// keys (see scannedURL). The error names the key or field of the URL, like ValidateConfigMap. A
// ConfigMap that ValidateConfigMap rejects may be checked only partly.
func ValidateConfigMapHost(cm *corev1.ConfigMap, policy *hostpolicy.Policy) error {
	if cm == nil {
		return nil
	}
	// The layers are decoded as Resolve decodes them; their own problems are ValidateConfigMap's
	// to report.
	layers := configMapLayers(cm, validation.SupportedVersions{}, sshkey.KnownHostsLimits{}, &problems{})
	merged := &v1alpha1.FluxConfig{}
	// The URL is reported where the effective one was written: a legacy key or a field.
	var urlLayer *layer
	for i, l := range layers {
		// Only the fields that decide about the scan; without kluctl args, merging cannot fail.
		part := &v1alpha1.FluxConfig{Source: l.cfg.Source}
		if l.cfg.Bootstrap != nil {
			part.Bootstrap = &v1alpha1.Bootstrap{Mode: l.cfg.Bootstrap.Mode}
		}
		_ = merge(merged, part)
		if l.cfg.Source != nil && l.cfg.Source.URL != nil {
			urlLayer = &layers[i]
		}
	}
	if urlLayer == nil {
		return nil
	}

	fldPath := field.NewPath("source", "url")
	if urlLayer.legacy {
		fldPath = field.NewPath(constants.ConfigMapKeyRepositoryURL)
	}
	p := &problems{}
	p.addFieldErrors(urlLayer.origin, hostErrors(merged, policy, fldPath))
	return p.err()
}

// ProviderConfigHostErrors checks the repository host of an Extension providerConfig against the
// host policy like ValidateConfigMapHost, as field errors below fldPath (see
// ProviderConfigFieldErrors).
func ProviderConfigHostErrors(raw *runtime.RawExtension, policy *hostpolicy.Policy, fldPath *field.Path) field.ErrorList {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	// The versions play no part in the host check.
	cfg, conv, err := decodeProviderConfig(raw.Raw, nil)
	if err != nil || cfg == nil {
		return nil
	}
	urlPath := "source.url"
	if conv != nil {
		urlPath = stackit.FieldPath(conv.stackit, urlPath)
	}
	return hostErrors(cfg, policy, fldPath.Child(urlPath))
}

func hostErrors(cfg *v1alpha1.FluxConfig, policy *hostpolicy.Policy, urlPath *field.Path) field.ErrorList {
	url, ok := scannedURL(cfg)
	if !ok {
		return nil
	}
	// HostPort has the default port of the scheme if the URL has none.
	_, portText, err := net.SplitHostPort(url.HostPort())
	if err != nil {
		return nil
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil
	}
	// One message for every refusal, like the controller's for a failed scan: which rule refused
	// the host is the operator's business, not the project members'.
	if policy.CheckHost(url.Host, uint16(port)) != nil {
		return field.ErrorList{field.Invalid(urlPath, *cfg.Source.URL, hostNotAllowedMessage)}
	}
	return nil
}

// scannedURL returns the repository URL whose SSH host key the extension would scan from the seed,
// as far as this configuration tells: an ssh URL of a private repository with a generated deploy
// key (no source.secretResourceName, no source.knownHosts). Other layers, the deploy key Secret or
// the operator's knownHosts may still skip the scan; the controller decides with all of them.
func scannedURL(cfg *v1alpha1.FluxConfig) (*helper.GitURL, bool) {
	s := cfg.Source
	if s == nil || s.URL == nil {
		return nil, false
	}
	if cfg.Bootstrap != nil && ptr.Deref(cfg.Bootstrap.Mode, "") == v1alpha1.BootstrapModeNone {
		return nil, false
	}
	if ptr.Deref(s.SecretResourceName, "") != "" || strings.TrimSpace(ptr.Deref(s.KnownHosts, "")) != "" {
		return nil, false
	}
	if ptr.Deref(s.Type, v1alpha1.RepositoryTypePrivate) != v1alpha1.RepositoryTypePrivate {
		return nil, false
	}
	url, err := helper.ParseGitURL(*s.URL)
	if err != nil || url.Scheme != helper.SchemeSSH {
		return nil, false
	}
	return url, true
}
