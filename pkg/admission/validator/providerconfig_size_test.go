// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/admission/validator"
)

var _ = Describe("Shoot validator: providerConfig size", func() {
	ctx := context.Background()
	validator := NewShootValidator(supported, defaultHosts, defaultLimits, nil)

	// hugeConfig is a well-formed providerConfig of 2.7 MiB: 1.3 s per decode, and the validator
	// decoded it up to five times before any limit.
	var b strings.Builder
	b.WriteString("bootstrap:\n  kluctl:\n    args:\n")
	for i := 0; b.Len() < 2700<<10; i++ {
		fmt.Fprintf(&b, "      key%06d: %s\n", i, strings.Repeat("v", 40))
	}
	hugeConfig := b.String()

	// allocs is how many allocations one validation makes: decoding 2.7 MiB of YAML makes
	// millions, a refusal by size a few hundred.
	allocs := func(validate func() error) float64 {
		return testing.AllocsPerRun(1, func() { _ = validate() })
	}
	smallAllocs := allocs(func() error { return validator.Validate(ctx, newShoot(validConfig, allSecretResources()...), nil) })

	It("refuses a providerConfig over the limit without decoding it", func() {
		shoot := newShoot(hugeConfig, allSecretResources()...)
		Expect(validator.Validate(ctx, shoot, nil)).To(MatchError(fmt.Sprintf(
			"spec.extensions[1].providerConfig: Too long: has %d bytes, more than the operator's limit of 32768 bytes (limits.providerConfigMaxBytes)", len(hugeConfig))))
		Expect(allocs(func() error { return validator.Validate(ctx, shoot, nil) })).To(BeNumerically("<", smallAllocs))

		By("on an update from a small one")
		old := newShoot(validConfig, allSecretResources()...)
		Expect(validator.Validate(ctx, shoot, old)).To(MatchError(ContainSubstring("limits.providerConfigMaxBytes")))
		Expect(allocs(func() error { return validator.Validate(ctx, shoot, old) })).To(BeNumerically("<", 2*smallAllocs))
	})

	It("admits other changes of a Shoot whose unchanged providerConfig is over the limit, without decoding it", func() {
		old := newShoot(hugeConfig, allSecretResources()...)
		updated := old.DeepCopy()
		updated.Labels = map[string]string{"team": "a"}
		Expect(validator.Validate(ctx, updated, old)).To(Succeed())
		Expect(allocs(func() error { return validator.Validate(ctx, updated, old) })).To(BeNumerically("<", smallAllocs))
	})

	It("validates a new providerConfig replacing one over the limit without decoding the old one", func() {
		old := newShoot(hugeConfig, allSecretResources()...)
		updated := newShoot(validConfig, allSecretResources()...)
		Expect(validator.Validate(ctx, updated, old)).To(Succeed())
		Expect(allocs(func() error { return validator.Validate(ctx, updated, old) })).To(BeNumerically("<", 2*smallAllocs))
	})
})
