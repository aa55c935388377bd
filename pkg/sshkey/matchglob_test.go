// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// globRegexp is the reference for the wildcard matcher: the pattern translated into a regular
// expression, which Go matches in linear time. Both sides go through latin1, so that '?' and '.'
// stand for one byte.
func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, c := range latin1(pattern) {
		switch c {
		case '*':
			b.WriteString("(?s:.*)")
		case '?':
			b.WriteString("(?s:.)")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// latin1 maps every byte of s to one rune.
func latin1(s string) string {
	runes := make([]rune, len(s))
	for i := range len(s) {
		runes[i] = rune(s[i])
	}
	return string(runes)
}

// stepBound is the most steps the matcher may take.
func stepBound(pattern, name string) int {
	return (len(pattern) + 1) * (len(name) + 1)
}

var _ = Describe("wildcard matching", func() {
	DescribeTable("agrees with the regular expression of the pattern in bounded steps",
		func(pattern, name string) {
			matched, steps := sshkey.MatchGlob(pattern, name)
			Expect(matched).To(Equal(globRegexp(pattern).MatchString(latin1(name))))
			Expect(steps).To(BeNumerically("<=", stepBound(pattern, name)))
		},
		Entry("literal", "github.com", "github.com"),
		Entry("literal, other", "github.com", "gitlab.com"),
		Entry("star only", "*", "github.com"),
		Entry("star matches empty", "*", ""),
		Entry("star at the end matches empty", "git*", "git"),
		Entry("star in the middle matches empty", "git*.com", "git.com"),
		Entry("stars in a row", "g**b", "gb"),
		Entry("question mark", "git?ub.com", "github.com"),
		Entry("question mark needs a byte", "a?", "a"),
		Entry("star needs a later literal", "*.example.org", "example.org"),
		Entry("backtracking over a partial match", "*ab", "aab"),
		Entry("backtracking twice", "*a*b", "aaxaab"),
		Entry("empty pattern", "", "a"),
		Entry("empty pattern and name", "", ""),
		Entry("literal star in the name", "a*", "a*b"),
		Entry("crafted pattern", strings.Repeat("*a", 9)+"z", strings.Repeat("a", 180)),
	)

	// The pattern of a hanging reconcile (issue 20): recursive matching takes len(name)^9 steps.
	It("takes steps linear in the name for the crafted pattern", func() {
		pattern := strings.Repeat("*a", 9) + "z"
		_, steps180 := sshkey.MatchGlob(pattern, strings.Repeat("a", 180))
		_, steps360 := sshkey.MatchGlob(pattern, strings.Repeat("a", 360))
		Expect(steps180).To(BeNumerically("<=", 4*180))
		Expect(steps360).To(BeNumerically("<=", 2*steps180+len(pattern)))
	})
})

// FuzzMatchHost compares the wildcard matcher with its regular expression and runs the whole
// lookup on a known_hosts line with the pattern, which must neither panic nor take long.
func FuzzMatchHost(f *testing.F) {
	f.Add("*.example.org", "git.example.org")
	f.Add("git?.example.org", "git1.example.org")
	f.Add(strings.Repeat("*a", 9)+"z", strings.Repeat("a", 180))
	f.Add("*ab*", "aabab")
	f.Add("[*.example.org]:2222", "git.example.org:2222")
	f.Add("!git.example.org,*.example.org", "git.example.org")
	f.Add("|1|c2FsdA==|aGFzaA==", "github.com")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		// Small inputs keep every run fast; size is what the benchmark covers.
		if len(pattern) > 64 {
			pattern = pattern[:64]
		}
		if len(name) > 256 {
			name = name[:256]
		}
		matched, steps := sshkey.MatchGlob(pattern, name)
		if want := globRegexp(pattern).MatchString(latin1(name)); matched != want {
			t.Fatalf("MatchGlob(%q, %q) = %v, the regular expression says %v", pattern, name, matched, want)
		}
		if bound := stepBound(pattern, name); steps > bound {
			t.Fatalf("MatchGlob(%q, %q) took %d steps, more than %d", pattern, name, steps, bound)
		}
		data := []byte(pattern + " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
		_ = sshkey.KnownHostsContains(data, name)
	})
}

// BenchmarkMatchHost runs the worst cases of wildcard matching at growing name lengths: time
// per match must grow linearly with the name. "stars" is the crafted pattern of issue 20,
// "backtrack" the worst case of the greedy matcher (every '*' restart re-reads the pattern),
// "lookup" the crafted pattern through KnownHostsContains, known_hosts parsing included.
func BenchmarkMatchHost(b *testing.B) {
	crafted := strings.Repeat("*a", 9) + "z"
	backtrack := "*" + strings.Repeat("a", 15) + "b"
	for _, n := range []int{64, 256, 1024} {
		name := strings.Repeat("a", n)
		b.Run(fmt.Sprintf("stars/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				sshkey.MatchGlob(crafted, name)
			}
		})
		b.Run(fmt.Sprintf("backtrack/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				sshkey.MatchGlob(backtrack, name)
			}
		})
		b.Run(fmt.Sprintf("lookup/n=%d", n), func(b *testing.B) {
			data := []byte(crafted + " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
			for b.Loop() {
				sshkey.KnownHostsContains(data, name)
			}
		})
	}
}
