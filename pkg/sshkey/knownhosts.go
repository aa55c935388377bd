// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // OpenSSH hashes known_hosts names with HMAC-SHA1; we only verify them.
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KnownHostsLimits bound a known_hosts a tenant writes. A zero field means no bound, for data the
// operator or the extension itself writes.
type KnownHostsLimits struct {
	// MaxBytes bounds the size of the whole data.
	MaxBytes int
	// MaxLines bounds the number of lines, comments and blank lines included.
	MaxLines int
	// MaxPatternLength bounds one host pattern of a line's comma-separated list, "!" included.
	MaxPatternLength int
	// MaxWildcards bounds the '*' and '?' of one host pattern.
	MaxWildcards int
}

// DefaultKnownHostsLimits returns the limits for the known_hosts of tenants: 64 KiB and 1000 lines
// (some 75 git hosts), 300 characters per pattern (the longest DNS name) and 3 wildcards, as the
// shoot's controllers match with x/crypto's recursive matcher, whose time grows a hundredfold per
// "*" (see docs/operations/configuration.md, "Limits").
func DefaultKnownHostsLimits() KnownHostsLimits {
	return KnownHostsLimits{MaxBytes: 64 * 1024, MaxLines: 1000, MaxPatternLength: 300, MaxWildcards: 3}
}

// OrDefault returns the default limits for limits that were never set (a configuration that was not
// defaulted, in tools and tests): a tenant's input always has a bound.
func (l KnownHostsLimits) OrDefault() KnownHostsLimits {
	if l == (KnownHostsLimits{}) {
		return DefaultKnownHostsLimits()
	}
	return l
}

// maxReportedLines bounds the field errors of one validation: a thousand broken lines would
// otherwise all end up in the Extension's lastError.
const maxReportedLines = 10

// ValidateKnownHosts checks data against limits and its syntax; errors name fldPath and the line.
// Lines are what x/crypto's knownhosts (the reader of Flux and kluctl) accepts: blank lines,
// comments and "[@cert-authority|@revoked] patterns key-type base64-key [comment]" with valid
// patterns. The size and the line count are checked before anything is parsed.
func ValidateKnownHosts(data string, limits KnownHostsLimits, fldPath *field.Path) field.ErrorList {
	if limits.MaxBytes > 0 && len(data) > limits.MaxBytes {
		err := field.TooLong(fldPath, nil, limits.MaxBytes)
		err.Detail = fmt.Sprintf("is %d bytes, may not be more than %d bytes", len(data), limits.MaxBytes)
		return field.ErrorList{err}
	}
	if lines := countLines(data); limits.MaxLines > 0 && lines > limits.MaxLines {
		err := field.TooMany(fldPath, lines, limits.MaxLines)
		err.Detail = fmt.Sprintf("has %d lines, may not have more than %d", lines, limits.MaxLines)
		return field.ErrorList{err}
	}

	allErrs := field.ErrorList{}
	badLines := 0
	for i, line := range strings.Split(data, "\n") {
		lineErrs := validateLine(line, i+1, limits, fldPath)
		if len(lineErrs) == 0 {
			continue
		}
		if badLines++; badLines > maxReportedLines {
			continue
		}
		allErrs = append(allErrs, lineErrs...)
	}
	if badLines > maxReportedLines {
		allErrs = append(allErrs, field.Invalid(fldPath, field.OmitValueType{}, fmt.Sprintf("%d more lines are invalid", badLines-maxReportedLines)))
	}
	return allErrs
}

// countLines counts the lines of data as an editor shows them: a final newline ends the last
// line rather than starting another one.
func countLines(data string) int {
	if data == "" {
		return 0
	}
	n := strings.Count(data, "\n")
	if !strings.HasSuffix(data, "\n") {
		n++
	}
	return n
}

func validateLine(line string, lineNo int, limits KnownHostsLimits, fldPath *field.Path) field.ErrorList {
	trimmed := strings.TrimSpace(line)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") {
		return nil
	}
	marker, hosts, _, _, _, err := ssh.ParseKnownHosts([]byte(line))
	if errors.Is(err, io.EOF) {
		// The parser silently skips lines without a field separator; x/crypto's known_hosts
		// reader rejects them.
		err = errors.New(`expected "[@marker] hosts key-type base64-key [comment]"`)
	}
	if err == nil && marker != "" && marker != markerRevoked && marker != markerCertAuthority {
		err = fmt.Errorf("unknown marker @%s, expected @%s or @%s", marker, markerCertAuthority, markerRevoked)
	}
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, abbreviate(trimmed), fmt.Sprintf("line %d is not a known_hosts entry: %v", lineNo, err))}
	}
	allErrs := field.ErrorList{}
	if hashed(hosts) {
		if detail := checkHashed(hosts, limits); detail != "" {
			allErrs = append(allErrs, field.Invalid(fldPath, abbreviate(hosts[0]), fmt.Sprintf("line %d: host pattern %s", lineNo, detail)))
		}
		return allErrs
	}
	for _, pattern := range hosts {
		if detail := checkPattern(pattern, limits); detail != "" {
			allErrs = append(allErrs, field.Invalid(fldPath, abbreviate(pattern), fmt.Sprintf("line %d: host pattern %s", lineNo, detail)))
		}
	}
	return allErrs
}

const (
	markerRevoked       = "revoked"
	markerCertAuthority = "cert-authority"
)

// hashed reports whether the host field of a line is a hashed name, "|1|salt|hash". As for
// OpenSSH and x/crypto, that is the case only if the field starts with "|"; elsewhere, e.g.
// after a comma or a "!", such a name is a plain pattern that no host name matches.
func hashed(hosts []string) bool {
	return len(hosts) > 0 && strings.HasPrefix(hosts[0], "|")
}

// checkHashed returns what is wrong with the host field of a hashed line, or "".
func checkHashed(hosts []string, limits KnownHostsLimits) string {
	if limits.MaxPatternLength > 0 && len(hosts[0]) > limits.MaxPatternLength {
		return fmt.Sprintf("is %d characters long, may not be more than %d", len(hosts[0]), limits.MaxPatternLength)
	}
	if len(hosts) > 1 {
		return "is hashed and must be the only one of its line"
	}
	if _, _, err := decodeHashedHost(hosts[0]); err != nil {
		return err.Error()
	}
	return ""
}

// checkPattern returns what is wrong with one plain host pattern of a line, or "".
func checkPattern(pattern string, limits KnownHostsLimits) string {
	if limits.MaxPatternLength > 0 && len(pattern) > limits.MaxPatternLength {
		return fmt.Sprintf("is %d characters long, may not be more than %d", len(pattern), limits.MaxPatternLength)
	}
	p, negated := strings.CutPrefix(pattern, "!")
	switch {
	case p == "" && negated:
		return "is a negation without following host name"
	case p == "":
		// "a,,b": x/crypto skips the empty pattern, and so does matching.
		return ""
	case strings.HasPrefix(p, "["):
		if _, _, err := net.SplitHostPort(p); err != nil {
			return `must be "[host]:port"`
		}
	}
	if wildcards := strings.Count(p, "*") + strings.Count(p, "?"); limits.MaxWildcards > 0 && wildcards > limits.MaxWildcards {
		return fmt.Sprintf("has %d wildcards (* and ?), may not have more than %d", wildcards, limits.MaxWildcards)
	}
	return ""
}

// abbreviate keeps a bad value short enough for an error message and the Extension's status.
func abbreviate(s string) string {
	const maxLen = 100
	if len(s) <= maxLen {
		return s
	}
	return s[:maxLen] + "..."
}

// knownHostsDB is known_hosts data parsed in memory. x/crypto's knownhosts only reads files, and
// the extension runs on a read-only root file system, so the matching rules of OpenSSH (hashed
// names, wildcards, negations, ports, @revoked) are applied here to the parsed lines.
type knownHostsDB struct {
	hosts   []knownHostsLine
	revoked []ssh.PublicKey
}

type knownHostsLine struct {
	// salt and hash are the HMAC-SHA1 of a hashed line, which has no patterns.
	salt, hash []byte
	patterns   []string
	key        ssh.PublicKey
	line       int
}

// parseKnownHosts parses all of data; any invalid line makes the whole data invalid, as for
// x/crypto's known_hosts reader. Callers bound tenant data with ValidateKnownHosts first.
func parseKnownHosts(data []byte) (*knownHostsDB, error) {
	if errs := ValidateKnownHosts(string(data), KnownHostsLimits{}, field.NewPath("known_hosts")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid known_hosts data: %w", errs.ToAggregate())
	}
	db := &knownHostsDB{}
	for i, line := range strings.Split(string(data), "\n") {
		marker, hosts, key, _, _, err := ssh.ParseKnownHosts([]byte(line))
		if errors.Is(err, io.EOF) {
			// A blank line or a comment.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("invalid known_hosts data: line %d: %w", i+1, err)
		}
		switch marker {
		case markerRevoked:
			db.revoked = append(db.revoked, key)
		case markerCertAuthority:
			// Host certificates are not used for git hosts; such lines vouch for no plain key.
		default:
			l := knownHostsLine{key: key, line: i + 1}
			if hashed(hosts) {
				// Validated above.
				l.salt, l.hash, _ = decodeHashedHost(hosts[0])
			} else {
				for _, h := range hosts {
					if h != "" {
						l.patterns = append(l.patterns, h)
					}
				}
			}
			db.hosts = append(db.hosts, l)
		}
	}
	return db, nil
}

// decodeHashedHost splits "|1|<salt>|<hash>", the only hash format OpenSSH writes.
func decodeHashedHost(pattern string) (salt, hash []byte, err error) {
	parts := strings.Split(pattern, "|")
	if len(parts) != 4 || parts[0] != "" || parts[1] != "1" {
		return nil, nil, fmt.Errorf("unsupported hashed host %q", abbreviate(pattern))
	}
	if salt, err = base64.StdEncoding.DecodeString(parts[2]); err != nil {
		return nil, nil, fmt.Errorf("hashed host %q: %w", abbreviate(pattern), err)
	}
	if hash, err = base64.StdEncoding.DecodeString(parts[3]); err != nil {
		return nil, nil, fmt.Errorf("hashed host %q: %w", abbreviate(pattern), err)
	}
	return salt, hash, nil
}

// matches reports whether the line selects host and port: its hashed name is theirs, or, like
// OpenSSH's match_hostname, at least one pattern matches and no negated one does.
func (l knownHostsLine) matches(host, port string) bool {
	if l.hash != nil {
		mac := hmac.New(sha1.New, l.salt)
		mac.Write([]byte(KnownHostsAddress(host, port)))
		return hmac.Equal(mac.Sum(nil), l.hash)
	}
	matched := false
	for _, pattern := range l.patterns {
		p, negated := strings.CutPrefix(pattern, "!")
		if patternMatches(p, host, port) {
			if negated {
				return false
			}
			matched = true
		}
	}
	return matched
}

// patternMatches matches one pattern without its negation. A pattern names a port as
// "[host]:port" and port 22 otherwise, the way x/crypto's knownhosts reads it: the
// known_hosts the extension delivers is read by x/crypto in Flux and kluctl, so the
// extension must find the same entries they will.
func patternMatches(pattern, host, port string) bool {
	patternHost, patternPort := pattern, defaultSSHPort
	if h, p, err := net.SplitHostPort(pattern); err == nil {
		patternHost, patternPort = h, p
	}
	return patternPort == port && wildcardMatch(strings.ToLower(patternHost), strings.ToLower(host))
}

// wildcardMatch matches name against an OpenSSH pattern where '*' stands for any sequence and
// '?' for any single byte.
func wildcardMatch(pattern, name string) bool {
	matched, _ := matchGlob(pattern, name)
	return matched
}

// matchGlob is wildcardMatch that also returns its steps. Unlike OpenSSH's and x/crypto's recursion
// at every '*' (len(name)^stars steps), a mismatch only moves the last '*' on, since an earlier one
// can absorb nothing the later cannot: at most (len(pattern)+1)*(len(name)+1) steps.
func matchGlob(pattern, name string) (matched bool, steps int) {
	p, n := 0, 0
	star, resume := -1, 0 // the last '*' seen and the byte of name it absorbs up to
	for n < len(name) {
		steps++
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, resume = p, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case star >= 0:
			resume++
			p, n = star+1, resume
		default:
			return false, steps
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		steps++
		p++
	}
	return p == len(pattern), steps
}

// keysFor returns the keys of all lines that select host and port.
func (db *knownHostsDB) keysFor(host, port string) []knownhosts.KnownKey {
	var keys []knownhosts.KnownKey
	for _, l := range db.hosts {
		if l.matches(host, port) {
			keys = append(keys, knownhosts.KnownKey{Key: l.key, Filename: "known_hosts", Line: l.line})
		}
	}
	return keys
}

func (db *knownHostsDB) isRevoked(key ssh.PublicKey) bool {
	for _, r := range db.revoked {
		if SamePublicKey(r, key) {
			return true
		}
	}
	return false
}

// check follows knownhosts' contract: nil for a known key, *knownhosts.RevokedError for a revoked
// one, *knownhosts.KeyError otherwise (with Want empty when the host is unknown).
func (db *knownHostsDB) check(hostname string, remote net.Addr, key ssh.PublicKey) error {
	address := hostname
	if address == "" && remote != nil {
		address = remote.String()
	}
	host, port := SplitHostPort(address)
	if db.isRevoked(key) {
		return &knownhosts.RevokedError{Revoked: knownhosts.KnownKey{Key: key, Filename: "known_hosts"}}
	}
	want := db.keysFor(host, port)
	for _, k := range want {
		if SamePublicKey(k.Key, key) {
			return nil
		}
	}
	return &knownhosts.KeyError{Want: want}
}

// JoinKnownHosts concatenates known_hosts data, making sure every part ends with a newline so the
// last line of one part does not run into the first of the next.
func JoinKnownHosts(parts ...[]byte) []byte {
	var out []byte
	for _, part := range parts {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		out = append(out, part...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out
}
