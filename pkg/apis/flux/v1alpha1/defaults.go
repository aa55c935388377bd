// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	defaultKluctlInterval = 5 * time.Minute
	defaultFluxInterval   = 10 * time.Minute
)

// SetDefaults_FluxConfig allocates every section so that the generated defaulter reaches the
// defaults of nested structs, and sets the defaults that depend on more than one section. Versions
// are not defaulted here: they come from the operator's configuration when the layers are merged.
func SetDefaults_FluxConfig(obj *FluxConfig) {
	if obj.Flux == nil {
		obj.Flux = &Flux{}
	}
	if obj.Kluctl == nil {
		obj.Kluctl = &Kluctl{}
	}
	if obj.Bootstrap == nil {
		obj.Bootstrap = &Bootstrap{}
	}
	if obj.Bootstrap.Kluctl == nil {
		obj.Bootstrap.Kluctl = &KluctlBootstrap{}
	}
	if obj.Bootstrap.Flux == nil {
		obj.Bootstrap.Flux = &FluxBootstrap{}
	}
	if obj.Monitoring == nil {
		obj.Monitoring = &Monitoring{}
	}
	if obj.Monitoring.Shoot == nil {
		obj.Monitoring.Shoot = &ShootMonitoring{}
	}

	// The nested defaulters run after this function, so the values they would set are looked up
	// with the same fallbacks here.
	mode := ptr.Deref(obj.Bootstrap.Mode, BootstrapModeKluctl)

	// Mode flux cannot work without kustomize-controller; an explicit list is left for validation.
	if obj.Flux.Components == nil {
		obj.Flux.Components = []string{ComponentSourceController}
		if mode == BootstrapModeFlux {
			obj.Flux.Components = append(obj.Flux.Components, ComponentKustomizeController)
		}
	}

	if obj.Bootstrap.Flux.Path == nil {
		path := DefaultPath
		switch {
		case obj.Source != nil && obj.Source.OCI != nil:
			path = ptr.Deref(obj.Source.OCI.Path, DefaultPath)
		case obj.Source != nil && obj.Source.Path != nil:
			path = *obj.Source.Path
		}
		obj.Bootstrap.Flux.Path = &path
	}

	// Additional secrets land next to the bootstrap object, which is the one that consumes them.
	secretNamespace := ptr.Deref(obj.Flux.Namespace, DefaultFluxNamespace)
	if mode != BootstrapModeFlux && ptr.Deref(obj.Kluctl.Enabled, true) {
		secretNamespace = ptr.Deref(obj.Kluctl.Namespace, DefaultKluctlNamespace)
	}
	for i := range obj.AdditionalSecretResources {
		res := &obj.AdditionalSecretResources[i]
		if res.TargetName == nil {
			res.TargetName = ptr.To(res.Name)
		}
		if res.Namespace == nil {
			res.Namespace = ptr.To(secretNamespace)
		}
	}
}

// SetDefaults_Flux sets the defaults of the Flux controllers.
func SetDefaults_Flux(obj *Flux) {
	if obj.Namespace == nil {
		obj.Namespace = ptr.To(DefaultFluxNamespace)
	}
	if obj.Management == nil {
		obj.Management = ptr.To(ManagementContinuous)
	}
}

// SetDefaults_Kluctl sets the defaults of the kluctl controller.
func SetDefaults_Kluctl(obj *Kluctl) {
	if obj.Enabled == nil {
		obj.Enabled = ptr.To(true)
	}
	if obj.Namespace == nil {
		obj.Namespace = ptr.To(DefaultKluctlNamespace)
	}
}

// SetDefaults_Source sets the defaults of the git repository. An OCI source has no git fields,
// and defaults here would make it look like both.
func SetDefaults_Source(obj *Source) {
	if obj.OCI != nil {
		return
	}
	if obj.Ref == nil || (obj.Ref.Branch == nil && obj.Ref.Tag == nil && obj.Ref.Commit == nil && obj.Ref.SemVer == nil && obj.Ref.Name == nil) {
		obj.Ref = &GitRef{Branch: ptr.To(DefaultBranch)}
	}
	if obj.Path == nil {
		obj.Path = ptr.To(DefaultPath)
	}
	if obj.Type == nil {
		// A generated deploy key is an SSH key, so only ssh URLs can be private without user credentials.
		repoType := RepositoryTypePrivate
		if obj.SecretResourceName == nil && obj.URL != nil && strings.HasPrefix(strings.ToLower(*obj.URL), "https://") {
			repoType = RepositoryTypePublic
		}
		obj.Type = &repoType
	}
}

// SetDefaults_OCISource sets the defaults of the OCI artifact; Flux and kluctl pull tag latest
// without a ref, too.
func SetDefaults_OCISource(obj *OCISource) {
	if obj.Ref == nil || (obj.Ref.Tag == nil && obj.Ref.Digest == nil && obj.Ref.SemVer == nil) {
		obj.Ref = &OCIRef{Tag: ptr.To(DefaultOCITag)}
	}
	if obj.Path == nil {
		obj.Path = ptr.To(DefaultPath)
	}
}

// SetDefaults_Bootstrap sets the default bootstrap mode and delivers the shoot's identity unless
// the user opts out.
func SetDefaults_Bootstrap(obj *Bootstrap) {
	if obj.Mode == nil {
		obj.Mode = ptr.To(BootstrapModeKluctl)
	}
	if obj.ShootInfo == nil {
		obj.ShootInfo = ptr.To(true)
	}
}

// SetDefaults_KluctlBootstrap sets the defaults of the bootstrap KluctlDeployment.
func SetDefaults_KluctlBootstrap(obj *KluctlBootstrap) {
	if obj.Context == nil {
		obj.Context = ptr.To(DefaultKluctlContext)
	}
	if obj.Interval == nil {
		obj.Interval = &metav1.Duration{Duration: defaultKluctlInterval}
	}
	if obj.Prune == nil {
		obj.Prune = ptr.To(false)
	}
	if obj.Delete == nil {
		obj.Delete = ptr.To(false)
	}
	if obj.DryRun == nil {
		obj.DryRun = ptr.To(false)
	}
}

// SetDefaults_FluxBootstrap sets the defaults of the bootstrap Kustomization.
func SetDefaults_FluxBootstrap(obj *FluxBootstrap) {
	if obj.Prune == nil {
		obj.Prune = ptr.To(true)
	}
	if obj.Interval == nil {
		obj.Interval = &metav1.Duration{Duration: defaultFluxInterval}
	}
}

// SetDefaults_ShootMonitoring enables the shoot's monitoring unless a configuration layer turns it
// off.
func SetDefaults_ShootMonitoring(obj *ShootMonitoring) {
	if obj.Enabled == nil {
		obj.Enabled = ptr.To(true)
	}
}
