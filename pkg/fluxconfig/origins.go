// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// layer is one configuration layer and the words its problems are reported in.
type layer struct {
	cfg *v1alpha1.FluxConfig
	// origin names the object the layer came from, e.g. "ConfigMap garden-foo/flux-config" or
	// "Extension providerConfig".
	origin string
	// legacy marks the legacy keys of the project ConfigMap, whose users know the keys
	// (repositoryUrl, ...) and not the fields they map to (source.url, ...).
	legacy bool
}

// sourceField is a field of the source section as a layer sets it.
type sourceField struct {
	// name is the field below source.
	name string
	// legacyKey is the legacy ConfigMap key that sets the field; empty if there is none.
	legacyKey string
	set       func(*v1alpha1.Source) bool
}

var (
	sourceType = sourceField{name: "type", legacyKey: constants.ConfigMapKeyRepositoryType, set: func(s *v1alpha1.Source) bool { return s.Type != nil }}

	// sourceFields are the source fields that need a URL, in the order problems name them. A ref
	// only counts as set where it replaces the lower layers' ref (see merge).
	sourceFields = []sourceField{
		{name: "ref", legacyKey: constants.ConfigMapKeyRepositoryBranch, set: func(s *v1alpha1.Source) bool { return refIsSet(s.Ref) }},
		{name: "path", set: func(s *v1alpha1.Source) bool { return s.Path != nil }},
		sourceType,
		{name: "knownHosts", set: func(s *v1alpha1.Source) bool { return s.KnownHosts != nil }},
		{name: "secretResourceName", set: func(s *v1alpha1.Source) bool { return s.SecretResourceName != nil }},
		{name: "ignore", set: func(s *v1alpha1.Source) bool { return s.Ignore != nil }},
		{name: "provider", set: func(s *v1alpha1.Source) bool { return s.Provider != nil }},
		{name: "verify", set: func(s *v1alpha1.Source) bool { return s.Verify != nil }},
	}
)

// setter returns the layer whose value of a source field is the effective one: the last that sets
// it; nil if none does.
func setter(layers []layer, f sourceField) *layer {
	for i := len(layers) - 1; i >= 0; i-- {
		if s := layers[i].cfg.Source; s != nil && f.set(s) {
			return &layers[i]
		}
	}
	return nil
}

// missingURLProblems reports source fields that are set while no layer sets the URL. Fields that
// come from the legacy keys are reported in the ConfigMap's words (repositoryUrl: ... repositoryType
// set ...), the others on the effective configuration.
func missingURLProblems(layers []layer, p *problems) {
	const detail = "%s set but no configuration layer sets the repository URL"
	var legacyOrigin string
	var legacyKeys, fields []string
	for _, f := range sourceFields {
		l := setter(layers, f)
		switch {
		case l == nil:
		case l.legacy:
			legacyOrigin = l.origin
			legacyKeys = append(legacyKeys, f.legacyKey)
		default:
			fields = append(fields, "source."+f.name)
		}
	}
	if len(legacyKeys) > 0 {
		p.addFieldErrors(legacyOrigin, field.ErrorList{field.Required(field.NewPath(constants.ConfigMapKeyRepositoryURL),
			fmt.Sprintf(detail, strings.Join(legacyKeys, ", ")))})
	}
	if len(fields) > 0 {
		p.addFieldErrors(originEffective, field.ErrorList{field.Required(field.NewPath("source", "url"),
			fmt.Sprintf(detail, strings.Join(fields, ", ")))})
	}
}

// secretResourceNamePath is where the effective validation reports a private https repository
// without credentials.
var secretResourceNamePath = field.NewPath("source", "secretResourceName").String()

// addEffectiveProblems records the problems of the effective configuration. A rule that fails
// because of a value from the legacy keys is reported at the key: only a private https repository
// needs a rule there, as the legacy keys cannot set credentials, and repositoryType: private is
// what the user wrote.
func addEffectiveProblems(p *problems, layers []layer, errs field.ErrorList) {
	typeSetter := setter(layers, sourceType)
	for _, err := range errs {
		if err.Field == secretResourceNamePath && err.Type == field.ErrorTypeRequired && typeSetter != nil && typeSetter.legacy {
			p.addFieldErrors(typeSetter.origin, field.ErrorList{field.Invalid(field.NewPath(constants.ConfigMapKeyRepositoryType),
				string(ptr.Deref(typeSetter.cfg.Source.Type, "")),
				"a private https repository needs username/password credentials from a Shoot resource in source.secretResourceName; generated deploy keys only work with ssh URLs")})
			continue
		}
		p.addFieldErrors(originEffective, field.ErrorList{err})
	}
}
