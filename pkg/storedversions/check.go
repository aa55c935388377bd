// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package storedversions

import (
	"context"
	"fmt"
	"time"

	extensionsconfigv1alpha1 "github.com/gardener/gardener/extensions/pkg/apis/config/v1alpha1"
	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fluxv1alpha1 "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/shootclient"
)

// ShootLimits bound the migration in a shoot.
var ShootLimits = DefaultLimits()

// shootRESTOptions are those of the migration's shoot client: client-go's default of 5 requests
// per second would take 1,000 s for ShootLimits.MaxObjects, far over its timeout; 100 per second
// take 50 s. One request may take 10 s.
var shootRESTOptions = extensionsconfigv1alpha1.RESTOptions{QPS: ptr.To[float32](100), Burst: ptr.To(100), Timeout: ptr.To(10 * time.Second)}

// NewShootClient returns the shoot client of the migration: mapper is static, responses are
// bounded (package shootclient). Specs replace it with a fake shoot.
var NewShootClient = func(ctx context.Context, seed client.Client, namespace string, mapper meta.RESTMapper) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return shootclient.NewWithOptions(ctx, seed, namespace, shootRESTOptions, client.Options{Scheme: scheme, Mapper: mapper})
}

// Check is the stored-version check of one shoot.
type Check struct {
	// Seed reads the shoot's access Secret in Namespace, the shoot's seed namespace.
	Seed      client.Client
	Namespace string
	// CheckedFor names what decides the desired CRDs; a shoot is checked once per value.
	CheckedFor string
	// Desired renders the CRDs the controllers ManagedResource is to carry.
	Desired func() ([]apiextensionsv1.CustomResourceDefinition, error)
	// Previous is the record of the last reconcile, nil if there is none.
	Previous *fluxv1alpha1.StoredVersions
	// Skip keeps the record as it is: the shoot's API server does not answer (hibernation) or the
	// controllers are not deployed (handover).
	Skip bool
}

// Ensure migrates the shoot's objects off the stored versions that the desired CRDs drop, before
// the resource manager applies them (its apply of such a CRD would fail), and returns the record
// for the providerStatus. ErrTooManyObjects marks a shoot whose owner has more objects than
// ShootLimits allow.
func Ensure(ctx context.Context, log logr.Logger, c Check) (*fluxv1alpha1.StoredVersions, error) {
	var result *fluxv1alpha1.StoredVersions
	if c.Previous != nil {
		result = c.Previous.DeepCopy()
		if c.Previous.CheckedFor == c.CheckedFor {
			return result, nil
		}
	}
	if c.Skip {
		return result, nil
	}

	desired, err := c.Desired()
	if err != nil {
		return nil, err
	}
	shoot, err := NewShootClient(ctx, c.Seed, c.Namespace, RESTMapper(desired))
	if err != nil {
		return nil, fmt.Errorf("failed creating the shoot client for the stored-version check: %w", err)
	}
	var live []apiextensionsv1.CustomResourceDefinition
	for _, d := range desired {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := shoot.Get(ctx, client.ObjectKey{Name: d.Name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("failed reading CRD %s of the shoot: %w", d.Name, err)
		}
		live = append(live, *crd)
	}

	if result == nil {
		result = &fluxv1alpha1.StoredVersions{}
	}
	result.CheckedFor = c.CheckedFor
	plan := Plan(live, desired)
	if len(plan) == 0 {
		return result, nil
	}
	log.Info("Migrating the shoot's objects off stored versions the new CRDs drop", "crds", len(plan), "checkedFor", c.CheckedFor)
	migrated, err := Migrate(ctx, shoot, plan, ShootLimits)
	for _, k := range migrated.Kinds {
		log.Info("Migrated stored versions", "crd", k.CRD, "from", k.From, "to", k.To, "objects", k.Objects)
	}
	if err != nil {
		return nil, fmt.Errorf("kept the running controllers: %w", err)
	}
	result.Migrated = nil
	for _, k := range migrated.Kinds {
		result.Migrated = append(result.Migrated, fluxv1alpha1.MigratedKind{CRD: k.CRD, Kind: k.Kind, From: k.From, To: k.To, Objects: int32(k.Objects)})
	}
	result.Time = ptr.To(metav1.Now().Rfc3339Copy())
	return result, nil
}
