// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
)

var _ = Describe("version selectors", func() {
	// Unsorted on purpose: the embedded releases come in any order.
	releases := []string{"v2.9.5", "v2.7.5", "v2.9.12", "v2.7.0", "v10.1.0"}

	DescribeTable("CanonicalVersionSelector",
		func(selector, canonical string, ok bool) {
			got, gotOK := helper.CanonicalVersionSelector(selector)
			Expect(gotOK).To(Equal(ok))
			Expect(got).To(Equal(canonical))
		},
		Entry("release", "v2.9.5", "v2.9.5", true),
		Entry("release without v", "2.9.5", "v2.9.5", true),
		Entry("minor", "v2.9", "v2.9", true),
		Entry("minor without v", "2.9", "v2.9", true),
		Entry("minor with x", "v2.9.x", "v2.9", true),
		Entry("minor with x without v", "2.9.x", "v2.9", true),
		Entry("zeros", "v0.0.0", "v0.0.0", true),
		Entry("major only", "v2", "", false),
		Entry("major with x", "v2.x", "", false),
		Entry("upper-case X", "v2.9.X", "", false),
		Entry("wildcard", "v2.9.*", "", false),
		Entry("prerelease", "v2.9.5-rc.1", "", false),
		Entry("build metadata", "v2.9.5+build", "", false),
		Entry("leading zero", "v2.09.5", "", false),
		Entry("four parts", "v2.9.5.1", "", false),
		Entry("double v", "vv2.9.5", "", false),
		Entry("spaces", " v2.9.5", "", false),
		Entry("latest", "latest", "", false),
		Entry("empty", "", "", false),
	)

	DescribeTable("ResolveVersion selects the release",
		func(selector, release string) {
			Expect(helper.ResolveVersion(selector, releases)).To(Equal(release))
		},
		Entry("exact", "v2.9.5", "v2.9.5"),
		Entry("exact without v", "2.9.5", "v2.9.5"),
		Entry("exact older patch of a minor", "v2.7.0", "v2.7.0"),
		Entry("minor: newest patch, compared as versions", "v2.9", "v2.9.12"),
		Entry("minor without v", "2.9", "v2.9.12"),
		Entry("minor with x", "v2.7.x", "v2.7.5"),
		Entry("minor with x without v", "2.7.x", "v2.7.5"),
		Entry("minor of a two-digit major", "v10.1", "v10.1.0"),
	)

	DescribeTable("ResolveVersion rejects what selects no embedded release, listing the supported selectors",
		func(selector, message string) {
			_, err := helper.ResolveVersion(selector, releases)
			Expect(err).To(MatchError(message + "; supported: v2.7, v2.7.0, v2.7.5, v2.9, v2.9.5, v2.9.12, v10.1, v10.1.0"))
		},
		Entry("unknown release", "v2.9.6", `version "v2.9.6" is not embedded`),
		Entry("unknown minor", "v2.8", `no embedded release of minor "v2.8"`),
		Entry("unknown minor with x", "2.8.x", `no embedded release of minor "2.8.x"`),
		Entry("major", "v2", `version "v2" is neither a release (e.g. v2.9.5) nor a minor (e.g. v2.9, 2.9.x)`),
		Entry("garbage", "latest", `version "latest" is neither a release (e.g. v2.9.5) nor a minor (e.g. v2.9, 2.9.x)`),
	)

	It("upgrades a minor selector to a newer patch once one is embedded, and keeps exact releases", func() {
		before := []string{"v2.9.5"}
		after := []string{"v2.9.5", "v2.9.6"}
		Expect(helper.ResolveVersion("v2.9", before)).To(Equal("v2.9.5"))
		Expect(helper.ResolveVersion("v2.9", after)).To(Equal("v2.9.6"))
		Expect(helper.ResolveVersion("v2.9.5", after)).To(Equal("v2.9.5"))
	})

	It("lists every release and its minor", func() {
		Expect(helper.VersionSelectors([]string{"v2.9.5", "v2.7.5"})).To(Equal([]string{"v2.7", "v2.7.5", "v2.9", "v2.9.5"}))
		Expect(helper.VersionSelectors(nil)).To(BeEmpty())
	})

	It("tells minors from releases", func() {
		Expect(helper.IsMinorSelector("2.9.x")).To(BeTrue())
		Expect(helper.IsMinorSelector("v2.9")).To(BeTrue())
		Expect(helper.IsMinorSelector("v2.9.5")).To(BeFalse())
		Expect(helper.IsMinorSelector("latest")).To(BeFalse())
	})
})
