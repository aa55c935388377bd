// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package netcount provides a TCP listener that counts the connections it accepts, for tests that
// prove something never connected.
package netcount

import (
	"fmt"
	"net"
	"sync/atomic"
)

// Listener accepts connections on 127.0.0.1, closes them at once and counts them.
type Listener struct {
	listener net.Listener
	accepted atomic.Int32
}

// Listen starts a counting listener on a free loopback port.
func Listen() (*Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failed listening: %w", err)
	}
	c := &Listener{listener: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	return c, nil
}

// Port is the listener's port.
func (c *Listener) Port() int { return c.listener.Addr().(*net.TCPAddr).Port }

// Accepted is the number of connections accepted so far.
func (c *Listener) Accepted() int32 { return c.accepted.Load() }

// Close stops listening.
func (c *Listener) Close() error { return c.listener.Close() }
