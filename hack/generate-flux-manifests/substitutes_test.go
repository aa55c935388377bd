// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("parseSubstitutes", func() {
	It("reads the committed list", func() {
		Expect(substitutesErr).NotTo(HaveOccurred())
		Expect(substitutes).To(HaveKeyWithValue("github.com/fluxcd/source-controller@v1.7.4", substitute{config: "v1.7.3"}))
		Expect(substitutes).To(HaveKeyWithValue("github.com/fluxcd/helm-controller@v1.4.5", substitute{config: "v1.4.3", controllerGen: "v0.19.0"}))
	})

	It("skips comments and blank lines", func() {
		Expect(parseSubstitutes([]byte("# comment\n\nexample.com/ctrl@v1.7.5 v1.6.0 v0.19.0\n"))).To(Equal(map[string]substitute{
			"example.com/ctrl@v1.7.5": {config: "v1.6.0", controllerGen: "v0.19.0"},
		}))
	})

	DescribeTable("rejects malformed lines",
		func(line, message string) {
			_, err := parseSubstitutes([]byte("# header\n" + line + "\n"))
			Expect(err).To(MatchError(ContainSubstring("line 2: " + message)))
		},
		Entry("a missing stand-in", "example.com/ctrl@v1.7.5", "expected <module>@<version>"),
		Entry("too many columns", "example.com/ctrl@v1.7.5 v1.6.0 v0.19.0 extra", "expected <module>@<version>"),
		Entry("no version", "example.com/ctrl v1.6.0", `"example.com/ctrl" is not <module>@<version>`),
		Entry("a stand-in that is not a version", "example.com/ctrl@v1.7.5 latest", `"latest" is not a version`),
	)

	It("rejects a version listed twice", func() {
		_, err := parseSubstitutes([]byte("example.com/ctrl@v1.7.5 v1.6.0\nexample.com/ctrl@v1.7.5 v1.6.1\n"))
		Expect(err).To(MatchError(ContainSubstring("line 2: example.com/ctrl@v1.7.5 is listed twice")))
	})
})
