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
)

// knownHostsDB is known_hosts data parsed in memory. x/crypto's knownhosts only reads files, and
// the extension runs on a read-only root file system, so the matching rules of OpenSSH (hashed
// names, wildcards, negations, ports, @revoked) are applied here to the parsed lines.
type knownHostsDB struct {
	hosts   []knownHostsLine
	revoked []ssh.PublicKey
}

type knownHostsLine struct {
	patterns []string
	key      ssh.PublicKey
	line     int
}

// parseKnownHosts parses all of data; any invalid line makes the whole data invalid, as for
// OpenSSH's own tools.
func parseKnownHosts(data []byte) (*knownHostsDB, error) {
	db := &knownHostsDB{}
	rest := data
	for len(rest) > 0 {
		marker, hosts, key, _, next, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("invalid known_hosts data: %w", err)
		}
		rest = next
		// ParseKnownHosts skips comments and blank lines; the entry is the last line consumed.
		consumed := data[:len(data)-len(rest)]
		lineNo := bytes.Count(consumed, []byte("\n"))
		if !bytes.HasSuffix(consumed, []byte("\n")) {
			lineNo++
		}
		for _, h := range hosts {
			if err := checkPattern(h); err != nil {
				return nil, fmt.Errorf("invalid known_hosts data: line %d: %w", lineNo, err)
			}
		}
		switch marker {
		case "revoked":
			db.revoked = append(db.revoked, key)
		case "cert-authority":
			// Host certificates are not used for git hosts; such lines vouch for no plain key.
		default:
			db.hosts = append(db.hosts, knownHostsLine{patterns: hosts, key: key, line: lineNo})
		}
	}
	return db, nil
}

func checkPattern(pattern string) error {
	p := strings.TrimPrefix(pattern, "!")
	if p == "" {
		return errors.New("negation without following host name")
	}
	if strings.HasPrefix(p, "|") {
		_, _, err := decodeHashedHost(p)
		return err
	}
	return nil
}

// decodeHashedHost splits "|1|<salt>|<hash>", the only hash format OpenSSH writes.
func decodeHashedHost(pattern string) (salt, hash []byte, err error) {
	parts := strings.Split(pattern, "|")
	if len(parts) != 4 || parts[0] != "" || parts[1] != "1" {
		return nil, nil, fmt.Errorf("unsupported hashed host %q", pattern)
	}
	if salt, err = base64.StdEncoding.DecodeString(parts[2]); err != nil {
		return nil, nil, fmt.Errorf("hashed host %q: %w", pattern, err)
	}
	if hash, err = base64.StdEncoding.DecodeString(parts[3]); err != nil {
		return nil, nil, fmt.Errorf("hashed host %q: %w", pattern, err)
	}
	return salt, hash, nil
}

// matches reports whether the line's patterns select host and port: at least one pattern
// matches and no negated one does.
func (l knownHostsLine) matches(host, port string) bool {
	matched := false
	for _, pattern := range l.patterns {
		negated := strings.HasPrefix(pattern, "!")
		if patternMatches(strings.TrimPrefix(pattern, "!"), host, port) {
			if negated {
				return false
			}
			matched = true
		}
	}
	return matched
}

func patternMatches(pattern, host, port string) bool {
	if strings.HasPrefix(pattern, "|") {
		salt, want, err := decodeHashedHost(pattern)
		if err != nil {
			return false
		}
		mac := hmac.New(sha1.New, salt)
		mac.Write([]byte(KnownHostsAddress(host, port)))
		return hmac.Equal(mac.Sum(nil), want)
	}
	patternHost, patternPort := pattern, defaultSSHPort
	if h, p, err := net.SplitHostPort(pattern); err == nil {
		patternHost, patternPort = h, p
	}
	return patternPort == port && wildcardMatch(strings.ToLower(patternHost), strings.ToLower(host))
}

// wildcardMatch matches name against an OpenSSH pattern where '*' stands for any sequence and
// '?' for any single character.
func wildcardMatch(pattern, name string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			pattern = strings.TrimLeft(pattern, "*")
			if pattern == "" {
				return true
			}
			for i := range len(name) + 1 {
				if wildcardMatch(pattern, name[i:]) {
					return true
				}
			}
			return false
		case '?':
			if name == "" {
				return false
			}
		default:
			if name == "" || name[0] != pattern[0] {
				return false
			}
		}
		pattern, name = pattern[1:], name[1:]
	}
	return name == ""
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
		if bytes.Equal(r.Marshal(), key.Marshal()) {
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
		if bytes.Equal(k.Key.Marshal(), key.Marshal()) {
			return nil
		}
	}
	return &knownhosts.KeyError{Want: want}
}
