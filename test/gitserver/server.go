// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package gitserver is an in-process SSH git server for tests. It serves read access to git
// repositories below a root directory by running the git CLI's upload-pack, accepts only the
// public keys it is given and has a fresh host key per server, so tests can exercise deploy
// keys and host key checking end to end without network access.
package gitserver

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HandshakeTimeout bounds the SSH handshake of a connection, so clients that stall do not
// pile up.
var HandshakeTimeout = 30 * time.Second

// GitBinary is the git CLI that serves the repositories.
var GitBinary = "git"

// Options configures a Server.
type Options struct {
	// AuthorizedKeys are authorized_keys lines of the keys that may fetch.
	AuthorizedKeys []string
	// RepoRoot is the directory holding the repositories; the repository "foo" of URL("foo")
	// is RepoRoot/foo, bare or with a working tree.
	RepoRoot string
}

// Server is a running SSH git server on 127.0.0.1.
type Server struct {
	listener net.Listener
	config   *ssh.ServerConfig
	hostKey  ssh.Signer
	repoRoot string
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu         sync.Mutex
	authorized map[string]bool
	conns      map[net.Conn]struct{}
	closed     bool

	accepted    atomic.Int64
	rejected    atomic.Int64
	uploadPacks atomic.Int64
}

// Start starts a server on a free port of 127.0.0.1.
func Start(opts Options) (*Server, error) {
	root, err := filepath.Abs(opts.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("resolving repository root: %w", err)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("repository root %q is not a directory", opts.RepoRoot)
	}
	if _, err := exec.LookPath(GitBinary); err != nil {
		return nil, fmt.Errorf("git server needs the git CLI: %w", err)
	}

	_, hostPrivate, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating host key: %w", err)
	}
	hostKey, err := ssh.NewSignerFromKey(hostPrivate)
	if err != nil {
		return nil, fmt.Errorf("creating host key signer: %w", err)
	}

	s := &Server{
		hostKey:    hostKey,
		repoRoot:   root,
		authorized: map[string]bool{},
		conns:      map[net.Conn]struct{}{},
	}
	if err := s.SetAuthorizedKeys(opts.AuthorizedKeys); err != nil {
		return nil, err
	}
	s.config = &ssh.ServerConfig{PublicKeyCallback: s.checkPublicKey}
	s.config.AddHostKey(hostKey)

	s.listener, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// SetAuthorizedKeys replaces the keys that may fetch, e.g. after a deploy key rotation.
// Established connections are not affected.
func (s *Server) SetAuthorizedKeys(authorizedKeys []string) error {
	keys := map[string]bool{}
	for _, line := range authorizedKeys {
		key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("invalid authorized key %q: %w", line, err)
		}
		keys[string(key.Marshal())] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorized = keys
	return nil
}

// AddAuthorizedKey additionally allows the key of an authorized_keys line to fetch.
func (s *Server) AddAuthorizedKey(authorizedKey string) error {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(authorizedKey))
	if err != nil {
		return fmt.Errorf("invalid authorized key %q: %w", authorizedKey, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorized[string(key.Marshal())] = true
	return nil
}

// Authenticate connects to the server with the private key identity (PEM or OpenSSH format, as
// in a deploy key Secret) and returns the handshake's error: nil if the server accepts the key,
// e.g. to show that a rotated key is refused. It does not fetch.
func (s *Server) Authenticate(identity []byte) error {
	signer, err := ssh.ParsePrivateKey(identity)
	if err != nil {
		return fmt.Errorf("parsing the private key: %w", err)
	}
	conn, err := ssh.Dial("tcp", s.Addr(), &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey()),
		Timeout:         HandshakeTimeout,
	})
	if err != nil {
		return err
	}
	return conn.Close()
}

// Addr returns the "127.0.0.1:port" the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Port returns the port the server listens on.
func (s *Server) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// URL returns the ssh:// URL of the repository RepoRoot/repo.
func (s *Server) URL(repo string) string {
	return "ssh://git@" + s.Addr() + "/" + strings.TrimPrefix(repo, "/")
}

// HostKey returns the server's public host key.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// KnownHostsLine returns the known_hosts line for the server ("[127.0.0.1]:port ssh-ed25519 ..."),
// without a trailing newline.
func (s *Server) KnownHostsLine() string {
	return knownhosts.Line([]string{s.Addr()}, s.hostKey.PublicKey())
}

// AcceptedAuths returns how many connections authenticated successfully.
func (s *Server) AcceptedAuths() int64 { return s.accepted.Load() }

// RejectedAuths returns how many public keys were offered that the server does not accept.
func (s *Server) RejectedAuths() int64 { return s.rejected.Load() }

// UploadPacks returns how many git-upload-pack commands (clones and fetches) were started.
func (s *Server) UploadPacks() int64 { return s.uploadPacks.Load() }

// Close stops the server, ends all connections and running git processes and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.listener.Close()
	for conn := range s.conns {
		_ = conn.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return err
}

func (s *Server) checkPublicKey(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	s.mu.Lock()
	ok := s.authorized[string(key.Marshal())]
	s.mu.Unlock()
	if !ok {
		s.rejected.Add(1)
		return nil, errors.New("public key not authorized")
	}
	return &ssh.Permissions{}, nil
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				_ = conn.Close()
			}()
			s.handleConn(conn)
		}()
	}
}

func (s *Server) handleConn(conn net.Conn) {
	_ = conn.SetDeadline(time.Now().Add(HandshakeTimeout))
	sconn, chans, reqs, err := ssh.NewServerConn(conn, s.config)
	if err != nil {
		return
	}
	defer func() { _ = sconn.Close() }()
	_ = conn.SetDeadline(time.Time{})
	s.accepted.Add(1)
	go ssh.DiscardRequests(reqs)

	var sessions sync.WaitGroup
	defer sessions.Wait()
	for newChannel := range chans {
		if newChannel.ChannelType() != "session" {
			_ = newChannel.Reject(ssh.UnknownChannelType, "only sessions are supported")
			continue
		}
		channel, requests, err := newChannel.Accept()
		if err != nil {
			continue
		}
		sessions.Go(func() { s.handleSession(channel, requests) })
	}
}

func (s *Server) handleSession(channel ssh.Channel, requests <-chan *ssh.Request) {
	var env []string
	var running sync.WaitGroup
	defer running.Wait()
	for req := range requests {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			// Only the protocol version matters to git; anything else a client sends is noise.
			if err := ssh.Unmarshal(req.Payload, &kv); err == nil && kv.Name == "GIT_PROTOCOL" {
				env = append(env, kv.Name+"="+kv.Value)
				_ = req.Reply(true, nil)
				continue
			}
			_ = req.Reply(false, nil)
		case "exec":
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			cmdEnv := slices.Clone(env)
			running.Go(func() {
				status := s.exec(channel, cmd.Command, cmdEnv)
				_, _ = channel.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
				_ = channel.Close()
			})
		default:
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}
}

// exec runs a git-upload-pack command line and returns its exit status.
func (s *Server) exec(channel ssh.Channel, command string, env []string) uint32 {
	repo, err := s.parseUploadPack(command)
	if err != nil {
		_, _ = fmt.Fprintf(channel.Stderr(), "gitserver: %v\n", err)
		return 128
	}
	s.uploadPacks.Add(1)

	cmd := exec.CommandContext(s.ctx, GitBinary,
		// Let clients fetch any commit, as go-git does when asked for a pinned revision.
		"-c", "uploadpack.allowAnySHA1InWant=true",
		"upload-pack", repo)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		// The served repositories must not depend on the configuration of the machine.
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
	}, env...)
	cmd.Stdout = channel
	cmd.Stderr = channel.Stderr()
	// An exec.Cmd with a non-file Stdin waits in Wait until the client closes its side, which
	// clients only do after they saw the end of our output; copying ourselves avoids that
	// deadlock.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_, _ = fmt.Fprintf(channel.Stderr(), "gitserver: %v\n", err)
		return 128
	}
	if err := cmd.Start(); err != nil {
		_, _ = fmt.Fprintf(channel.Stderr(), "gitserver: starting git: %v\n", err)
		return 128
	}
	go func() {
		_, _ = io.Copy(stdin, channel)
		_ = stdin.Close()
	}()
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() > 0 {
		return uint32(exitErr.ExitCode())
	}
	if err != nil {
		return 128
	}
	return 0
}

// parseUploadPack returns the repository directory of a git-upload-pack command line as sent
// by git ("git-upload-pack '/repo'") or go-git, refusing other commands and paths outside the
// repository root.
func (s *Server) parseUploadPack(command string) (string, error) {
	var arg string
	switch {
	case strings.HasPrefix(command, "git-upload-pack "):
		arg = strings.TrimPrefix(command, "git-upload-pack ")
	case strings.HasPrefix(command, "git upload-pack "):
		arg = strings.TrimPrefix(command, "git upload-pack ")
	default:
		return "", fmt.Errorf("only git-upload-pack is served, not %q", command)
	}
	path, err := shellUnquote(strings.TrimSpace(arg))
	if err != nil {
		return "", err
	}
	// Cleaning the path as if it were absolute drops any ".." that would leave the root.
	dir := filepath.Join(s.repoRoot, filepath.Clean("/"+path))
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return "", fmt.Errorf("repository %s not found", strconv.Quote(path))
	}
	return dir, nil
}

// shellUnquote undoes the single quoting git applies to the path (sq_quote_buf), and accepts
// an unquoted path without shell metacharacters.
func shellUnquote(arg string) (string, error) {
	if len(arg) >= 2 && arg[0] == '\'' && arg[len(arg)-1] == '\'' {
		inner := arg[1 : len(arg)-1]
		unquoted := strings.ReplaceAll(inner, `'\''`, `'`)
		if strings.Count(unquoted, "'") != strings.Count(inner, `'\''`) {
			return "", fmt.Errorf("malformed quoting in %q", arg)
		}
		return unquoted, nil
	}
	if arg == "" || strings.ContainsAny(arg, " \t\n'\"\\$`;&|<>") {
		return "", fmt.Errorf("unsupported repository argument %q", arg)
	}
	return arg, nil
}
