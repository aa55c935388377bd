// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	apivalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// MaxConcurrent bounds ControllerSettings.Concurrent: every worker holds a git checkout or a
// rendered release in memory, and more workers than objects only add memory.
const MaxConcurrent = 100

var (
	// ControllerKeys are the keys of FluxConfig.Controllers.
	ControllerKeys = append([]string{flux.ControllersDefaults}, append(slices.Clone(flux.KnownComponents), flux.ComponentKluctlController)...)

	controllerResources = []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage)}
	tolerationOperators = []string{string(corev1.TolerationOpExists), string(corev1.TolerationOpEqual)}
	taintEffects        = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
)

// ValidateControllers validates the settings of the controllers' Deployments. The paths name
// the keys as written (controllers.source-controller.resources), not in Go's index notation.
func ValidateControllers(controllers map[string]flux.ControllerSettings, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	for key, s := range controllers {
		path := fldPath.Child(key)
		if !slices.Contains(ControllerKeys, key) {
			allErrs = append(allErrs, field.NotSupported(path, key, ControllerKeys))
			continue
		}
		allErrs = append(allErrs, ValidateControllerSettings(s, path)...)
	}
	return allErrs
}

// ValidateControllerSettings validates the settings of one controller's Deployment.
func ValidateControllerSettings(s flux.ControllerSettings, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if s.Resources != nil {
		allErrs = append(allErrs, validateResources(s.Resources, fldPath.Child("resources"))...)
	}
	for i, t := range s.Tolerations {
		allErrs = append(allErrs, validateToleration(t, fldPath.Child("tolerations").Index(i))...)
	}
	allErrs = append(allErrs, metav1validation.ValidateLabels(s.NodeSelector, fldPath.Child("nodeSelector"))...)
	if s.PriorityClassName != "" {
		for _, msg := range apivalidation.IsDNS1123Subdomain(s.PriorityClassName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("priorityClassName"), s.PriorityClassName, msg))
		}
	}
	if c := s.Concurrent; c != nil && (*c < 1 || *c > MaxConcurrent) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("concurrent"), *c, fmt.Sprintf("must be between 1 and %d", MaxConcurrent)))
	}
	return allErrs
}

func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(r.Claims) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("claims"), "resource claims are not supported for the controllers"))
	}
	for _, list := range []struct {
		name string
		l    corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		for name, q := range list.l {
			path := fldPath.Child(list.name, string(name))
			if !slices.Contains(controllerResources, string(name)) {
				allErrs = append(allErrs, field.NotSupported(path, name, controllerResources))
				continue
			}
			if q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(path, q.String(), "must not be negative"))
			}
		}
	}
	for name, request := range r.Requests {
		if limit, ok := r.Limits[name]; ok && request.Cmp(limit) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("requests", string(name)), request.String(), fmt.Sprintf("must be less than or equal to the limit %s", limit.String())))
		}
	}
	return allErrs
}

// validateToleration applies the API server's rules for pod tolerations, so that a bad one is
// refused with the field the user wrote instead of by the shoot's API server, which would only
// name the Deployment.
func validateToleration(t corev1.Toleration, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if t.Key != "" {
		for _, msg := range apivalidation.IsQualifiedName(t.Key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), t.Key, msg))
		}
	}
	switch t.Operator {
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), t.Operator, "must be Exists when key is empty, which matches all taints"))
		}
		for _, msg := range apivalidation.IsValidLabelValue(t.Value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value, msg))
		}
	case corev1.TolerationOpExists:
		if t.Value != "" {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value, "must be empty when operator is Exists"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("operator"), t.Operator, tolerationOperators))
	}
	if t.Effect != "" && !slices.Contains(taintEffects, string(t.Effect)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("effect"), t.Effect, taintEffects))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("tolerationSeconds"), *t.TolerationSeconds, "may only be set with effect NoExecute"))
	}
	return allErrs
}

// ValidateNotEmptyIfSet rejects a field a configuration layer set to the empty string: unlike in the
// effective configuration, where empty means unset, the user wrote it.
func ValidateNotEmptyIfSet(value *string, fldPath *field.Path) field.ErrorList {
	if value != nil && *value == "" {
		return field.ErrorList{field.Required(fldPath, "must not be empty if set")}
	}
	return nil
}
