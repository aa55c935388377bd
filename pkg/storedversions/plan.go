// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package storedversions migrates a shoot's custom resources off the versions that a CRD about to
// be applied no longer has, as `flux migrate` does. The API server refuses a CRD update that drops
// a version listed in the CRD's status.storedVersions, because objects may still be stored in it;
// so before the controllers ManagedResource carries such a CRD, every object of its kind is
// rewritten at the new storage version and storedVersions is trimmed to it.
package storedversions

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Migration is the migration of the objects of one CRD.
type Migration struct {
	// CRD is the CRD's name, e.g. ocirepositories.source.toolkit.fluxcd.io.
	CRD string
	// Group, Kind and Resource name the objects.
	Group, Kind, Resource string
	// Namespaced tells the CRD's scope.
	Namespaced bool
	// Stale are the versions of the live CRD's status.storedVersions that the desired CRD does
	// not have in spec.versions.
	Stale []string
	// StorageVersion is the desired CRD's storage version, at which the objects are rewritten.
	StorageVersion string
	// LiveStorageVersion is the live CRD's storage version. When it is not StorageVersion, the
	// live CRD is first made to store at StorageVersion (with the desired CRD's definition of
	// it), keeping its own versions served for the running controllers.
	LiveStorageVersion string
	// Version is the desired CRD's definition of StorageVersion.
	Version apiextensionsv1.CustomResourceDefinitionVersion
}

// GroupVersionKind is the kind of the objects at the version they are rewritten at.
func (m Migration) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: m.Group, Version: m.StorageVersion, Kind: m.Kind}
}

// Plan returns the migrations that applying desired over live needs: one for every desired CRD
// whose live counterpart (same name) lists a stored version that the desired CRD does not have
// in spec.versions. A CRD that is not live, or whose stored versions all stay, needs none.
func Plan(live, desired []apiextensionsv1.CustomResourceDefinition) []Migration {
	var plan []Migration
	for _, d := range desired {
		i := slices.IndexFunc(live, func(l apiextensionsv1.CustomResourceDefinition) bool { return l.Name == d.Name })
		if i < 0 {
			continue
		}
		l := live[i]
		var stale []string
		for _, v := range l.Status.StoredVersions {
			if !slices.ContainsFunc(d.Spec.Versions, func(dv apiextensionsv1.CustomResourceDefinitionVersion) bool { return dv.Name == v }) {
				stale = append(stale, v)
			}
		}
		storage := storageVersion(d)
		if len(stale) == 0 || storage == nil {
			continue
		}
		m := Migration{
			CRD:            d.Name,
			Group:          d.Spec.Group,
			Kind:           d.Spec.Names.Kind,
			Resource:       d.Spec.Names.Plural,
			Namespaced:     d.Spec.Scope == apiextensionsv1.NamespaceScoped,
			Stale:          stale,
			StorageVersion: storage.Name,
			Version:        *storage.DeepCopy(),
		}
		if s := storageVersion(l); s != nil {
			m.LiveStorageVersion = s.Name
		}
		plan = append(plan, m)
	}
	return plan
}

func storageVersion(crd apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// CRDs returns the CustomResourceDefinitions of a multi-document YAML stream, e.g. a rendered
// release, and skips every other object.
func CRDs(stream []byte) ([]apiextensionsv1.CustomResourceDefinition, error) {
	var crds []apiextensionsv1.CustomResourceDefinition
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("failed reading the manifests: %w", err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("failed decoding a manifest: %w", err)
		}
		if head.Kind != "CustomResourceDefinition" || head.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(doc, &crd); err != nil {
			return nil, fmt.Errorf("failed decoding a CustomResourceDefinition: %w", err)
		}
		crds = append(crds, crd)
	}
}

// RESTMapper maps the CRD kind and the kind of every desired CRD at its storage version, the
// version a migration lists and rewrites at, so that the shoot client needs no discovery.
func RESTMapper(desired []apiextensionsv1.CustomResourceDefinition) meta.RESTMapper {
	crdGVK := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
	versions := []schema.GroupVersion{apiextensionsv1.SchemeGroupVersion}
	for _, d := range desired {
		if s := storageVersion(d); s != nil {
			versions = append(versions, schema.GroupVersion{Group: d.Spec.Group, Version: s.Name})
		}
	}
	m := meta.NewDefaultRESTMapper(versions)
	m.AddSpecific(crdGVK, apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
		apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinition"), meta.RESTScopeRoot)
	for _, d := range desired {
		s := storageVersion(d)
		if s == nil {
			continue
		}
		gv := schema.GroupVersion{Group: d.Spec.Group, Version: s.Name}
		scope := meta.RESTScopeRoot
		if d.Spec.Scope == apiextensionsv1.NamespaceScoped {
			scope = meta.RESTScopeNamespace
		}
		m.AddSpecific(gv.WithKind(d.Spec.Names.Kind), gv.WithResource(d.Spec.Names.Plural), gv.WithResource(d.Spec.Names.Singular), scope)
	}
	return m
}
