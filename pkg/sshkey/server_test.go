// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sshkey_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// testServer is a minimal SSH server that accepts public key authentication for one key and
// nothing else, enough to prove that generated keys and scanned host keys work with a real
// SSH handshake.
type testServer struct {
	listener net.Listener
	wg       sync.WaitGroup
}

func (s *testServer) Addr() string { return s.listener.Addr().String() }

func newHostKey(kind string) ssh.Signer {
	var key any
	var err error
	switch kind {
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ecdsa":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		_, key, err = ed25519.GenerateKey(rand.Reader)
	}
	Expect(err).NotTo(HaveOccurred())
	signer, err := ssh.NewSignerFromKey(key)
	Expect(err).NotTo(HaveOccurred())
	return signer
}

// startTestServer serves until the spec ends; authorized is the only client key it accepts.
func startTestServer(authorized ssh.PublicKey, hostKeys ...ssh.Signer) *testServer {
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if authorized != nil && string(key.Marshal()) == string(authorized.Marshal()) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("unauthorized key")
		},
	}
	for _, key := range hostKeys {
		config.AddHostKey(key)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	s := &testServer{listener: listener}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { _ = conn.Close() }()
				sconn, chans, reqs, err := ssh.NewServerConn(conn, config)
				if err != nil {
					return
				}
				defer func() { _ = sconn.Close() }()
				go ssh.DiscardRequests(reqs)
				for ch := range chans {
					_ = ch.Reject(ssh.Prohibited, "no channels")
				}
			}()
		}
	}()
	DeferCleanup(func() {
		_ = listener.Close()
		s.wg.Wait()
	})
	return s
}

// dial authenticates with signer and checks the host key with callback.
func dial(addr string, signer ssh.Signer, callback ssh.HostKeyCallback, hostKeyAlgorithms ...string) error {
	client, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:              "git",
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   callback,
		HostKeyAlgorithms: hostKeyAlgorithms,
	})
	if err != nil {
		return err
	}
	return client.Close()
}
