// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"

	"github.com/gardener/gardener/extensions/pkg/controller/extension"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
)

// InstrumentActuator returns a counts every operation of a by phase and the failed ones by error
// class (shoot_flux_operations_total, shoot_flux_reconcile_errors_total).
func InstrumentActuator(a extension.Actuator) extension.Actuator {
	return &actuator{Actuator: a}
}

type actuator struct {
	extension.Actuator
}

func (a *actuator) Reconcile(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.Actuator.Reconcile(ctx, log, ex)
	RecordOperation(ctx, PhaseReconcile, err)
	return err
}

func (a *actuator) Delete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.Actuator.Delete(ctx, log, ex)
	RecordOperation(ctx, PhaseDelete, err)
	return err
}

func (a *actuator) ForceDelete(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.Actuator.ForceDelete(ctx, log, ex)
	RecordOperation(ctx, PhaseDelete, err)
	return err
}

func (a *actuator) Migrate(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.Actuator.Migrate(ctx, log, ex)
	RecordOperation(ctx, PhaseMigrate, err)
	return err
}

func (a *actuator) Restore(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	err := a.Actuator.Restore(ctx, log, ex)
	RecordOperation(ctx, PhaseRestore, err)
	return err
}
