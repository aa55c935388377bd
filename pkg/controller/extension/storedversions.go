// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package extension

import (
	"context"
	"errors"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	fluxapi "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux"
	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/storedversions"
)

// migrateStoredVersions migrates the shoot's objects off the stored versions the CRDs of values
// drop, once per set of releases and components (package storedversions). A failure stops the
// reconcile before the controllers change, so the running Flux stays.
func (a *actuator) migrateStoredVersions(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension, cfg *fluxapi.FluxConfig, previous *fluxv1alpha1.FluxStatus, values controllers.Values, hibernated bool) (*fluxv1alpha1.StoredVersions, error) {
	check := storedversions.Check{
		Seed:       a.client,
		Namespace:  ex.Namespace,
		CheckedFor: controllers.CRDsKey(values),
		Desired:    func() ([]apiextensionsv1.CustomResourceDefinition, error) { return controllers.CRDs(values) },
		// Handed-over controllers are not deployed.
		Skip: hibernated || (cfg.Flux.Management == fluxapi.ManagementHandover && previous != nil && previous.HandedOverAt != nil),
	}
	if previous != nil {
		check.Previous = previous.StoredVersions
	}
	result, err := storedversions.Ensure(ctx, log, check)
	if errors.Is(err, storedversions.ErrTooManyObjects) {
		return nil, configerror.Wrap(err)
	}
	return result, err
}
