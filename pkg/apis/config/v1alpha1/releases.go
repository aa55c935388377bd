// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
)

// DecodeReleases decodes a Releases document (JSON, e.g. the admission's --rollout-releases),
// strictly as the controller's configuration file, and defaults it. Empty means none.
func DecodeReleases(data []byte) (config.Releases, error) {
	var out config.Releases
	if len(bytes.TrimSpace(data)) == 0 {
		return out, nil
	}
	versioned := &Releases{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(versioned); err != nil {
		return out, fmt.Errorf("failed decoding releases: %w", err)
	}
	if dec.More() {
		return out, fmt.Errorf("failed decoding releases: more than one document")
	}
	for _, list := range [][]ReleaseLifecycle{versioned.Flux, versioned.Kluctl} {
		for i := range list {
			SetDefaults_ReleaseLifecycle(&list[i])
		}
	}
	if err := Convert_v1alpha1_Releases_To_config_Releases(versioned, &out, nil); err != nil {
		return out, fmt.Errorf("failed converting releases: %w", err)
	}
	return out, nil
}
