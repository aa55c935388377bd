// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package network

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy forwards TCP connections on a loopback port to a target address while it is up, and
// resets them while it is down, so that a test can cut a component off from an API server without
// stopping the API server: the component's connections break as in a network outage, while the
// test's own clients keep working. TLS passes through unchanged, so the target's serving
// certificate must be valid for 127.0.0.1 (envtest's is).
type Proxy struct {
	target   string
	listener net.Listener

	mu    sync.Mutex
	up    bool
	conns map[net.Conn]struct{}

	wg sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards to target ("host:port"); it starts up.
func StartProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed listening for the proxy to %s: %w", target, err)
	}
	p := &Proxy{target: target, listener: l, up: true, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr is the "host:port" the proxy listens on.
func (p *Proxy) Addr() string {
	return p.listener.Addr().String()
}

// Up forwards new connections from now on.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = true
}

// Down resets every open connection and every new one until Up. A reset rather than a silent drop
// keeps the outage's errors immediate, so that a scenario does not wait for TCP timeouts.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = false
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
	}
}

// Close stops listening, resets all connections and waits until the proxy's goroutines ended.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.Down()
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("failed closing the proxy to %s: %w", p.target, err)
	}
	return nil
}

func (p *Proxy) serve() {
	for {
		c, err := p.listener.Accept()
		if err != nil {
			// Close ended the listener.
			return
		}
		if !p.track(c) {
			reset(c)
			continue
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// track registers an accepted connection if the proxy is up.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// forward copies both directions between the client and a new connection to the target until one
// side ends; Down resets the client side, which ends both copies.
func (p *Proxy) forward(c net.Conn) {
	defer p.untrack(c)
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		reset(c)
		return
	}
	defer func() { _ = t.Close() }()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(t, c)
	go pipe(c, t)
	<-done
	// One direction ended: closing both ends the other copy.
	_ = c.Close()
	_ = t.Close()
	<-done
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

// reset closes a connection with a TCP reset instead of an orderly shutdown.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
