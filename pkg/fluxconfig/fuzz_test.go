// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package fluxconfig_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// Every problem must say which object and which field or key it is about, e.g.
// "ConfigMap garden-foo/flux-config: repositoryUrl: Invalid value: ...".
var problemFormat = regexp.MustCompile(`^(ConfigMap garden-fuzz/flux-config|Extension providerConfig|effective configuration|controller configuration): ("(\\.|[^"\\])*"|[^:"]*[^: "][^:"]*): `)

// configMapKey is what the API server accepts as a ConfigMap data key.
var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

var fuzzSupported = validation.SupportedVersions{Flux: []string{"v2.9.5"}, Kluctl: []string{"v2.28.2"}}

func checkProblems(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var cfgErr *configerror.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("rejection is not a configuration error: %v", err)
	}
	if len(cfgErr.Problems) == 0 {
		t.Fatalf("configuration error without problems")
	}
	for _, p := range cfgErr.Problems {
		if !problemFormat.MatchString(p) {
			t.Fatalf("problem does not name its object and field: %q", p)
		}
	}
}

func fuzzConfigMap(version, url, branch, typ, configYAML string) *corev1.ConfigMap {
	data := map[string]string{}
	for k, v := range map[string]string{"fluxVersion": version, "repositoryUrl": url, "repositoryBranch": branch, "repositoryType": typ, "config.yaml": configYAML} {
		if v != "" {
			data[k] = v
		}
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-fuzz", Name: "flux-config"}, Data: data}
}

func FuzzResolve(f *testing.F) {
	f.Add("0.29.5", "ssh://git@github.com/owner/repo", "main", "private", "", []byte(nil))
	f.Add("v2.9.5", "https://example.com/repo.git", "", "public", "source:\n  path: clusters/a\n", []byte(`{"source":{"ref":{"tag":"v1"}}}`))
	f.Add("", "git@example.com:org/repo", "dev", "", "bootstrap:\n  mode: flux\n", []byte(`{"bootstrap":{"kluctl":{"args":{"a":1}}}}`))
	f.Add("", "", "", "", "flux:\n  components: [source-controller, helm-controller]\n", []byte(`{"kluctl":{"enabled":false},"bootstrap":{"mode":"none"}}`))
	f.Add("", "ftp://x", "a..b", "secret", "source: [", []byte(`{"source":{"uri":"x"}}`))
	f.Add("2.9.x", "", "", "", "kluctl:\n  version: v2.28\n", []byte(`{"flux":{"version":"v2.9"}}`))

	f.Fuzz(func(t *testing.T, version, url, branch, typ, configYAML string, providerConfig []byte) {
		cm := fuzzConfigMap(version, url, branch, typ, configYAML)
		var raw *runtime.RawExtension
		if providerConfig != nil {
			raw = &runtime.RawExtension{Raw: providerConfig}
		}

		cfg, err := fluxconfig.Resolve(fluxconfig.Defaults{FluxVersion: "v2.9.5", KluctlVersion: "v2.28.2"}, fuzzSupported, sshkey.DefaultKnownHostsLimits(), cm, raw)
		checkProblems(t, err)
		if err != nil {
			return
		}
		// What Resolve accepts, the actuator deploys: it must pass the validation as a whole.
		if errs := validation.ValidateFluxConfig(cfg, fuzzSupported, field.NewPath("")); len(errs) > 0 {
			t.Fatalf("resolved configuration is invalid: %v", errs)
		}
		// Selectors are resolved: what reaches the renderer is an embedded release.
		if !slices.Contains(fuzzSupported.Flux, cfg.Flux.Version) || (cfg.Kluctl.Enabled && !slices.Contains(fuzzSupported.Kluctl, cfg.Kluctl.Version)) {
			t.Fatalf("resolved versions %q and %q are not embedded releases", cfg.Flux.Version, cfg.Kluctl.Version)
		}
		if cfg.Source == nil && strings.TrimSpace(url) != "" {
			t.Fatalf("repositoryUrl %q was dropped", url)
		}

		// The admission webhook must not reject what the controller accepts.
		checkProblems(t, fluxconfig.ValidateConfigMap(cm, fuzzSupported, sshkey.DefaultKnownHostsLimits()))
		if err := fluxconfig.ValidateConfigMap(cm, fuzzSupported, sshkey.DefaultKnownHostsLimits()); err != nil {
			t.Fatalf("admission rejects a ConfigMap that resolves: %v", err)
		}
		if raw != nil {
			if err := fluxconfig.ValidateProviderConfig(raw, fuzzSupported, sshkey.DefaultKnownHostsLimits()); err != nil {
				t.Fatalf("admission rejects a providerConfig that resolves: %v", err)
			}
		}
	})
}

func FuzzValidateProviderConfig(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"shoot-flux.extensions.gardener.cloud/v1alpha1","kind":"FluxConfig","source":{"url":"ssh://git@h/r"}}`))
	f.Add([]byte(`{"bootstrap":{"kluctl":{"args":"x","interval":"-1s"}}}`))
	f.Add([]byte(`{"additionalSecretResources":[{"name":""},{"name":"a","targetName":"B_"}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"flux":{"version":"2.9.5","namespace":"Flux"}}`))

	f.Fuzz(func(t *testing.T, providerConfig []byte) {
		checkProblems(t, fluxconfig.ValidateProviderConfig(&runtime.RawExtension{Raw: providerConfig}, fuzzSupported, sshkey.DefaultKnownHostsLimits()))
	})
}

func FuzzValidateConfigMap(f *testing.F) {
	f.Add("fluxVersion", "v2.9.5", "config.yaml", "kluctl:\n  version: 2.28.2\n")
	f.Add("repositoryUrl", "ssh://git@[::1]:22/repo", "unknown", "x")
	f.Add("repositoryType", "Private", "config.yaml", "apiVersion: v1\nkind: ConfigMap\n")

	f.Fuzz(func(t *testing.T, key1, value1, key2, value2 string) {
		if !configMapKey.MatchString(key1) || !configMapKey.MatchString(key2) {
			return
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "garden-fuzz", Name: "flux-config"}, Data: map[string]string{key1: value1, key2: value2}}
		checkProblems(t, fluxconfig.ValidateConfigMap(cm, fuzzSupported, sshkey.DefaultKnownHostsLimits()))
	})
}
