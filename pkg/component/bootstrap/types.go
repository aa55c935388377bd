// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package bootstrap

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// The kluctl controller's Go API cannot be built with this project's dependency set, so the few
// fields we write are declared here. Field names and JSON tags follow the
// gitops.kluctl.io/v1beta1 KluctlDeployment CRD; integration tests apply the result against the
// real CRD schema.

// The kinds of the bootstrap objects; the health check, the sandbox and the tests read them by
// these.
var (
	// KluctlDeploymentGVK is the bootstrap object of mode kluctl.
	KluctlDeploymentGVK = schema.GroupVersionKind{Group: "gitops.kluctl.io", Version: "v1beta1", Kind: "KluctlDeployment"}
	// GitRepositoryGVK is the source of mode flux for a git repository.
	GitRepositoryGVK = sourcev1.GroupVersion.WithKind(sourcev1.GitRepositoryKind)
	// OCIRepositoryGVK is the source of mode flux for an OCI artifact.
	OCIRepositoryGVK = sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind)
	// KustomizationGVK is the bootstrap object of mode flux.
	KustomizationGVK = kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind)
)

// AllObjectKinds returns every kind ObjectKinds may return: all the health check reads in a shoot,
// so that its shoot client maps exactly these without discovering the shoot's API.
func AllObjectKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{KluctlDeploymentGVK, GitRepositoryGVK, OCIRepositoryGVK, KustomizationGVK}
}

// ObjectKinds returns the kinds of the bootstrap objects a mode deploys for a git repository or,
// with oci, an OCI artifact, all named ObjectName; none for a mode without bootstrap.
func ObjectKinds(mode fluxapi.BootstrapMode, oci bool) []schema.GroupVersionKind {
	switch mode {
	case fluxapi.BootstrapModeKluctl:
		return []schema.GroupVersionKind{KluctlDeploymentGVK}
	case fluxapi.BootstrapModeFlux:
		if oci {
			return []schema.GroupVersionKind{OCIRepositoryGVK, KustomizationGVK}
		}
		return []schema.GroupVersionKind{GitRepositoryGVK, KustomizationGVK}
	default:
		return nil
	}
}

type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type kluctlDeployment struct {
	APIVersion string               `json:"apiVersion"`
	Kind       string               `json:"kind"`
	Metadata   objectMeta           `json:"metadata"`
	Spec       kluctlDeploymentSpec `json:"spec"`
}

type kluctlDeploymentSpec struct {
	Source        kluctlSource          `json:"source"`
	Credentials   *kluctlCredentials    `json:"credentials,omitempty"`
	Decryption    *decryption           `json:"decryption,omitempty"`
	Interval      string                `json:"interval"`
	RetryInterval string                `json:"retryInterval,omitempty"`
	Timeout       string                `json:"timeout,omitempty"`
	Target        string                `json:"target,omitempty"`
	Context       string                `json:"context,omitempty"`
	Args          *runtime.RawExtension `json:"args,omitempty"`
	Prune         bool                  `json:"prune"`
	Delete        bool                  `json:"delete"`
	DryRun        bool                  `json:"dryRun"`
}

type kluctlSource struct {
	Git *kluctlGitSource `json:"git,omitempty"`
	OCI *kluctlOCISource `json:"oci,omitempty"`
}

type kluctlOCISource struct {
	URL  string  `json:"url"`
	Path string  `json:"path,omitempty"`
	Ref  *ociRef `json:"ref,omitempty"`
}

type ociRef struct {
	Tag    string `json:"tag,omitempty"`
	Digest string `json:"digest,omitempty"`
}

type kluctlGitSource struct {
	URL  string  `json:"url"`
	Path string  `json:"path,omitempty"`
	Ref  *gitRef `json:"ref,omitempty"`
}

type gitRef struct {
	Branch string `json:"branch,omitempty"`
	Tag    string `json:"tag,omitempty"`
	Commit string `json:"commit,omitempty"`
}

type kluctlCredentials struct {
	Git []kluctlGitCredentials `json:"git,omitempty"`
	OCI []kluctlOCICredentials `json:"oci,omitempty"`
}

type kluctlOCICredentials struct {
	Registry   string    `json:"registry"`
	Repository string    `json:"repository,omitempty"`
	SecretRef  secretRef `json:"secretRef"`
}

type kluctlGitCredentials struct {
	Host      string    `json:"host"`
	SecretRef secretRef `json:"secretRef"`
}

type secretRef struct {
	Name string `json:"name"`
}

type decryption struct {
	Provider  string    `json:"provider"`
	SecretRef secretRef `json:"secretRef"`
}
