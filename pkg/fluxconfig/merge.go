// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
)

// merge applies the fields src sets onto dst: scalars, lists and maps replace, sections merge,
// source.ref, source.oci.ref, the sources' verify and certSecretRef and bootstrap.kluctl.decryption
// replace as a whole, bootstrap.kluctl.args is a JSON merge patch (RFC 7386). source.oci replaces
// the git fields, source.url replaces source.oci and drops lower source.knownHosts, source.path
// drops bootstrap.flux.path. dst shares no memory with src.
func merge(dst, src *v1alpha1.FluxConfig) error {
	src = src.DeepCopy()

	if s := src.Flux; s != nil {
		if dst.Flux == nil {
			dst.Flux = &v1alpha1.Flux{}
		}
		d := dst.Flux
		override(&d.Version, s.Version)
		if s.Components != nil {
			d.Components = s.Components
		}
		override(&d.Namespace, s.Namespace)
		override(&d.Management, s.Management)
	}

	if s := src.Kluctl; s != nil {
		if dst.Kluctl == nil {
			dst.Kluctl = &v1alpha1.Kluctl{}
		}
		d := dst.Kluctl
		override(&d.Enabled, s.Enabled)
		override(&d.Version, s.Version)
		override(&d.Namespace, s.Namespace)
	}

	if s := src.Source; s != nil {
		if dst.Source == nil {
			dst.Source = &v1alpha1.Source{}
		}
		// A layer chooses the kind of source: an OCI artifact replaces a git repository of lower
		// layers and the other way round; the same layer setting both is a validation error.
		if s.OCI != nil {
			*dst.Source = v1alpha1.Source{OCI: dst.Source.OCI}
			if dst.Source.OCI == nil {
				dst.Source.OCI = &v1alpha1.OCISource{}
			}
			mergeOCISource(dst.Source.OCI, s.OCI)
		}
		if s.URL != nil {
			dst.Source.OCI = nil
		}
		d := dst.Source
		override(&d.URL, s.URL)
		// Mixing e.g. a branch from one layer with a tag from another would be ambiguous.
		if refIsSet(s.Ref) {
			d.Ref = s.Ref
		}
		override(&d.Path, s.Path)
		override(&d.Type, s.Type)
		// Host keys belong to the host of the layer's repository. Inherited by a layer that points
		// to another URL, they would replace the host key scan and fail only inside the shoot.
		if s.URL != nil && s.KnownHosts == nil {
			d.KnownHosts = nil
		}
		override(&d.KnownHosts, s.KnownHosts)
		override(&d.SecretResourceName, s.SecretResourceName)
		override(&d.Ignore, s.Ignore)
		override(&d.Provider, s.Provider)
		// A mode from one layer and keys from another would verify with neither's intent.
		override(&d.Verify, s.Verify)
		// bootstrap.flux.path defaults to source.path: a path this layer sets must not be hidden by
		// a lower layer's bootstrap.flux.path. One of this layer's own beats it (merged below).
		if s.Path != nil && dst.Bootstrap != nil && dst.Bootstrap.Flux != nil {
			dst.Bootstrap.Flux.Path = nil
		}
	}

	if s := src.Bootstrap; s != nil {
		if dst.Bootstrap == nil {
			dst.Bootstrap = &v1alpha1.Bootstrap{}
		}
		d := dst.Bootstrap
		override(&d.Mode, s.Mode)
		override(&d.ShootInfo, s.ShootInfo)
		override(&d.Name, s.Name)
		if s.Kluctl != nil {
			if d.Kluctl == nil {
				d.Kluctl = &v1alpha1.KluctlBootstrap{}
			}
			if err := mergeKluctlBootstrap(d.Kluctl, s.Kluctl); err != nil {
				return err
			}
		}
		if s.Flux != nil {
			if d.Flux == nil {
				d.Flux = &v1alpha1.FluxBootstrap{}
			}
			override(&d.Flux.Path, s.Flux.Path)
			override(&d.Flux.Prune, s.Flux.Prune)
			override(&d.Flux.Interval, s.Flux.Interval)
			override(&d.Flux.TargetNamespace, s.Flux.TargetNamespace)
			override(&d.Flux.Wait, s.Flux.Wait)
			override(&d.Flux.Timeout, s.Flux.Timeout)
			override(&d.Flux.RetryInterval, s.Flux.RetryInterval)
			override(&d.Flux.ServiceAccountName, s.Flux.ServiceAccountName)
			override(&d.Flux.Decryption, s.Flux.Decryption)
			if p := s.Flux.PostBuild; p != nil {
				if d.Flux.PostBuild == nil {
					d.Flux.PostBuild = &v1alpha1.PostBuild{}
				}
				// A merged map or list would keep entries the upper layer cannot remove.
				if p.Substitute != nil {
					d.Flux.PostBuild.Substitute = p.Substitute
				}
				if p.SubstituteFrom != nil {
					d.Flux.PostBuild.SubstituteFrom = p.SubstituteFrom
				}
			}
			if s.Flux.Patches != nil {
				d.Flux.Patches = s.Flux.Patches
			}
		}
	}

	if s := src.Monitoring; s != nil && s.Shoot != nil {
		if dst.Monitoring == nil {
			dst.Monitoring = &v1alpha1.Monitoring{}
		}
		if dst.Monitoring.Shoot == nil {
			dst.Monitoring.Shoot = &v1alpha1.ShootMonitoring{}
		}
		override(&dst.Monitoring.Shoot.Enabled, s.Shoot.Enabled)
	}

	if src.AdditionalSecretResources != nil {
		dst.AdditionalSecretResources = src.AdditionalSecretResources
	}

	for key, s := range src.Controllers {
		if dst.Controllers == nil {
			dst.Controllers = map[string]v1alpha1.ControllerSettings{}
		}
		d := dst.Controllers[key]
		MergeControllerSettings(&d, s)
		dst.Controllers[key] = d
	}
	return nil
}

func mergeOCISource(d, s *v1alpha1.OCISource) {
	override(&d.URL, s.URL)
	// A tag from one layer and a digest from another would be ambiguous, like git refs.
	if ociRefIsSet(s.Ref) {
		d.Ref = s.Ref
	}
	override(&d.Path, s.Path)
	override(&d.SecretResourceName, s.SecretResourceName)
	override(&d.Ignore, s.Ignore)
	override(&d.Provider, s.Provider)
	override(&d.CertSecretRef, s.CertSecretRef)
	override(&d.Verify, s.Verify)
}

// MergeControllerSettings applies the fields src sets onto dst. Resources, tolerations and the
// node selector replace as a whole: a merged list or map would leave values in place that the
// upper layer cannot remove.
func MergeControllerSettings(dst *v1alpha1.ControllerSettings, src v1alpha1.ControllerSettings) {
	override(&dst.Resources, src.Resources)
	if src.Tolerations != nil {
		dst.Tolerations = src.Tolerations
	}
	if src.NodeSelector != nil {
		dst.NodeSelector = src.NodeSelector
	}
	override(&dst.PriorityClassName, src.PriorityClassName)
	override(&dst.Concurrent, src.Concurrent)
}

func mergeKluctlBootstrap(d, s *v1alpha1.KluctlBootstrap) error {
	override(&d.Target, s.Target)
	override(&d.Context, s.Context)
	if s.Args != nil && s.Args.Raw != nil {
		args, err := MergeArgs(d.Args, s.Args)
		if err != nil {
			return err
		}
		d.Args = args
	}
	override(&d.Prune, s.Prune)
	override(&d.Delete, s.Delete)
	override(&d.Interval, s.Interval)
	override(&d.RetryInterval, s.RetryInterval)
	override(&d.Timeout, s.Timeout)
	override(&d.DryRun, s.DryRun)
	override(&d.Decryption, s.Decryption)
	return nil
}

func override[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// MergeArgs applies patch to base as a JSON merge patch (RFC 7386), so that a shoot can add or
// change single arguments of the project's configuration, or remove one with null. Numbers keep
// their written form.
func MergeArgs(base, patch *runtime.RawExtension) (*runtime.RawExtension, error) {
	var target any = map[string]any{}
	if base != nil && base.Raw != nil {
		if err := decodeJSON(base.Raw, &target); err != nil {
			return nil, fmt.Errorf("bootstrap.kluctl.args: %w", err)
		}
	}
	var p any
	if err := decodeJSON(patch.Raw, &p); err != nil {
		return nil, fmt.Errorf("bootstrap.kluctl.args: %w", err)
	}
	raw, err := json.Marshal(applyMergePatch(target, p))
	if err != nil {
		return nil, fmt.Errorf("bootstrap.kluctl.args: %w", err)
	}
	return &runtime.RawExtension{Raw: raw}, nil
}

// decodeJSON keeps numbers as written; float64 would round large integers.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func applyMergePatch(target, patch any) any {
	patchObj, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	targetObj, ok := target.(map[string]any)
	if !ok {
		targetObj = map[string]any{}
	}
	for k, v := range patchObj {
		if v == nil {
			delete(targetObj, k)
			continue
		}
		targetObj[k] = applyMergePatch(targetObj[k], v)
	}
	return targetObj
}
