// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	"cmp"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

// fluxSource is the GitRepository or OCIRepository of mode flux.
func fluxSource(v Values, namespace string) client.Object {
	cfg := v.Config
	meta := metav1.ObjectMeta{Name: ObjectName(cfg), Namespace: namespace, Labels: labels()}
	interval := cfg.Bootstrap.Flux.Interval
	if oci := cfg.Source.OCI; oci != nil {
		repo := &sourcev1.OCIRepository{
			TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
			ObjectMeta: meta,
			Spec: sourcev1.OCIRepositorySpec{
				URL:       v.URL,
				Interval:  interval,
				Reference: &sourcev1.OCIRepositoryRef{Tag: oci.Ref.Tag, Digest: oci.Ref.Digest, SemVer: oci.Ref.SemVer},
				Ignore:    oci.Ignore,
				Provider:  oci.Provider,
				Verify:    ociVerification(oci.Verify),
			},
		}
		if ref := oci.CertSecretRef; ref != nil {
			repo.Spec.CertSecretRef = &fluxmeta.LocalObjectReference{Name: ref.Name}
		}
		if v.Credentials != nil {
			repo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: constants.OCICredentialsSecretName}
		}
		return repo
	}
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: meta,
		Spec: sourcev1.GitRepositorySpec{
			URL:      v.URL,
			Interval: interval,
			Reference: &sourcev1.GitRepositoryRef{
				Branch: cfg.Source.Ref.Branch,
				Tag:    cfg.Source.Ref.Tag,
				Commit: cfg.Source.Ref.Commit,
				SemVer: cfg.Source.Ref.SemVer,
				Name:   cfg.Source.Ref.Name,
			},
			Ignore:       cfg.Source.Ignore,
			Provider:     cfg.Source.Provider,
			Verification: gitVerification(cfg.Source.Verify),
		},
	}
	if v.Credentials != nil {
		repo.Spec.SecretRef = &fluxmeta.LocalObjectReference{Name: constants.GitCredentialsSecretName}
	}
	return repo
}

// gitVerification is the GitRepository's spec.verify; without a mode source-controller's CRD
// defaults it to HEAD.
func gitVerification(v *fluxapi.GitVerification) *sourcev1.GitRepositoryVerification {
	if v == nil {
		return nil
	}
	return &sourcev1.GitRepositoryVerification{Mode: sourcev1.GitVerificationMode(v.Mode), SecretRef: fluxmeta.LocalObjectReference{Name: v.SecretRef.Name}}
}

// ociVerification is the OCIRepository's spec.verify. Its provider is rendered even when unset:
// the field has no omitempty, and the CRD's enum refuses an empty one.
func ociVerification(v *fluxapi.OCIVerification) *sourcev1.OCIRepositoryVerification {
	if v == nil {
		return nil
	}
	out := &sourcev1.OCIRepositoryVerification{Provider: cmp.Or(v.Provider, "cosign")}
	if v.SecretRef != nil {
		out.SecretRef = &fluxmeta.LocalObjectReference{Name: v.SecretRef.Name}
	}
	for _, m := range v.MatchOIDCIdentity {
		out.MatchOIDCIdentity = append(out.MatchOIDCIdentity, sourcev1.OIDCIdentityMatch{Issuer: m.Issuer, Subject: m.Subject})
	}
	return out
}
