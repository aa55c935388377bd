// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package helper parses and normalises the git and OCI URLs of the shoot-flux configuration.
package helper

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// SchemeSSH is the scheme of ssh:// and scp-like URLs.
	SchemeSSH = "ssh"
	// SchemeHTTPS is the scheme of https:// URLs.
	SchemeHTTPS = "https"

	defaultSSHPort   = "22"
	defaultHTTPSPort = "443"
)

// GitURL is a parsed repository URL.
type GitURL struct {
	// Scheme is SchemeSSH or SchemeHTTPS; scp-like URLs are SchemeSSH.
	Scheme string
	// User is the SSH user; always empty for https.
	User string
	// Host is the lower-case host name or IP address, without brackets.
	Host string
	// Port is empty for the scheme's default port.
	Port string
	// Path is the repository path as written: with a leading "/" for ssh:// and https:// URLs,
	// relative to the user's home for scp-like URLs unless it starts with "/".
	Path string
}

// ParseGitURL parses ssh://user@host[:port]/path, scp-like user@host:path and
// https://host[:port]/path. Other schemes, embedded https credentials and whitespace are rejected.
func ParseGitURL(s string) (*GitURL, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return nil, errors.New("must not contain whitespace or control characters")
	}
	if !strings.Contains(s, "://") {
		return parseSCPLike(s)
	}

	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the whole URL, which the caller already shows.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return nil, fmt.Errorf("not a valid URL: %w", err)
	}
	g := &GitURL{Scheme: u.Scheme, Host: strings.ToLower(u.Hostname()), Port: u.Port(), Path: u.Path}
	switch u.Scheme {
	case SchemeSSH:
		if u.User == nil || u.User.Username() == "" {
			return nil, errors.New("ssh URLs need a user, e.g. ssh://git@host/path")
		}
		if _, hasPassword := u.User.Password(); hasPassword {
			return nil, errors.New("must not contain a password")
		}
		g.User = u.User.Username()
	case SchemeHTTPS:
		if u.User != nil {
			return nil, errors.New("https URLs must not contain credentials, use source.secretResourceName")
		}
	default:
		return nil, fmt.Errorf("scheme %q is not supported, use ssh://, https:// or user@host:path", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("must not contain a query or fragment")
	}
	if err := validateHost(g.Host); err != nil {
		return nil, err
	}
	if g.Port != "" {
		if n, err := strconv.Atoi(g.Port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %q is not between 1 and 65535", g.Port)
		}
		if g.Port == defaultPort(g.Scheme) {
			g.Port = ""
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, errors.New("port must not be empty")
	}
	if strings.Trim(g.Path, "/") == "" {
		return nil, errors.New("must contain a repository path")
	}
	return g, nil
}

// parseSCPLike parses user@host:path, the short form git and ssh accept for SSH.
func parseSCPLike(s string) (*GitURL, error) {
	errForm := errors.New("must be ssh://user@host/path, user@host:path or https://host/path")
	userHost, path, ok := strings.Cut(s, ":")
	if !ok || strings.ContainsAny(userHost, "/[]") {
		return nil, errForm
	}
	user, host, ok := strings.Cut(userHost, "@")
	if !ok {
		return nil, errForm
	}
	if user == "" {
		return nil, errors.New("scp-like URLs need a user, e.g. git@host:path")
	}
	if strings.Contains(host, "@") {
		return nil, errForm
	}
	g := &GitURL{Scheme: SchemeSSH, User: user, Host: strings.ToLower(host), Path: path}
	if err := validateHost(g.Host); err != nil {
		return nil, err
	}
	if strings.Trim(path, "/") == "" {
		return nil, errors.New("must contain a repository path")
	}
	return g, nil
}

func validateHost(host string) error {
	if host == "" {
		return errors.New("must contain a host")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return fmt.Errorf("host %q is not a valid host name: %s", host, strings.Join(errs, "; "))
	}
	return nil
}

func defaultPort(scheme string) string {
	if scheme == SchemeHTTPS {
		return defaultHTTPSPort
	}
	return defaultSSHPort
}

// String returns the URL in the ssh:// or https:// form, which Flux requires: scp-like URLs are
// rewritten to ssh://user@host/path.
func (g *GitURL) String() string {
	u := url.URL{Scheme: g.Scheme, Host: g.Host, Path: g.Path}
	switch {
	case g.Port != "":
		u.Host = net.JoinHostPort(g.Host, g.Port)
	case strings.Contains(g.Host, ":"):
		u.Host = "[" + g.Host + "]"
	}
	if g.User != "" {
		u.User = url.User(g.User)
	}
	if !strings.HasPrefix(u.Path, "/") {
		u.Path = "/" + u.Path
	}
	return u.String()
}

// Repository identifies the repository regardless of how its URL is written: the user, an explicit
// default port, scp-like or ssh:// form, a leading or trailing "/" and a ".git" suffix do not
// change it. It is "host:port/path" with the scheme's default port filled in.
func (g *GitURL) Repository() string {
	path := strings.TrimSuffix(strings.Trim(g.Path, "/"), ".git")
	return g.HostPort() + "/" + strings.Trim(path, "/")
}

// HostPort returns the "host:port" address of the git server, with the scheme's default port if
// none is set.
func (g *GitURL) HostPort() string {
	port := g.Port
	if port == "" {
		port = defaultPort(g.Scheme)
	}
	return net.JoinHostPort(g.Host, port)
}

// KnownHostsHost returns the host as known_hosts names it: the bare host for the default SSH port,
// "[host]:port" otherwise.
func (g *GitURL) KnownHostsHost() string {
	if g.Port == "" {
		return g.Host
	}
	return "[" + g.Host + "]:" + g.Port
}

// CredentialsHost returns the host kluctl matches git credentials against: the bare host for the
// scheme's default port, "host:port" otherwise. kluctl joins an IPv6 address and a port without
// brackets ("::1:2222"), so that is the form that matches.
func (g *GitURL) CredentialsHost() string {
	if g.Port == "" {
		return g.Host
	}
	return g.Host + ":" + g.Port
}

// GitHost returns the known_hosts name of the host of rawURL, see GitURL.KnownHostsHost.
func GitHost(rawURL string) (string, error) {
	g, err := ParseGitURL(rawURL)
	if err != nil {
		return "", err
	}
	return g.KnownHostsHost(), nil
}

// CredentialsHost returns the kluctl credentials host of rawURL, see GitURL.CredentialsHost.
func CredentialsHost(rawURL string) (string, error) {
	g, err := ParseGitURL(rawURL)
	if err != nil {
		return "", err
	}
	return g.CredentialsHost(), nil
}

// RedactURL hides the password of a URL's userinfo ("https://user:xxxxx@host/path"), also of a URL
// that does not parse, so that an error quoting a rejected URL cannot carry a credential into a
// status, an event or a webhook response.
func RedactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return s
	}
	out := scheme + "://" + user + ":xxxxx" + authority[at:]
	if hasPath {
		out += "/" + path
	}
	return out
}
