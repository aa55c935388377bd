// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package configerror_test

import (
	"errors"
	"fmt"
	"testing"

	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/configerror"
)

func TestConfigError(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Configuration Error Suite")
}

var _ = Describe("Error", func() {
	It("reports ERR_CONFIGURATION_PROBLEM, also wrapped, and keeps the message and the cause", func() {
		cause := errors.New("source.url: unsupported scheme")
		err := fmt.Errorf("failed: %w", configerror.Wrap(cause))
		Expect(err).To(MatchError("failed: source.url: unsupported scheme"))
		Expect(err).To(MatchError(configerror.ErrInvalidConfig))
		Expect(errors.Is(err, cause)).To(BeTrue())
		Expect(v1beta1helper.ExtractErrorCodes(err)).To(ConsistOf(gardencorev1beta1.ErrorConfigurationProblem))
	})

	It("joins its problems", func() {
		Expect(configerror.New("a: bad", "b: worse")).To(MatchError("a: bad; b: worse"))
		Expect(configerror.Wrap(nil)).To(BeNil())
	})
})
