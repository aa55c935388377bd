// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package stackit

import (
	"fmt"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// secretReference carries a reference to a Secret the source reads in Flux's namespace (a CA,
// trusted keys). stackit's extension did not create it either: a warning says where it must come
// from unless an additionalSecretResources entry delivers it.
func (c *converter) secretReference(ref *fluxmeta.LocalObjectReference, fldPath *field.Path) *v1alpha1.SecretReference {
	if ref == nil {
		return nil
	}
	if _, synced := c.synced[ref.Name]; !synced && ref.Name != "" {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: no entry of additionalSecretResources delivers the Secret %s: it must exist in Flux's namespace "+
			"of the shoot, or the source fails until it does; deliver it with an additionalSecretResources entry whose targetName is %s", fldPath, ref.Name, ref.Name))
	}
	return &v1alpha1.SecretReference{Name: ref.Name}
}

// gitVerification carries the GitRepository's spec.verify. Flux's "head" is its older spelling of
// HEAD, which this extension's API alone knows.
func (c *converter) gitVerification(v *sourcev1.GitRepositoryVerification, fldPath *field.Path) *v1alpha1.GitVerification {
	if v == nil {
		return nil
	}
	mode := string(v.Mode)
	if mode == "head" {
		mode = string(sourcev1.ModeGitHEAD)
	}
	ref := v.SecretRef
	return &v1alpha1.GitVerification{Mode: mode, SecretRef: *c.secretReference(&ref, fldPath.Child("secretRef"))}
}

// ociVerification carries the OCIRepository's spec.verify; its trustedRootSecretRef is refused by
// the template's allowed fields.
func (c *converter) ociVerification(v *sourcev1.OCIRepositoryVerification, fldPath *field.Path) *v1alpha1.OCIVerification {
	if v == nil {
		return nil
	}
	out := &v1alpha1.OCIVerification{Provider: v.Provider, SecretRef: c.secretReference(v.SecretRef, fldPath.Child("secretRef"))}
	for _, m := range v.MatchOIDCIdentity {
		out.MatchOIDCIdentity = append(out.MatchOIDCIdentity, v1alpha1.OIDCIdentityMatch{Issuer: m.Issuer, Subject: m.Subject})
	}
	return out
}
