// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

const defaultSSHPort = "22"

// scanAlgorithmGroups lists the host key algorithms ScanHostKey asks for, one handshake per
// group. A server signs the handshake with one host key only, and clients verifying later may
// negotiate a different key type than a single scan would see, so like ssh-keyscan we collect
// one key of every type the server has.
var scanAlgorithmGroups = [][]string{
	{ssh.KeyAlgoED25519},
	{ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521},
	{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA},
}

// scanClientVersion identifies our scans in the server's logs.
const scanClientVersion = "SSH-2.0-shoot-flux-keyscan"

// dialError is a failed connection: every further handshake would fail the same way.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// errKeyRecorded aborts a scan handshake once the host key is known, before any authentication.
var errKeyRecorded = errors.New("host key recorded")

// KnownHostsAddress returns the host pattern known_hosts uses for host and port: the bare
// host for the default port, "[host]:port" otherwise, lower-cased like OpenSSH does with host
// names before it looks them up.
func KnownHostsAddress(host, port string) string {
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if port == "" || port == defaultSSHPort {
		return host
	}
	return "[" + host + "]:" + port
}

// SplitHostPort splits "host:port", "[host]:port" or a bare host name into host and port, with
// port 22 when there is none.
func SplitHostPort(hostPort string) (host, port string) {
	h, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return strings.TrimSuffix(strings.TrimPrefix(hostPort, "["), "]"), defaultSSHPort
	}
	if p == "" {
		p = defaultSSHPort
	}
	return h, p
}

// ScanHostKey connects to the SSH server at hostPort ("host:port", port 22 if omitted) and
// returns its host keys as known_hosts lines, one per key type the server offers. It stops
// every handshake as soon as the server has shown its key, so it neither authenticates nor
// needs credentials. timeout bounds the whole scan.
func ScanHostKey(ctx context.Context, hostPort string, timeout time.Duration) ([]byte, error) {
	return ScanHostKeyWith(ctx, nil, hostPort, timeout)
}

// DialFunc opens the connection of a scan, e.g. hostpolicy.Policy.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// ScanHostKeyWith is ScanHostKey with the connections opened by dial; nil dials directly.
func ScanHostKeyWith(ctx context.Context, dial DialFunc, hostPort string, timeout time.Duration) ([]byte, error) {
	if dial == nil {
		var dialer net.Dialer
		dial = dialer.DialContext
	}
	host, port := SplitHostPort(hostPort)
	if host == "" {
		return nil, fmt.Errorf("no host in SSH address %q", hostPort)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	address := net.JoinHostPort(host, port)
	pattern := KnownHostsAddress(host, port)

	var lines bytes.Buffer
	var firstErr error
	for _, algorithms := range scanAlgorithmGroups {
		key, err := scanOnce(ctx, dial, address, algorithms)
		if err != nil {
			var (
				netErr  net.Error
				dialErr *dialError
			)
			if errors.As(err, &dialErr) || errors.As(err, &netErr) || ctx.Err() != nil {
				// The server is unreachable or too slow; further handshakes would fail the same way.
				if lines.Len() > 0 {
					break
				}
				// Network errors name the address already.
				return nil, err
			}
			// Most likely the server has no key of this type; the other groups may still succeed.
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		lines.WriteString(knownhosts.Line([]string{pattern}, key))
		lines.WriteByte('\n')
	}
	if lines.Len() == 0 {
		return nil, fmt.Errorf("ssh handshake with %s: %w", address, firstErr)
	}
	return lines.Bytes(), nil
}

func scanOnce(ctx context.Context, dial DialFunc, address string, algorithms []string) (ssh.PublicKey, error) {
	conn, err := dial(ctx, "tcp", address)
	if err != nil {
		return nil, &dialError{err: err}
	}
	defer func() { _ = conn.Close() }()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetDeadline(deadline); err != nil {
			return nil, err
		}
	}
	// A handshake with a server that accepted the connection but never answers would otherwise
	// outlive a cancelled context.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var key ssh.PublicKey
	config := &ssh.ClientConfig{
		User:              "git",
		ClientVersion:     scanClientVersion,
		HostKeyAlgorithms: algorithms,
		HostKeyCallback: func(_ string, _ net.Addr, offered ssh.PublicKey) error {
			key = offered
			return errKeyRecorded
		},
	}
	sshConn, _, _, err := ssh.NewClientConn(conn, address, config)
	if err == nil {
		// Unreachable with a callback that always fails, but a connection must not leak.
		_ = sshConn.Close()
	}
	if key != nil {
		return key, nil
	}
	if err == nil {
		err = errors.New("server did not present a host key")
	}
	return nil, err
}

// VerifyHostKeyCallback returns a host key callback that accepts only the keys in knownHosts,
// including hashed host names, wildcards and @revoked markers. The data is matched in memory.
func VerifyHostKeyCallback(knownHosts []byte) (ssh.HostKeyCallback, error) {
	db, err := parseKnownHosts(knownHosts)
	if err != nil {
		return nil, err
	}
	return db.check, nil
}

// KnownHostsContains reports whether knownHosts has an entry for hostPort ("host:port", port 22
// if omitted). Invalid known_hosts data contains no entries.
func KnownHostsContains(knownHosts []byte, hostPort string) bool {
	if len(bytes.TrimSpace(knownHosts)) == 0 {
		return false
	}
	db, err := parseKnownHosts(knownHosts)
	if err != nil {
		return false
	}
	host, port := SplitHostPort(hostPort)
	return len(db.keysFor(host, port)) > 0
}
