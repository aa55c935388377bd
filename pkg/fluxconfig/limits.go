// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// The limits of config.Limits bound what tenants make the extension read, keep and write into the
// seed; where a document's size alone is the limit it is checked before decoding, so an oversized
// input costs no more than its length. A zero limit is not checked: a loaded configuration has
// positive limits, and callers without one (tools, tests) pass zero.

// ValidateConfigMapLimits checks a project ConfigMap against the limits: the size of its data,
// of config.yaml and, in config.yaml, of bootstrap.kluctl.args, of controllers and the number of
// additionalSecretResources. Problems start with the ConfigMap and key, like ValidateConfigMap's.
func ValidateConfigMapLimits(cm *corev1.ConfigMap, limits config.Limits) error {
	if cm == nil {
		return nil
	}
	p := &problems{}
	configMapLimitProblems(cm, limits, p)
	return p.err()
}

// ProviderConfigLimitErrors checks an Extension providerConfig against the limits, like
// ValidateConfigMapLimits config.yaml, and returns field errors below fldPath, the providerConfig's
// path in the object that embeds it.
func ProviderConfigLimitErrors(raw *runtime.RawExtension, limits config.Limits, fldPath *field.Path) field.ErrorList {
	if raw == nil {
		return nil
	}
	return reroot(providerConfigLimitErrors(raw.Raw, limits, ""), fldPath)
}

// ProviderConfigTooLarge reports whether a providerConfig is over its size limit, which
// ProviderConfigLimitErrors reports: such a document is not to be decoded at all.
func ProviderConfigTooLarge(raw *runtime.RawExtension, limits config.Limits) bool {
	limit := int(limits.ProviderConfigMaxBytes)
	return raw != nil && limit > 0 && len(raw.Raw) > limit
}

// SecretsSizeError returns the configuration error for the Secrets the bootstrap of a shoot
// delivers (the source's credentials, the decryption Secret and those of
// additionalSecretResources) if their data, up to and including the Secret the user named at
// fldPath, exceed the limit; total is that sum (see SecretDataSize). The Secrets travel in the
// bootstrap ManagedResource's Secret, which every change writes anew into the seed.
func SecretsSizeError(limits config.Limits, fldPath *field.Path, total int) error {
	limit := int(limits.AdditionalSecretResourcesMaxBytes)
	if limit <= 0 || total <= limit {
		return nil
	}
	// The problem has no origin: the field may come from any layer.
	return configerror.New(tooLarge(fldPath,
		fmt.Sprintf("with this Secret, the data of the Secrets the bootstrap delivers (credentials, decryption, additionalSecretResources) has %d bytes", total),
		limit, "additionalSecretResourcesMaxBytes").Error())
}

// ConfigMapDataSize is the size of a project ConfigMap that projectConfigMapMaxBytes bounds: the
// keys and values of data and binaryData, or what the garden cache dropped of them
// (constants.AnnotationDroppedDataBytes).
func ConfigMapDataSize(cm *corev1.ConfigMap) int {
	size := SecretDataSize(cm.BinaryData)
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	if dropped, err := strconv.Atoi(cm.Annotations[constants.AnnotationDroppedDataBytes]); err == nil {
		size = max(size, dropped)
	}
	return size
}

// SecretDataSize is what a Secret's data adds to a ManagedResource: its keys and values.
func SecretDataSize(data map[string][]byte) int {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	return size
}

// limitProblems checks the tenants' layers before Resolve decodes them.
func limitProblems(limits config.Limits, cm *corev1.ConfigMap, providerConfig *runtime.RawExtension, p *problems) {
	if cm != nil {
		configMapLimitProblems(cm, limits, p)
	}
	if providerConfig != nil {
		p.addFieldErrors(originProviderConfig, providerConfigLimitErrors(providerConfig.Raw, limits, "spec.providerConfig"))
	}
}

func configMapLimitProblems(cm *corev1.ConfigMap, limits config.Limits, p *problems) {
	origin := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	errs := field.ErrorList{}
	if limit := int(limits.ProjectConfigMapMaxBytes); limit > 0 {
		if size := ConfigMapDataSize(cm); size > limit {
			errs = append(errs, tooLarge(field.NewPath("data"), fmt.Sprintf("the keys and values of data and binaryData have %d bytes", size), limit, "projectConfigMapMaxBytes"))
		}
	}
	data, ok := cm.Data[constants.ConfigMapKeyConfig]
	if limit := int(limits.ProjectConfigMaxBytes); limit > 0 && len(data) > limit {
		errs = append(errs, tooLarge(field.NewPath(constants.ConfigMapKeyConfig), fmt.Sprintf("has %d bytes", len(data)), limit, "projectConfigMaxBytes"))
	}
	if len(errs) > 0 {
		// An oversized document is not decoded.
		p.addFieldErrors(origin, errs)
		return
	}
	if ok {
		p.addFieldErrors(origin+": "+constants.ConfigMapKeyConfig, documentLimitErrors([]byte(data), limits))
	}
}

// providerConfigLimitErrors checks a providerConfig's size, before anything decodes it, and then
// its parts like documentLimitErrors. The error of the whole document names it as document.
func providerConfigLimitErrors(raw []byte, limits config.Limits, document string) field.ErrorList {
	if limit := int(limits.ProviderConfigMaxBytes); limit > 0 && len(raw) > limit {
		err := tooLarge(field.NewPath(""), fmt.Sprintf("has %d bytes", len(raw)), limit, "providerConfigMaxBytes")
		err.Field = document
		return field.ErrorList{err}
	}
	return documentLimitErrors(raw, limits)
}

// documentLimitErrors checks the parts of a FluxConfig document whose size the tenant chooses,
// measured as compact JSON, so that YAML and JSON documents and their formatting count alike. The
// paths are relative to the document. A document that does not fit the structure is left to the
// decoder, which reports that better. The keys are looked up case-sensitively, like the decoder's.
func documentLimitErrors(data []byte, limits config.Limits) field.ErrorList {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(jsonData, &doc) != nil {
		return nil
	}

	errs := field.ErrorList{}
	checkSize := func(raw json.RawMessage, path *field.Path, limit int, name string) {
		if limit <= 0 || raw == nil {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, raw) != nil {
			return
		}
		if compact.Len() > limit {
			errs = append(errs, tooLarge(path, fmt.Sprintf("has %d bytes as JSON", compact.Len()), limit, name))
		}
	}

	var bootstrap, kluctl map[string]json.RawMessage
	if json.Unmarshal(doc["bootstrap"], &bootstrap) == nil && json.Unmarshal(bootstrap["kluctl"], &kluctl) == nil {
		checkSize(kluctl["args"], field.NewPath("bootstrap", "kluctl", "args"), int(limits.KluctlArgsMaxBytes), "kluctlArgsMaxBytes")
	}
	checkSize(doc["controllers"], field.NewPath("controllers"), int(limits.ControllersMaxBytes), "controllersMaxBytes")

	var secrets []json.RawMessage
	if limit := int(limits.AdditionalSecretResourcesMaxCount); limit > 0 && json.Unmarshal(doc["additionalSecretResources"], &secrets) == nil && len(secrets) > limit {
		errs = append(errs, &field.Error{
			Type:     field.ErrorTypeTooMany,
			Field:    "additionalSecretResources",
			BadValue: len(secrets),
			Detail:   fmt.Sprintf("must have at most %d items (the operator's limit limits.additionalSecretResourcesMaxCount)", limit),
		})
	}
	return errs
}

// tooLarge is the error of an input over a size limit; it names the limit in the extension's
// configuration, so that the user knows what to ask the operator for. The value is never
// printed: it is large by definition.
func tooLarge(fldPath *field.Path, what string, limit int, name string) *field.Error {
	return &field.Error{
		Type:     field.ErrorTypeTooLong,
		Field:    fldPath.String(),
		BadValue: field.OmitValueType{},
		Detail:   fmt.Sprintf("%s, more than the operator's limit of %d bytes (limits.%s)", what, limit, name),
	}
}
