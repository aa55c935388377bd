// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit

import (
	"encoding/json"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const unsupported = "is not supported by this extension's bootstrap objects; remove it, or set it on a Flux object of the repository (docs/usage/migration.md)"

// template checks that a template sets only the fields this extension honours (allowed lists the
// allowed fields of spec and its nested objects) and decodes it strictly into obj.
func (c *converter) template(data json.RawMessage, obj any, fldPath *field.Path, allowed map[string][]string) bool {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		c.errs = append(c.errs, field.Invalid(fldPath, "", err.Error()))
		return false
	}
	allowed[""] = []string{"apiVersion", "kind", "metadata", "spec"}
	allowed["metadata"] = []string{"name", "namespace", "labels", "annotations"}
	before := len(c.errs)
	c.checkFields(doc, "", fldPath, allowed)
	// A field the Flux type does not have is reported once, as unknown: "set it on a Flux object"
	// would send the user looking for it there.
	unknown := decodeStrict(data, obj, fldPath, "unknown field")
	checked := c.errs[before:]
	c.errs = c.errs[:before]
	for _, e := range checked {
		if !slices.ContainsFunc(unknown, func(u *field.Error) bool { return u.Field == e.Field }) {
			c.errs = append(c.errs, e)
		}
	}
	c.errs = append(c.errs, unknown...)
	return len(c.errs) == before
}

func (c *converter) checkFields(obj map[string]any, at string, fldPath *field.Path, allowed map[string][]string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := k
		if at != "" {
			path = at + "." + k
		}
		if !slices.Contains(allowed[at], k) {
			c.errs = append(c.errs, field.Forbidden(child(fldPath, path), unsupported))
			continue
		}
		if nested, ok := obj[k].(map[string]any); ok {
			if _, checked := allowed[path]; checked {
				c.checkFields(nested, path, fldPath, allowed)
			}
		}
	}
}

// metadata checks the namespace of a template: the bootstrap objects live in Flux's namespace.
func (c *converter) metadata(meta metav1.ObjectMeta, fldPath *field.Path) {
	if meta.Namespace != "" && meta.Namespace != c.namespace {
		c.errs = append(c.errs, field.Invalid(fldPath.Child("namespace"), meta.Namespace,
			fmt.Sprintf("the bootstrap objects live in Flux's namespace %s; set flux.namespace to %s or remove metadata.namespace", c.namespace, meta.Namespace)))
	}
	if len(meta.Labels) > 0 || len(meta.Annotations) > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: labels and annotations are not set on the bootstrap objects", fldPath))
	}
}
