// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"regexp"
	"slices"

	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// The bounds of the fields of the bootstrap source and Kustomization that a tenant writes and the
// extension renders into the shoot: one process serves every project of a seed, so no tenant may
// make it hold, hash and write large objects.
const (
	// MaxIgnoreBytes bounds source.ignore and source.oci.ignore.
	MaxIgnoreBytes = 4096
	// MaxSubstituteVariables bounds the variables of bootstrap.flux.postBuild.substitute.
	MaxSubstituteVariables = 100
	// MaxVariableNameLength bounds the name of a variable.
	MaxVariableNameLength = 128
	// MaxVariableValueBytes bounds the value of a variable.
	MaxVariableValueBytes = 4096
	// MaxSubstituteFrom bounds the entries of bootstrap.flux.postBuild.substituteFrom.
	MaxSubstituteFrom = 20
	// MaxPatches bounds the entries of bootstrap.flux.patches.
	MaxPatches = 20
	// MaxPatchBytes bounds the patch of an entry of bootstrap.flux.patches.
	MaxPatchBytes = 16384
	// MaxPatchSelectorLength bounds each field of a patch's target.
	MaxPatchSelectorLength = 1024
)

var (
	// variableName is kustomize-controller's rule for the names of substitution variables
	// (^[_[:alpha:]][_[:alpha:][:digit:]]*$): a Kustomization with another fails as a whole.
	variableName = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

	substituteKinds = []string{"ConfigMap", "Secret"}
)

// ValidateIgnore checks the size of the ignore rules of a source.
func ValidateIgnore(ignore *string, fldPath *field.Path) field.ErrorList {
	if ignore != nil && len(*ignore) > MaxIgnoreBytes {
		return field.ErrorList{tooLong(fldPath, len(*ignore), MaxIgnoreBytes)}
	}
	return nil
}

// ValidatePostBuild checks the variables of the bootstrap Kustomization: their number and size,
// their names by kustomize-controller's rule, that none is a variable of the ConfigMap shoot-info
// (whose values the Kustomization's own would replace), and the ConfigMaps and Secrets to
// substitute from. Too many variables or entries are reported without looking at each.
func ValidatePostBuild(p *flux.PostBuild, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := field.ErrorList{}
	subPath := fldPath.Child("substitute")
	if n := len(p.Substitute); n > MaxSubstituteVariables {
		allErrs = append(allErrs, field.TooMany(subPath, n, MaxSubstituteVariables))
	} else {
		keys := make([]string, 0, n)
		for k := range p.Substitute {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			allErrs = append(allErrs, validateVariable(k, p.Substitute[k], subPath)...)
		}
	}

	fromPath := fldPath.Child("substituteFrom")
	if n := len(p.SubstituteFrom); n > MaxSubstituteFrom {
		return append(allErrs, field.TooMany(fromPath, n, MaxSubstituteFrom))
	}
	for i, ref := range p.SubstituteFrom {
		allErrs = append(allErrs, ValidateSubstituteReference(ref, fromPath.Index(i))...)
	}
	return allErrs
}

func validateVariable(name, value string, fldPath *field.Path) field.ErrorList {
	if len(name) > MaxVariableNameLength {
		// The path names the variable by its beginning: the name itself may be large.
		return field.ErrorList{field.TooLongCharacters(fldPath.Key(name[:MaxVariableNameLength]+"..."), name, MaxVariableNameLength)}
	}
	path := fldPath.Key(name)
	allErrs := field.ErrorList{}
	switch {
	case !variableName.MatchString(name):
		allErrs = append(allErrs, field.Invalid(path, name, "must be a variable name of Flux: a letter or '_', then letters, digits and '_' (^[_a-zA-Z][_a-zA-Z0-9]*$)"))
	case slices.Contains(constants.ShootInfoVariables, name):
		allErrs = append(allErrs, field.Forbidden(path, fmt.Sprintf(
			"is a variable of the ConfigMap %s (bootstrap.shootInfo), whose value this one would replace; name the variable differently", constants.ShootInfoConfigMapName)))
	}
	if len(value) > MaxVariableValueBytes {
		allErrs = append(allErrs, tooLong(path, len(value), MaxVariableValueBytes))
	}
	return allErrs
}

// ValidateSubstituteReference checks an entry of bootstrap.flux.postBuild.substituteFrom: a
// ConfigMap or Secret by a name it can have, other than the ConfigMap shoot-info, which
// bootstrap.shootInfo delivers and substitutes.
func ValidateSubstituteReference(ref flux.SubstituteReference, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if !slices.Contains(substituteKinds, ref.Kind) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), ref.Kind, substituteKinds))
	}
	namePath := fldPath.Child("name")
	switch {
	case len(ref.Name) > apivalidation.DNS1123SubdomainMaxLength:
		allErrs = append(allErrs, field.TooLongCharacters(namePath, ref.Name, apivalidation.DNS1123SubdomainMaxLength))
	case ref.Kind == "ConfigMap" && ref.Name == constants.ShootInfoConfigMapName:
		allErrs = append(allErrs, field.Forbidden(fldPath,
			"is the ConfigMap bootstrap.shootInfo delivers, which the Kustomization substitutes from after these entries; remove it"))
	default:
		allErrs = append(allErrs, validateObjectName(ref.Name, namePath, apivalidation.IsDNS1123Subdomain)...)
	}
	return allErrs
}

// ValidatePatches checks the number and size of the Kustomization's patches. Their content is
// left to kustomize-controller, which reports a patch it cannot apply in the Kustomization's
// status; too many patches are reported without looking at each.
func ValidatePatches(patches []flux.Patch, fldPath *field.Path) field.ErrorList {
	if n := len(patches); n > MaxPatches {
		return field.ErrorList{field.TooMany(fldPath, n, MaxPatches)}
	}
	allErrs := field.ErrorList{}
	for i, p := range patches {
		path := fldPath.Index(i)
		switch {
		case p.Patch == "":
			allErrs = append(allErrs, field.Required(path.Child("patch"), "must not be empty"))
		case len(p.Patch) > MaxPatchBytes:
			allErrs = append(allErrs, tooLong(path.Child("patch"), len(p.Patch), MaxPatchBytes))
		}
		if t := p.Target; t != nil {
			for _, f := range []struct{ name, value string }{
				{"group", t.Group}, {"version", t.Version}, {"kind", t.Kind}, {"name", t.Name}, {"namespace", t.Namespace},
				{"annotationSelector", t.AnnotationSelector}, {"labelSelector", t.LabelSelector},
			} {
				if len(f.value) > MaxPatchSelectorLength {
					allErrs = append(allErrs, tooLong(path.Child("target", f.name), len(f.value), MaxPatchSelectorLength))
				}
			}
		}
	}
	return allErrs
}

// tooLong is the error of a value over a size bound; the value is not printed.
func tooLong(fldPath *field.Path, size, limit int) *field.Error {
	return &field.Error{
		Type:     field.ErrorTypeTooLong,
		Field:    fldPath.String(),
		BadValue: field.OmitValueType{},
		Detail:   fmt.Sprintf("has %d bytes, more than %d", size, limit),
	}
}
