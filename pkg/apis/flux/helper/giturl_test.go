// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package helper_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	. "github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
)

var _ = Describe("GitURL", func() {
	type expectation struct {
		url             GitURL
		str             string
		hostPort        string
		knownHostsHost  string
		credentialsHost string
	}

	DescribeTable("ParseGitURL accepts and normalises",
		func(raw string, want expectation) {
			u, err := ParseGitURL(raw)
			Expect(err).NotTo(HaveOccurred())
			Expect(*u).To(Equal(want.url))
			Expect(u.String()).To(Equal(want.str))
			Expect(u.HostPort()).To(Equal(want.hostPort))
			Expect(u.KnownHostsHost()).To(Equal(want.knownHostsHost))
			Expect(u.CredentialsHost()).To(Equal(want.credentialsHost))

			// The canonical form must parse to the same URL, except that scp-like paths become absolute.
			again, err := ParseGitURL(u.String())
			Expect(err).NotTo(HaveOccurred())
			Expect(again.String()).To(Equal(want.str))
		},
		Entry("ssh with upper-case host and default port", "ssh://GIT@GitHub.com:22/o/r", expectation{
			url: GitURL{Scheme: "ssh", User: "GIT", Host: "github.com", Path: "/o/r"},
			str: "ssh://GIT@github.com/o/r", hostPort: "github.com:22", knownHostsHost: "github.com", credentialsHost: "github.com",
		}),
		Entry("ssh with a custom port", "ssh://git@host:2222/r", expectation{
			url: GitURL{Scheme: "ssh", User: "git", Host: "host", Port: "2222", Path: "/r"},
			str: "ssh://git@host:2222/r", hostPort: "host:2222", knownHostsHost: "[host]:2222", credentialsHost: "host:2222",
		}),
		Entry("scp-like", "git@Host.example:o/r.git", expectation{
			url: GitURL{Scheme: "ssh", User: "git", Host: "host.example", Path: "o/r.git"},
			str: "ssh://git@host.example/o/r.git", hostPort: "host.example:22", knownHostsHost: "host.example", credentialsHost: "host.example",
		}),
		Entry("scp-like with an absolute path", "git@host:/srv/r", expectation{
			url: GitURL{Scheme: "ssh", User: "git", Host: "host", Path: "/srv/r"},
			str: "ssh://git@host/srv/r", hostPort: "host:22", knownHostsHost: "host", credentialsHost: "host",
		}),
		Entry("https with the default port", "https://host:443/x", expectation{
			url: GitURL{Scheme: "https", Host: "host", Path: "/x"},
			str: "https://host/x", hostPort: "host:443", knownHostsHost: "host", credentialsHost: "host",
		}),
		Entry("https with port 22, which is not its default", "https://host:22/x", expectation{
			url: GitURL{Scheme: "https", Host: "host", Port: "22", Path: "/x"},
			str: "https://host:22/x", hostPort: "host:22", knownHostsHost: "[host]:22", credentialsHost: "host:22",
		}),
		Entry("upper-case https scheme", "HTTPS://Git.Example.com/group/sub/repo.git", expectation{
			url: GitURL{Scheme: "https", Host: "git.example.com", Path: "/group/sub/repo.git"},
			str: "https://git.example.com/group/sub/repo.git", hostPort: "git.example.com:443", knownHostsHost: "git.example.com", credentialsHost: "git.example.com",
		}),
		Entry("IPv6 with a custom port", "ssh://git@[FD00::1]:2222/r", expectation{
			url: GitURL{Scheme: "ssh", User: "git", Host: "fd00::1", Port: "2222", Path: "/r"},
			str: "ssh://git@[fd00::1]:2222/r", hostPort: "[fd00::1]:2222", knownHostsHost: "[fd00::1]:2222", credentialsHost: "fd00::1:2222",
		}),
		Entry("IPv6 with the default port", "ssh://git@[fd00::1]/r", expectation{
			url: GitURL{Scheme: "ssh", User: "git", Host: "fd00::1", Path: "/r"},
			str: "ssh://git@[fd00::1]/r", hostPort: "[fd00::1]:22", knownHostsHost: "fd00::1", credentialsHost: "fd00::1",
		}),
		Entry("IPv4", "https://10.0.0.1:8443/r", expectation{
			url: GitURL{Scheme: "https", Host: "10.0.0.1", Port: "8443", Path: "/r"},
			str: "https://10.0.0.1:8443/r", hostPort: "10.0.0.1:8443", knownHostsHost: "[10.0.0.1]:8443", credentialsHost: "10.0.0.1:8443",
		}),
	)

	DescribeTable("ParseGitURL rejects",
		func(raw, message string) {
			u, err := ParseGitURL(raw)
			Expect(err).To(MatchError(message))
			Expect(u).To(BeNil())
		},
		Entry("empty", "", "must not be empty"),
		Entry("http", "http://host/r", `scheme "http" is not supported, use ssh://, https:// or user@host:path`),
		Entry("file", "file:///srv/r", `scheme "file" is not supported, use ssh://, https:// or user@host:path`),
		Entry("git protocol", "git://host/r", `scheme "git" is not supported, use ssh://, https:// or user@host:path`),
		Entry("leading whitespace", " ssh://git@host/r", "must not contain whitespace or control characters"),
		Entry("inner whitespace", "https://host/my repo", "must not contain whitespace or control characters"),
		Entry("newline", "https://host/r\n", "must not contain whitespace or control characters"),
		Entry("ssh without a host", "ssh://git@/r", "must contain a host"),
		Entry("https without a host", "https:///r", "must contain a host"),
		Entry("ssh without a user", "ssh://host/r", "ssh URLs need a user, e.g. ssh://git@host/path"),
		Entry("ssh with a password", "ssh://git:secret@host/r", "must not contain a password"),
		Entry("https with credentials", "https://user:token@host/r", "https URLs must not contain credentials, use source.secretResourceName"),
		Entry("https without a path", "https://host", "must contain a repository path"),
		Entry("https with the root path", "https://host/", "must contain a repository path"),
		Entry("a query", "https://host/r?ref=main", "must not contain a query or fragment"),
		Entry("a fragment", "https://host/r#main", "must not contain a query or fragment"),
		Entry("port 0", "ssh://git@host:0/r", `port "0" is not between 1 and 65535`),
		Entry("port out of range", "ssh://git@host:65536/r", `port "65536" is not between 1 and 65535`),
		Entry("non-numeric port", "ssh://git@host:ssh/r", `not a valid URL: invalid port ":ssh" after host`),
		Entry("empty port", "ssh://git@host:/r", "port must not be empty"),
		Entry("invalid host name", "ssh://git@ho_st/r", `host "ho_st" is not a valid host name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`),
		Entry("a bare path", "/srv/git/r", "must be ssh://user@host/path, user@host:path or https://host/path"),
		Entry("a host without user and scheme", "host:o/r", "must be ssh://user@host/path, user@host:path or https://host/path"),
		Entry("a broken scheme", "https:/host/r", "must be ssh://user@host/path, user@host:path or https://host/path"),
		Entry("scp-like without a user", "@host:o/r", "scp-like URLs need a user, e.g. git@host:path"),
		Entry("scp-like without a host", "git@:o/r", "must contain a host"),
		Entry("scp-like without a path", "git@host:", "must contain a repository path"),
		Entry("scp-like with two users", "a@b@host:o/r", "must be ssh://user@host/path, user@host:path or https://host/path"),
	)

	Describe("GitHost and CredentialsHost", func() {
		It("return the known_hosts and credentials names of a URL", func() {
			Expect(GitHost("ssh://git@Host:2222/r")).To(Equal("[host]:2222"))
			Expect(CredentialsHost("ssh://git@Host:2222/r")).To(Equal("host:2222"))
			Expect(GitHost("git@GitHub.com:o/r")).To(Equal("github.com"))
			Expect(CredentialsHost("https://Host:443/r")).To(Equal("host"))
			Expect(CredentialsHost("ssh://git@[::1]:2222/r")).To(Equal("::1:2222"), "kluctl's form of an IPv6 host with a port")
			Expect(CredentialsHost("ssh://git@[::1]/r")).To(Equal("::1"))
			Expect(GitHost("ssh://git@[::1]:2222/r")).To(Equal("[::1]:2222"))
		})

		It("return the parse error", func() {
			_, err := GitHost("http://host/r")
			Expect(err).To(MatchError(`scheme "http" is not supported, use ssh://, https:// or user@host:path`))
			_, err = CredentialsHost("")
			Expect(err).To(MatchError("must not be empty"))
		})
	})

	Describe("Repository", func() {
		repository := func(raw string) string {
			g, err := ParseGitURL(raw)
			Expect(err).NotTo(HaveOccurred())
			return g.Repository()
		}

		It("is the same for every way of writing one repository", func() {
			for _, raw := range []string{
				"git@github.com:org/repo.git",
				"git@GitHub.com:org/repo",
				"ssh://git@github.com/org/repo.git",
				"ssh://other@github.com:22/org/repo/",
				"ssh://git@github.com//org/repo.git/",
			} {
				Expect(repository(raw)).To(Equal("github.com:22/org/repo"), raw)
			}
		})

		It("tells repositories, ports and hosts apart", func() {
			Expect(repository("git@github.com:org/other")).To(Equal("github.com:22/org/other"))
			Expect(repository("ssh://git@github.com:2222/org/repo")).To(Equal("github.com:2222/org/repo"))
			Expect(repository("ssh://git@[::1]:2222/r")).To(Equal("[::1]:2222/r"))
			Expect(repository("https://github.com/org/repo.git")).To(Equal("github.com:443/org/repo"))
		})
	})

	Describe("RedactURL", func() {
		It("hides only a password", func() {
			Expect(RedactURL("https://bot:s3cret@git.example.com/org/repo.git")).To(Equal("https://bot:xxxxx@git.example.com/org/repo.git"))
			Expect(RedactURL("https://bot:s e c@git.example.com")).To(Equal("https://bot:xxxxx@git.example.com"), "also when the URL does not parse")
			Expect(RedactURL("https://bot:a@b@git.example.com/x")).To(Equal("https://bot:xxxxx@git.example.com/x"))
			Expect(RedactURL("ssh://git@git.example.com:2222/org/repo")).To(Equal("ssh://git@git.example.com:2222/org/repo"))
			Expect(RedactURL("git@git.example.com:org/repo")).To(Equal("git@git.example.com:org/repo"))
			Expect(RedactURL("https://git.example.com/a:b@c")).To(Equal("https://git.example.com/a:b@c"), "an @ in the path is no userinfo")
		})
	})
})
