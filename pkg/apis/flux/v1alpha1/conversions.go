// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
)

// The internal types hold sections and enums by value, the versioned ones by pointer so that layers
// can be merged. conversion-gen cannot bridge pointer and value kinds on its own; these functions do,
// mapping a nil section to the zero value and back to an allocated section.

// Convert_Pointer_v1alpha1_Flux_To_flux_Flux converts an optional Flux section.
func Convert_Pointer_v1alpha1_Flux_To_flux_Flux(in **Flux, out *flux.Flux, s conversion.Scope) error {
	if *in == nil {
		*out = flux.Flux{}
		return nil
	}
	return Convert_v1alpha1_Flux_To_flux_Flux(*in, out, s)
}

// Convert_flux_Flux_To_Pointer_v1alpha1_Flux converts a Flux section.
func Convert_flux_Flux_To_Pointer_v1alpha1_Flux(in *flux.Flux, out **Flux, s conversion.Scope) error {
	*out = &Flux{}
	return Convert_flux_Flux_To_v1alpha1_Flux(in, *out, s)
}

// Convert_Pointer_v1alpha1_Kluctl_To_flux_Kluctl converts an optional Kluctl section.
func Convert_Pointer_v1alpha1_Kluctl_To_flux_Kluctl(in **Kluctl, out *flux.Kluctl, s conversion.Scope) error {
	if *in == nil {
		*out = flux.Kluctl{}
		return nil
	}
	return Convert_v1alpha1_Kluctl_To_flux_Kluctl(*in, out, s)
}

// Convert_flux_Kluctl_To_Pointer_v1alpha1_Kluctl converts a Kluctl section.
func Convert_flux_Kluctl_To_Pointer_v1alpha1_Kluctl(in *flux.Kluctl, out **Kluctl, s conversion.Scope) error {
	*out = &Kluctl{}
	return Convert_flux_Kluctl_To_v1alpha1_Kluctl(in, *out, s)
}

// Convert_Pointer_v1alpha1_Monitoring_To_flux_Monitoring converts an optional Monitoring section.
func Convert_Pointer_v1alpha1_Monitoring_To_flux_Monitoring(in **Monitoring, out *flux.Monitoring, s conversion.Scope) error {
	if *in == nil {
		*out = flux.Monitoring{}
		return nil
	}
	return Convert_v1alpha1_Monitoring_To_flux_Monitoring(*in, out, s)
}

// Convert_flux_Monitoring_To_Pointer_v1alpha1_Monitoring converts a Monitoring section.
func Convert_flux_Monitoring_To_Pointer_v1alpha1_Monitoring(in *flux.Monitoring, out **Monitoring, s conversion.Scope) error {
	*out = &Monitoring{}
	return Convert_flux_Monitoring_To_v1alpha1_Monitoring(in, *out, s)
}

// Convert_Pointer_v1alpha1_ShootMonitoring_To_flux_ShootMonitoring converts an optional
// ShootMonitoring section.
func Convert_Pointer_v1alpha1_ShootMonitoring_To_flux_ShootMonitoring(in **ShootMonitoring, out *flux.ShootMonitoring, s conversion.Scope) error {
	if *in == nil {
		*out = flux.ShootMonitoring{}
		return nil
	}
	return Convert_v1alpha1_ShootMonitoring_To_flux_ShootMonitoring(*in, out, s)
}

// Convert_flux_ShootMonitoring_To_Pointer_v1alpha1_ShootMonitoring converts a ShootMonitoring
// section.
func Convert_flux_ShootMonitoring_To_Pointer_v1alpha1_ShootMonitoring(in *flux.ShootMonitoring, out **ShootMonitoring, s conversion.Scope) error {
	*out = &ShootMonitoring{}
	return Convert_flux_ShootMonitoring_To_v1alpha1_ShootMonitoring(in, *out, s)
}

// Convert_Pointer_v1alpha1_GitRef_To_flux_GitRef converts an optional GitRef.
func Convert_Pointer_v1alpha1_GitRef_To_flux_GitRef(in **GitRef, out *flux.GitRef, s conversion.Scope) error {
	if *in == nil {
		*out = flux.GitRef{}
		return nil
	}
	return Convert_v1alpha1_GitRef_To_flux_GitRef(*in, out, s)
}

// Convert_flux_GitRef_To_Pointer_v1alpha1_GitRef converts a GitRef.
func Convert_flux_GitRef_To_Pointer_v1alpha1_GitRef(in *flux.GitRef, out **GitRef, s conversion.Scope) error {
	*out = &GitRef{}
	return Convert_flux_GitRef_To_v1alpha1_GitRef(in, *out, s)
}

// Convert_flux_GitRef_To_v1alpha1_GitRef converts a GitRef. Unlike the generic string conversion it
// leaves empty fields unset, because a set field counts as the chosen kind of ref.
func Convert_flux_GitRef_To_v1alpha1_GitRef(in *flux.GitRef, out *GitRef, _ conversion.Scope) error {
	*out = GitRef{Branch: nonEmpty(in.Branch), Tag: nonEmpty(in.Tag), Commit: nonEmpty(in.Commit)}
	return nil
}

// Convert_Pointer_v1alpha1_OCIRef_To_flux_OCIRef converts an optional OCIRef.
func Convert_Pointer_v1alpha1_OCIRef_To_flux_OCIRef(in **OCIRef, out *flux.OCIRef, s conversion.Scope) error {
	if *in == nil {
		*out = flux.OCIRef{}
		return nil
	}
	return Convert_v1alpha1_OCIRef_To_flux_OCIRef(*in, out, s)
}

// Convert_flux_OCIRef_To_Pointer_v1alpha1_OCIRef converts an OCIRef.
func Convert_flux_OCIRef_To_Pointer_v1alpha1_OCIRef(in *flux.OCIRef, out **OCIRef, s conversion.Scope) error {
	*out = &OCIRef{}
	return Convert_flux_OCIRef_To_v1alpha1_OCIRef(in, *out, s)
}

// Convert_flux_OCIRef_To_v1alpha1_OCIRef converts an OCIRef, leaving empty fields unset like
// Convert_flux_GitRef_To_v1alpha1_GitRef.
func Convert_flux_OCIRef_To_v1alpha1_OCIRef(in *flux.OCIRef, out *OCIRef, _ conversion.Scope) error {
	*out = OCIRef{Tag: nonEmpty(in.Tag), Digest: nonEmpty(in.Digest)}
	return nil
}

// Convert_Pointer_v1alpha1_Bootstrap_To_flux_Bootstrap converts an optional Bootstrap section.
func Convert_Pointer_v1alpha1_Bootstrap_To_flux_Bootstrap(in **Bootstrap, out *flux.Bootstrap, s conversion.Scope) error {
	if *in == nil {
		*out = flux.Bootstrap{}
		return nil
	}
	return Convert_v1alpha1_Bootstrap_To_flux_Bootstrap(*in, out, s)
}

// Convert_flux_Bootstrap_To_Pointer_v1alpha1_Bootstrap converts a Bootstrap section.
func Convert_flux_Bootstrap_To_Pointer_v1alpha1_Bootstrap(in *flux.Bootstrap, out **Bootstrap, s conversion.Scope) error {
	*out = &Bootstrap{}
	return Convert_flux_Bootstrap_To_v1alpha1_Bootstrap(in, *out, s)
}

// Convert_Pointer_v1alpha1_KluctlBootstrap_To_flux_KluctlBootstrap converts an optional KluctlBootstrap section.
func Convert_Pointer_v1alpha1_KluctlBootstrap_To_flux_KluctlBootstrap(in **KluctlBootstrap, out *flux.KluctlBootstrap, s conversion.Scope) error {
	if *in == nil {
		*out = flux.KluctlBootstrap{}
		return nil
	}
	return Convert_v1alpha1_KluctlBootstrap_To_flux_KluctlBootstrap(*in, out, s)
}

// Convert_flux_KluctlBootstrap_To_Pointer_v1alpha1_KluctlBootstrap converts a KluctlBootstrap section.
func Convert_flux_KluctlBootstrap_To_Pointer_v1alpha1_KluctlBootstrap(in *flux.KluctlBootstrap, out **KluctlBootstrap, s conversion.Scope) error {
	*out = &KluctlBootstrap{}
	return Convert_flux_KluctlBootstrap_To_v1alpha1_KluctlBootstrap(in, *out, s)
}

// Convert_Pointer_v1alpha1_FluxBootstrap_To_flux_FluxBootstrap converts an optional FluxBootstrap section.
func Convert_Pointer_v1alpha1_FluxBootstrap_To_flux_FluxBootstrap(in **FluxBootstrap, out *flux.FluxBootstrap, s conversion.Scope) error {
	if *in == nil {
		*out = flux.FluxBootstrap{}
		return nil
	}
	return Convert_v1alpha1_FluxBootstrap_To_flux_FluxBootstrap(*in, out, s)
}

// Convert_flux_FluxBootstrap_To_Pointer_v1alpha1_FluxBootstrap converts a FluxBootstrap section.
func Convert_flux_FluxBootstrap_To_Pointer_v1alpha1_FluxBootstrap(in *flux.FluxBootstrap, out **FluxBootstrap, s conversion.Scope) error {
	*out = &FluxBootstrap{}
	return Convert_flux_FluxBootstrap_To_v1alpha1_FluxBootstrap(in, *out, s)
}

// Convert_Pointer_v1alpha1_RepositoryType_To_flux_RepositoryType converts an optional repository type.
func Convert_Pointer_v1alpha1_RepositoryType_To_flux_RepositoryType(in **RepositoryType, out *flux.RepositoryType, _ conversion.Scope) error {
	*out = flux.RepositoryType(deref(*in))
	return nil
}

// Convert_flux_RepositoryType_To_Pointer_v1alpha1_RepositoryType converts a repository type.
func Convert_flux_RepositoryType_To_Pointer_v1alpha1_RepositoryType(in *flux.RepositoryType, out **RepositoryType, _ conversion.Scope) error {
	*out = nonEmpty(RepositoryType(*in))
	return nil
}

// Convert_Pointer_v1alpha1_BootstrapMode_To_flux_BootstrapMode converts an optional bootstrap mode.
func Convert_Pointer_v1alpha1_BootstrapMode_To_flux_BootstrapMode(in **BootstrapMode, out *flux.BootstrapMode, _ conversion.Scope) error {
	*out = flux.BootstrapMode(deref(*in))
	return nil
}

// Convert_flux_BootstrapMode_To_Pointer_v1alpha1_BootstrapMode converts a bootstrap mode.
func Convert_flux_BootstrapMode_To_Pointer_v1alpha1_BootstrapMode(in *flux.BootstrapMode, out **BootstrapMode, _ conversion.Scope) error {
	*out = nonEmpty(BootstrapMode(*in))
	return nil
}

// Convert_Pointer_v1alpha1_ManagementMode_To_flux_ManagementMode converts an optional management mode.
func Convert_Pointer_v1alpha1_ManagementMode_To_flux_ManagementMode(in **ManagementMode, out *flux.ManagementMode, _ conversion.Scope) error {
	*out = flux.ManagementMode(deref(*in))
	return nil
}

// Convert_flux_ManagementMode_To_Pointer_v1alpha1_ManagementMode converts a management mode.
func Convert_flux_ManagementMode_To_Pointer_v1alpha1_ManagementMode(in *flux.ManagementMode, out **ManagementMode, _ conversion.Scope) error {
	*out = nonEmpty(ManagementMode(*in))
	return nil
}

func deref[T ~string](p *T) T {
	if p == nil {
		return ""
	}
	return *p
}

func nonEmpty[T ~string](v T) *T {
	if v == "" {
		return nil
	}
	return &v
}
