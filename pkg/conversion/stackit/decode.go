// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// markers are the fields only stackit's FluxConfig has, by the object they belong to; one of them
// makes a document stackit's. A document of fields both have (e.g. only flux.version) is this
// extension's.
var markers = map[string][]string{
	"":       {"kustomization", "syncMode", "additionalSecretResourceNames"},
	"source": {"template", "gitRepository", "ociRepository"},
	"flux":   {"registry", "componentsExtra"},
}

// APIVersion is the apiVersion of stackit's FluxConfig; this extension's group is
// shoot-flux.extensions.gardener.cloud.
const APIVersion = "flux.extensions.gardener.cloud/v1alpha1"

// Detect tells whether the JSON document is stackit's FluxConfig: of stackit's apiVersion, or
// without one and with fields only stackit's has. It returns what tells, e.g.
// "apiVersion flux.extensions.gardener.cloud/v1alpha1" or kustomization and source.template.
func Detect(jsonData []byte) (bool, []string) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(jsonData, &doc) != nil {
		return false, nil
	}
	var typeMeta metav1.TypeMeta
	if json.Unmarshal(jsonData, &typeMeta) == nil && typeMeta.APIVersion == APIVersion {
		return true, []string{"apiVersion " + APIVersion}
	}
	var found []string
	for _, key := range markers[""] {
		if _, ok := doc[key]; ok {
			found = append(found, key)
		}
	}
	for _, parent := range []string{"source", "flux"} {
		var child map[string]json.RawMessage
		if json.Unmarshal(doc[parent], &child) != nil {
			continue
		}
		for _, key := range markers[parent] {
			if _, ok := child[key]; ok {
				found = append(found, parent+"."+key)
			}
		}
	}
	slices.Sort(found)
	return len(found) > 0, found
}

var (
	strictMessage = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	plainPath     = regexp.MustCompile(`^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+|\[\d+\])*$`)
)

// Decode decodes stackit's FluxConfig strictly from JSON: an unknown or duplicate field is an error
// naming its path below fldPath. The templates are decoded by Convert.
func Decode(jsonData []byte, fldPath *field.Path) (*FluxConfig, field.ErrorList) {
	cfg := &FluxConfig{}
	return cfg, decodeStrict(jsonData, cfg, fldPath, "is not a field of stackit's FluxConfig, whose other fields this document has; this extension's own fields cannot be mixed in")
}

// decodeStrict decodes data into obj, naming unknown and duplicate fields below fldPath with the
// message unknown for unknown ones.
func decodeStrict(data []byte, obj any, fldPath *field.Path, unknown string) field.ErrorList {
	strictErrs, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, "", err.Error())}
	}
	var errs field.ErrorList
	for _, e := range strictErrs {
		m := strictMessage.FindStringSubmatch(e.Error())
		if m == nil {
			errs = append(errs, field.Invalid(fldPath, "", e.Error()))
			continue
		}
		path := m[2]
		if !plainPath.MatchString(path) {
			path = strconv.Quote(path)
		}
		if m[1] == "duplicate" {
			errs = append(errs, field.Duplicate(child(fldPath, path), nil))
			continue
		}
		errs = append(errs, field.Forbidden(child(fldPath, path), unknown))
	}
	return errs
}

// child appends a dotted path to fldPath.
func child(fldPath *field.Path, dotted string) *field.Path {
	if fldPath == nil {
		return field.NewPath(dotted)
	}
	return fldPath.Child(dotted)
}
