// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package loader reads the controller configuration file.
package loader

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/install"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config/validation"
)

var (
	scheme = runtime.NewScheme()
	// Strict, so that a misspelt option fails the start instead of silently keeping its default.
	decoder runtime.Decoder
)

func init() {
	install.Install(scheme)
	decoder = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder()
}

// LoadFromFile reads, defaults and validates the ControllerConfiguration at path.
func LoadFromFile(path string) (*config.ControllerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed reading controller configuration: %w", err)
	}
	cfg, err := Load(data)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", path, err)
	}
	return cfg, nil
}

// Load decodes, defaults and validates a ControllerConfiguration document (YAML or JSON). apiVersion
// and kind may be omitted and then mean v1alpha1 ControllerConfiguration.
func Load(data []byte) (*config.ControllerConfiguration, error) {
	cfg := &config.ControllerConfiguration{}
	// Without a default, a document lacking apiVersion and kind would be decoded into the internal
	// type, whose field names differ from the versioned JSON names.
	defaultGVK := v1alpha1.SchemeGroupVersion.WithKind("ControllerConfiguration")
	if _, _, err := decoder.Decode(data, &defaultGVK, cfg); err != nil {
		return nil, fmt.Errorf("failed decoding controller configuration: %w", err)
	}
	if errs := validation.ValidateControllerConfiguration(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid controller configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}

// Defaults returns the configuration the controller runs with when no file is given.
func Defaults() (*config.ControllerConfiguration, error) {
	versioned := &v1alpha1.ControllerConfiguration{}
	scheme.Default(versioned)
	cfg := &config.ControllerConfiguration{}
	if err := scheme.Convert(versioned, cfg, nil); err != nil {
		return nil, fmt.Errorf("failed converting default controller configuration: %w", err)
	}
	if errs := validation.ValidateControllerConfiguration(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid default controller configuration: %w", errs.ToAggregate())
	}
	return cfg, nil
}

// Versioned converts a configuration into the versioned type that configuration files hold, e.g.
// to write it into a chart's values.
func Versioned(cfg *config.ControllerConfiguration) (*v1alpha1.ControllerConfiguration, error) {
	out := &v1alpha1.ControllerConfiguration{}
	if err := scheme.Convert(cfg, out, nil); err != nil {
		return nil, fmt.Errorf("failed converting controller configuration: %w", err)
	}
	out.APIVersion, out.Kind = v1alpha1.SchemeGroupVersion.String(), "ControllerConfiguration"
	return out, nil
}

// LoadImagePullSecret reads the .dockerconfigjson file that imagePullSecretFile names and checks
// that it is what a Secret of type kubernetes.io/dockerconfigjson holds: a JSON object with an
// "auths" object. The file is read on every reconcile, so that rotated credentials reach the shoots
// without a restart.
func LoadImagePullSecret(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed reading image pull secret: %w", err)
	}
	var doc struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("image pull secret %s is no .dockerconfigjson document: %w", path, err)
	}
	if len(doc.Auths) == 0 {
		return nil, fmt.Errorf("image pull secret %s has no registry in \"auths\"", path)
	}
	return data, nil
}
