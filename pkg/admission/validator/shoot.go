// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	extensionswebhook "github.com/gardener/gardener/extensions/pkg/webhook"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/hostpolicy"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// shoot validates the shoot-flux extension of Shoots.
type shoot struct {
	supported validation.SupportedVersions
	hosts     *hostpolicy.Policy
	limits    config.Limits
	// knownHosts bounds source.knownHosts of the providerConfig as the extension controller does.
	knownHosts sshkey.KnownHostsLimits
	releases   releasePolicy
}

// NewShootValidator returns a validator for the shoot-flux entry of a Shoot's spec.extensions: the
// providerConfig as the controller checks it, the repository host it would scan against the host
// policy (without DNS and seed networks, which only the controller knows), the referenced
// spec.resources and the operator's limits. With the release lifecycle (nil for none) it denies a
// new selection of an expired release and warns about deprecated, preview and expiring ones.
func NewShootValidator(supported validation.SupportedVersions, hosts *hostpolicy.Policy, limits config.Limits, lifecycle *releases.Lifecycle) extensionswebhook.Validator {
	return &shoot{supported: supported, hosts: hosts, limits: limits, knownHosts: sshkey.KnownHostsLimits(limits.KnownHosts()),
		releases: releasePolicy{lifecycle: lifecycle, now: time.Now}}
}

// Validate validates a created or updated Shoot. An update is only checked for what it changes:
// a providerConfig that is still as before is not validated again, so that a Shoot whose
// configuration has become invalid (e.g. after an extension upgrade dropped a Flux version) can
// still get unrelated changes such as annotations, maintenance or its deletion.
func (s *shoot) Validate(ctx context.Context, newObj, oldObj client.Object) error {
	newShoot, ok := newObj.(*gardencorev1beta1.Shoot)
	if !ok {
		return fmt.Errorf("wrong object type %T", newObj)
	}
	// While a Shoot is being deleted, gardener only removes finalizers and sets annotations.
	if newShoot.DeletionTimestamp != nil {
		return nil
	}
	idx, ext := findExtension(newShoot)
	if ext == nil {
		return nil
	}
	fldPath := field.NewPath("spec", "extensions").Index(idx).Child("providerConfig")

	var oldShoot *gardencorev1beta1.Shoot
	var oldExt *gardencorev1beta1.Extension
	if oldObj != nil {
		if oldShoot, ok = oldObj.(*gardencorev1beta1.Shoot); !ok {
			return fmt.Errorf("wrong object type %T for old object", oldObj)
		}
		_, oldExt = findExtension(oldShoot)
	}

	// Sizes before decoding: each providerConfig is decoded up to five times below, and a Shoot
	// may be megabytes large. An old one over the limit (which the operator may have lowered since)
	// is not decoded either.
	tooLarge := fluxconfig.ProviderConfigTooLarge(ext.ProviderConfig, s.limits)
	oldTooLarge := oldExt != nil && fluxconfig.ProviderConfigTooLarge(oldExt.ProviderConfig, s.limits)

	var errs field.ErrorList
	configChanged := oldExt == nil || !sameProviderConfig(oldExt.ProviderConfig, ext.ProviderConfig, !tooLarge && !oldTooLarge)
	if configChanged {
		if limitErrs := fluxconfig.ProviderConfigLimitErrors(ext.ProviderConfig, s.limits, fldPath); len(limitErrs) > 0 {
			// An input over a limit is not checked further, as the controller does.
			return limitErrs.ToAggregate()
		}
		errs = append(errs, fluxconfig.ProviderConfigFieldErrors(ext.ProviderConfig, s.supported, s.knownHosts, fldPath)...)
		errs = append(errs, fluxconfig.ProviderConfigHostErrors(ext.ProviderConfig, s.hosts, fldPath)...)
		if conv := fluxconfig.ProviderConfigConversion(ext.ProviderConfig, s.supported); conv != nil && len(errs) == 0 {
			for _, w := range conv.Warnings {
				addWarning(ctx, fldPath.String()+" "+w)
			}
		}
	} else if tooLarge {
		// Unchanged, and so not validated again; the controller reports it.
		return nil
	}
	var oldSelections []fluxconfig.Selection
	if oldExt != nil && !oldTooLarge {
		oldSelections = fluxconfig.ProviderConfigSelections(oldExt.ProviderConfig, s.supported, fldPath)
	}
	selections := fluxconfig.ProviderConfigSelections(ext.ProviderConfig, s.supported, fldPath)
	errs = append(errs, s.releases.check(ctx, selections, oldSelections)...)
	oldKubernetes := ""
	if oldShoot != nil {
		oldKubernetes = oldShoot.Spec.Kubernetes.Version
	}
	errs = append(errs, s.kubernetesCheck(ctx, selections, oldSelections, newShoot.Spec.Kubernetes.Version, oldKubernetes)...)

	refErrs := referenceErrors(ext.ProviderConfig, newShoot.Spec.Resources, fldPath)
	if !configChanged {
		// Only a change of spec.resources can break a reference of an unchanged configuration,
		// and only references broken by this change are the user's to fix now.
		refErrs = newErrors(refErrs, referenceErrors(oldExt.ProviderConfig, oldShoot.Spec.Resources, fldPath))
	}
	errs = append(errs, refErrs...)
	return errs.ToAggregate()
}

// kubernetesCheck applies the Kubernetes ranges of the Flux releases (package releases): a new
// selection of a release that does not support the shoot's Kubernetes version is denied, and so
// is nothing else: a Kubernetes upgrade that leaves the range of the selected release draws a
// warning, since the extension keeps the installed release then (and the Shoot's upgrade is not
// this extension's to stop). A selection is new unless old selects the same release.
func (s *shoot) kubernetesCheck(ctx context.Context, selections, old []fluxconfig.Selection, kubernetes, oldKubernetes string) field.ErrorList {
	if kubernetes == "" {
		return nil
	}
	embedded := s.supported.Flux
	var errs field.ErrorList
	selected := false
	for _, sel := range selections {
		if sel.Component != "flux" {
			continue
		}
		release, err := helper.ResolveVersion(sel.Selector, embedded)
		if err != nil {
			// The field validation reports it.
			continue
		}
		selected = true
		if releases.FluxSupportsKubernetes(release, kubernetes) {
			continue
		}
		msg := releases.KubernetesWarning("selects Flux", release, kubernetes, embedded)
		if !selectsRelease(old, release, embedded) {
			errs = append(errs, field.Invalid(sel.Field, sel.Selector, msg))
			continue
		}
		if kubernetes != oldKubernetes {
			addWarning(ctx, fmt.Sprintf("%s %s; the extension keeps the installed Flux release until the selection fits", sel.Field, msg))
		}
	}
	if !selected && kubernetes != oldKubernetes && releases.NewestForKubernetes(embedded, kubernetes) == "" {
		addWarning(ctx, fmt.Sprintf("no embedded Flux release supports Kubernetes %s (%s); the extension keeps the installed Flux release",
			kubernetes, releases.KubernetesRanges(embedded)))
	}
	return errs
}

func selectsRelease(selections []fluxconfig.Selection, release string, embedded []string) bool {
	for _, s := range selections {
		if s.Component != "flux" {
			continue
		}
		if resolved, err := helper.ResolveVersion(s.Selector, embedded); err == nil && resolved == release {
			return true
		}
	}
	return false
}

// findExtension returns the enabled shoot-flux entry of spec.extensions and its index; nil if
// there is none. gardener rejects Shoots with two entries of the same type.
func findExtension(shoot *gardencorev1beta1.Shoot) (int, *gardencorev1beta1.Extension) {
	idx := slices.IndexFunc(shoot.Spec.Extensions, func(e gardencorev1beta1.Extension) bool {
		return e.Type == constants.ExtensionType
	})
	if idx < 0 {
		return -1, nil
	}
	ext := &shoot.Spec.Extensions[idx]
	if ext.Disabled != nil && *ext.Disabled {
		return -1, nil
	}
	return idx, ext
}

// sameProviderConfig compares two providerConfigs by content, so that a different serialisation
// of the same document does not count as a change; without decode, only by their bytes.
func sameProviderConfig(a, b *runtime.RawExtension, decode bool) bool {
	rawA, rawB := rawBytes(a), rawBytes(b)
	if bytes.Equal(rawA, rawB) {
		return true
	}
	if !decode {
		return false
	}
	var objA, objB any
	if yaml.Unmarshal(rawA, &objA) != nil || yaml.Unmarshal(rawB, &objB) != nil {
		return false
	}
	return reflect.DeepEqual(objA, objB)
}

func rawBytes(raw *runtime.RawExtension) []byte {
	if raw == nil {
		return nil
	}
	return bytes.TrimSpace(raw.Raw)
}

// referenceErrors checks that every Shoot resource the providerConfig names is an entry of
// spec.resources that references a v1 Secret, which is what the extension controller reads. A
// providerConfig that cannot be decoded has no references to check; providerConfigErrors reports it.
func referenceErrors(raw *runtime.RawExtension, resources []gardencorev1beta1.NamedResourceReference, fldPath *field.Path) field.ErrorList {
	data := rawBytes(raw)
	if len(data) == 0 {
		return nil
	}
	cfg := &fluxv1alpha1.FluxConfig{}
	if err := yaml.Unmarshal(data, cfg); err != nil {
		return nil
	}

	allErrs := field.ErrorList{}
	check := func(path *field.Path, name string) {
		if name == "" {
			// Empty names are the field validation's to report.
			return
		}
		idx := slices.IndexFunc(resources, func(r gardencorev1beta1.NamedResourceReference) bool { return r.Name == name })
		if idx < 0 {
			allErrs = append(allErrs, field.Invalid(path, name, "must name an entry of spec.resources"))
			return
		}
		if ref := resources[idx].ResourceRef; ref.APIVersion != "v1" || ref.Kind != "Secret" {
			allErrs = append(allErrs, field.Invalid(path, name,
				fmt.Sprintf("spec.resources[%d] references %s %s, but the resource must be a v1 Secret", idx, ref.APIVersion, ref.Kind)))
		}
	}

	if cfg.Source != nil && cfg.Source.SecretResourceName != nil {
		check(fldPath.Child("source", "secretResourceName"), *cfg.Source.SecretResourceName)
	}
	if cfg.Source != nil && cfg.Source.OCI != nil && cfg.Source.OCI.SecretResourceName != nil {
		check(fldPath.Child("source", "oci", "secretResourceName"), *cfg.Source.OCI.SecretResourceName)
	}
	if b := cfg.Bootstrap; b != nil && b.Kluctl != nil && b.Kluctl.Decryption != nil {
		check(fldPath.Child("bootstrap", "kluctl", "decryption", "secretResourceName"), b.Kluctl.Decryption.SecretResourceName)
	}
	if b := cfg.Bootstrap; b != nil && b.Flux != nil && b.Flux.Decryption != nil {
		check(fldPath.Child("bootstrap", "flux", "decryption", "secretResourceName"), b.Flux.Decryption.SecretResourceName)
	}
	for i, r := range cfg.AdditionalSecretResources {
		check(fldPath.Child("additionalSecretResources").Index(i).Child("name"), r.Name)
	}
	return allErrs
}

// newErrors returns the errors of current that are not in previous.
func newErrors(current, previous field.ErrorList) field.ErrorList {
	seen := make(map[string]bool, len(previous))
	for _, err := range previous {
		seen[err.Error()] = true
	}
	var out field.ErrorList
	for _, err := range current {
		if !seen[err.Error()] {
			out = append(out, err)
		}
	}
	return out
}
