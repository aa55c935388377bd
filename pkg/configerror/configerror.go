// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package configerror is the one error type for mistakes in the user's configuration: gardener
// reports it as ERR_CONFIGURATION_PROBLEM and does not retry aggressively, as retrying cannot help
// until the user changes the configuration.
package configerror

import (
	"errors"
	"strings"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// ErrInvalidConfig matches every error about the user's configuration with errors.Is.
var ErrInvalidConfig = errors.New("invalid shoot-flux configuration")

// Error lists what is wrong with the configuration. Each problem starts with where the offending
// value came from, e.g. `ConfigMap garden-foo/flux-config: config.yaml: source.ref: ...`, so that
// the user knows which object to fix.
type Error struct {
	Problems []string
	// cause is the error New wrapped, if any.
	cause error
}

// New returns the error of one or more problems.
func New(problems ...string) *Error {
	return &Error{Problems: problems}
}

// Wrap marks err as caused by the user's configuration; its message stays. nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Problems: []string{err.Error()}, cause: err}
}

// Error joins the problems.
func (e *Error) Error() string {
	return strings.Join(e.Problems, "; ")
}

// Unwrap returns the wrapped error, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *Error) Is(target error) bool {
	return target == ErrInvalidConfig
}

// Codes lets gardener report ERR_CONFIGURATION_PROBLEM in the Extension's lastError.
func (e *Error) Codes() []gardencorev1beta1.ErrorCode {
	return []gardencorev1beta1.ErrorCode{gardencorev1beta1.ErrorConfigurationProblem}
}
