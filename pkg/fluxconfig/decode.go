// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/install"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/conversion/stackit"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

const (
	originProviderConfig = "Extension providerConfig"
	originDefaults       = "controller configuration"
	originEffective      = "effective configuration"
)

var (
	scheme = install.NewScheme()
	// The deserializer keeps the version of the document and applies no defaults, so that unset
	// fields stay nil and do not override lower layers. Strict, so that a misspelt option is an
	// error rather than silently ignored.
	deserializer = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	fluxConfigGVK = v1alpha1.SchemeGroupVersion.WithKind("FluxConfig")

	configMapKeys = []string{
		constants.ConfigMapKeyConfig,
		constants.ConfigMapKeyFluxVersion,
		constants.ConfigMapKeyRepositoryBranch,
		constants.ConfigMapKeyRepositoryType,
		constants.ConfigMapKeyRepositoryURL,
	}
)

// decodeFluxConfig decodes one FluxConfig document, YAML or JSON. apiVersion and kind may be
// omitted; if present they must name a FluxConfig of a served version. A document without content,
// e.g. only comments, yields nil.
func decodeFluxConfig(data []byte) (*v1alpha1.FluxConfig, error) {
	// The deserializer's messages for documents that are no object are about its internals.
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	switch jsonData = bytes.TrimSpace(jsonData); {
	case bytes.Equal(jsonData, []byte("null")):
		return nil, nil
	case !bytes.HasPrefix(jsonData, []byte("{")):
		return nil, errors.New("must be a FluxConfig object")
	}

	// The decoder's message for a quantity that does not parse names no field.
	if errs := quantityErrors(jsonData); len(errs) > 0 {
		return nil, fieldErrors(errs)
	}

	obj, _, err := deserializer.Decode(data, &fluxConfigGVK, nil)
	if strictErr, ok := runtime.AsStrictDecodingError(err); ok {
		return nil, unknownFieldErrors(strictErr)
	}
	if err != nil && !runtime.IsNotRegisteredError(err) {
		return nil, err
	}
	cfg, ok := obj.(*v1alpha1.FluxConfig)
	if err != nil || !ok {
		// The scheme's own message names the scheme's source location, which means nothing to users.
		typeMeta := &metav1.TypeMeta{}
		if err := yaml.Unmarshal(data, typeMeta); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("apiVersion and kind must be %s FluxConfig or be omitted, got %s %s", v1alpha1.SchemeGroupVersion, typeMeta.APIVersion, typeMeta.Kind)
	}
	return cfg, nil
}

// quantityErrors finds the resource quantities of the controller settings that do not parse. A
// document whose structure does not fit is left to the decoder, which reports that better.
func quantityErrors(jsonData []byte) field.ErrorList {
	var doc struct {
		Controllers map[string]struct {
			Resources map[string]json.RawMessage `json:"resources"`
		} `json:"controllers"`
	}
	if json.Unmarshal(jsonData, &doc) != nil {
		return nil
	}
	var errs field.ErrorList
	for key, settings := range doc.Controllers {
		for _, list := range []string{"requests", "limits"} {
			var quantities map[string]any
			if json.Unmarshal(settings.Resources[list], &quantities) != nil {
				continue
			}
			for name, value := range quantities {
				path := field.NewPath("controllers", key, "resources", list, name)
				str, ok := value.(string)
				if !ok {
					if _, isNumber := value.(float64); isNumber {
						continue
					}
					errs = append(errs, field.Invalid(path, value, "must be a quantity, e.g. 100m or 1Gi"))
					continue
				}
				if _, err := resource.ParseQuantity(str); err != nil {
					errs = append(errs, field.Invalid(path, str, "must be a quantity, e.g. 100m or 1Gi"))
				}
			}
		}
	}
	return errs
}

// fieldErrors are decoding problems that can be blamed on fields.
type fieldErrors field.ErrorList

func (e fieldErrors) Error() string { return field.ErrorList(e).ToAggregate().Error() }

var (
	unknownFieldMessage = regexp.MustCompile(`^unknown field "(.*)"$`)
	plainFieldPath      = regexp.MustCompile(`^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+|\[\d+\])*$`)
)

// unknownFieldErrors turns the decoder's `unknown field "a.b"` messages into field errors, so
// that every problem starts with the path of the offending field.
func unknownFieldErrors(strictErr interface {
	error
	Errors() []error
}) error {
	errs := fieldErrors{}
	for _, e := range strictErr.Errors() {
		if m := unknownFieldMessage.FindStringSubmatch(e.Error()); m != nil {
			path := m[1]
			if !plainFieldPath.MatchString(path) {
				// Keep the message parseable for field names made of odd characters.
				path = strconv.Quote(path)
			}
			errs = append(errs, field.Forbidden(field.NewPath(path), "unknown field"))
			continue
		}
		return strictErr
	}
	return errs
}

// addDecodeError records a decoding problem; documentField names the document for problems that
// cannot be blamed on a field inside it.
func addDecodeError(p *problems, origin, documentField string, err error) {
	var errs fieldErrors
	if errors.As(err, &errs) {
		p.addFieldErrors(origin, field.ErrorList(errs))
		return
	}
	p.addf(origin, "%s: %v", documentField, err)
}

// configMapLayers decodes the project ConfigMap into its legacy layer and its config.yaml layer, in
// this order of precedence; the config.yaml layer is missing if the key is unset or cannot be
// decoded.
func configMapLayers(cm *corev1.ConfigMap, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits, p *problems) []layer {
	origin := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	unknownKeyMsg := "unknown key; the supported keys are " + strings.Join(configMapKeys, ", ")

	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		if !slices.Contains(configMapKeys, key) {
			p.addFieldErrors(origin, field.ErrorList{field.Forbidden(field.NewPath(key), unknownKeyMsg)})
		}
	}
	for _, key := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		p.addFieldErrors(origin, field.ErrorList{field.Forbidden(field.NewPath("binaryData").Key(key), unknownKeyMsg)})
	}

	layers := []layer{{cfg: legacyLayer(cm.Data, supported, origin, p), origin: origin, legacy: true}}

	if data, ok := cm.Data[constants.ConfigMapKeyConfig]; ok && strings.TrimSpace(data) != "" {
		yamlOrigin := origin + ": " + constants.ConfigMapKeyConfig
		cfg, err := decodeFluxConfig([]byte(data))
		switch {
		case err != nil:
			var errs fieldErrors
			if errors.As(err, &errs) {
				p.addFieldErrors(yamlOrigin, field.ErrorList(errs))
			} else {
				p.addf(origin, "%s: %v", constants.ConfigMapKeyConfig, err)
			}
		case cfg != nil:
			p.addFieldErrors(yamlOrigin, validateLayer(cfg, supported, knownHosts))
			layers = append(layers, layer{cfg: cfg, origin: yamlOrigin})
		}
	}
	return layers
}

// legacyLayer reads the keys of the original 23technologies extension. Field errors name the key,
// which is what the user wrote. Empty values count as unset, as they did there.
func legacyLayer(data map[string]string, supported validation.SupportedVersions, origin string, p *problems) *v1alpha1.FluxConfig {
	value := func(key string) (string, bool) {
		v := strings.TrimSpace(data[key])
		return v, v != ""
	}
	cfg := &v1alpha1.FluxConfig{}
	allErrs := field.ErrorList{}

	if v, ok := value(constants.ConfigMapKeyFluxVersion); ok {
		allErrs = append(allErrs, validation.ValidateVersion(v, supported.Flux, field.NewPath(constants.ConfigMapKeyFluxVersion))...)
		cfg.Flux = &v1alpha1.Flux{Version: &v}
	}

	source := &v1alpha1.Source{}
	if v, ok := value(constants.ConfigMapKeyRepositoryURL); ok {
		allErrs = append(allErrs, validation.ValidateGitURL(v, field.NewPath(constants.ConfigMapKeyRepositoryURL))...)
		source.URL = &v
	}
	if v, ok := value(constants.ConfigMapKeyRepositoryBranch); ok {
		allErrs = append(allErrs, validation.ValidateRefName(v, field.NewPath(constants.ConfigMapKeyRepositoryBranch))...)
		source.Ref = &v1alpha1.GitRef{Branch: &v}
	}
	if v, ok := value(constants.ConfigMapKeyRepositoryType); ok {
		repoType := v1alpha1.RepositoryType(v)
		allErrs = append(allErrs, validation.ValidateRepositoryType(flux.RepositoryType(repoType), field.NewPath(constants.ConfigMapKeyRepositoryType))...)
		source.Type = &repoType
	}
	if *source != (v1alpha1.Source{}) {
		cfg.Source = source
	}

	p.addFieldErrors(origin, allErrs)
	return cfg
}

// providerConfigLayer decodes the Extension providerConfig; nil if there is none.
func providerConfigLayer(raw *runtime.RawExtension, supported validation.SupportedVersions, knownHosts sshkey.KnownHostsLimits, p *problems) *v1alpha1.FluxConfig {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	cfg, conv, err := decodeProviderConfig(raw.Raw, supported.Flux)
	if err != nil {
		// A document that cannot be decoded has no field to blame; name the document itself.
		addDecodeError(p, originProviderConfig, "spec.providerConfig", err)
		return nil
	}
	if cfg != nil {
		p.addFieldErrors(originProviderConfig, conv.fieldPaths(validateLayer(cfg, supported, knownHosts)))
	}
	return cfg
}

// Conversion is what became of a providerConfig written for stackit's extension.
type Conversion struct {
	// Native is the converted providerConfig in this extension's format, as YAML.
	Native string
	// Warnings tell where the converted configuration behaves differently from stackit's extension.
	Warnings []string
	stackit  *stackit.FluxConfig
}

// fieldPaths renames the fields of errors about the converted configuration to the fields of
// stackit's document; nil converts nothing.
func (c *Conversion) fieldPaths(errs field.ErrorList) field.ErrorList {
	if c == nil {
		return errs
	}
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		renamed := *e
		renamed.Field = stackit.FieldPath(c.stackit, e.Field)
		out = append(out, &renamed)
	}
	return out
}

// ProviderConfigConversion returns the conversion of a providerConfig written for stackit's
// extension with the embedded releases of supported; nil for one of this extension or one that
// cannot be decoded, whose problems the validation reports.
func ProviderConfigConversion(raw *runtime.RawExtension, supported validation.SupportedVersions) *Conversion {
	if raw == nil || len(bytes.TrimSpace(raw.Raw)) == 0 {
		return nil
	}
	_, conv, err := decodeProviderConfig(raw.Raw, supported.Flux)
	if err != nil {
		return nil
	}
	return conv
}

// decodeProviderConfig decodes a providerConfig: this extension's FluxConfig, or stackit's, which
// registers the same type with other fields (see package stackit); then the conversion is returned
// too. Only providerConfigs can be stackit's: its extension never read the project ConfigMap.
// embeddedFlux are the embedded Flux releases, which decide what becomes of stackit's flux.version.
func decodeProviderConfig(data []byte, embeddedFlux []string) (*v1alpha1.FluxConfig, *Conversion, error) {
	jsonData, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, err
	}
	isStackit, markers := stackit.Detect(jsonData)
	if !isStackit {
		cfg, err := decodeFluxConfig(data)
		return cfg, nil, err
	}
	if err := checkTypeMeta(data); err != nil {
		return nil, nil, err
	}
	in, errs := stackit.Decode(jsonData, nil)
	if len(errs) > 0 {
		return nil, nil, fieldErrors(errs)
	}
	cfg, warnings, errs := stackit.Convert(in, embeddedFlux, nil)
	if len(errs) > 0 {
		return nil, nil, fieldErrors(errs)
	}
	native, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("failed serializing the converted configuration: %w", err)
	}
	warnings = append([]string{fmt.Sprintf("is stackit's FluxConfig (it sets %s); it is converted into this extension's FluxConfig, which the "+
		"Extension's status.providerStatus.nativeProviderConfig shows: write that instead", strings.Join(markers, ", "))}, warnings...)
	return cfg, &Conversion{Native: string(native), Warnings: warnings, stackit: in}, nil
}

// checkTypeMeta refuses a document with stackit's fields of another apiVersion or kind than stackit's
// FluxConfig.
func checkTypeMeta(data []byte) error {
	typeMeta := &metav1.TypeMeta{}
	if err := yaml.Unmarshal(data, typeMeta); err != nil {
		return err
	}
	if (typeMeta.APIVersion == "" || typeMeta.APIVersion == stackit.APIVersion) && (typeMeta.Kind == "" || typeMeta.Kind == fluxConfigGVK.Kind) {
		return nil
	}
	return fmt.Errorf("apiVersion and kind of stackit's FluxConfig must be %s FluxConfig, got %s %s", stackit.APIVersion, typeMeta.APIVersion, typeMeta.Kind)
}

// defaultsLayer turns the operator's default versions into the lowest layer.
func defaultsLayer(defaults Defaults, supported validation.SupportedVersions, p *problems) *v1alpha1.FluxConfig {
	cfg := &v1alpha1.FluxConfig{}
	allErrs := field.ErrorList{}
	if defaults.FluxVersion != "" {
		v := defaults.FluxVersion
		allErrs = append(allErrs, validation.ValidateVersion(v, supported.Flux, field.NewPath("defaultFluxVersion"))...)
		cfg.Flux = &v1alpha1.Flux{Version: &v}
	}
	if defaults.KluctlVersion != "" {
		v := defaults.KluctlVersion
		allErrs = append(allErrs, validation.ValidateVersion(v, supported.Kluctl, field.NewPath("defaultKluctlVersion"))...)
		cfg.Kluctl = &v1alpha1.Kluctl{Version: &v}
	}
	if defaults.Controllers != nil {
		allErrs = append(allErrs, ValidateControllers(defaults.Controllers, field.NewPath("controllers"))...)
		cfg.Controllers = defaults.Controllers
	}
	p.addFieldErrors(originDefaults, allErrs)
	return cfg
}
