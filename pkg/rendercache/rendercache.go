// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package rendercache is the process's one cache of rendered output (Flux and kluctl manifests, the
// compressed controllers ManagedResource data). Tenants choose part of its inputs, so it is an LRU
// bounded by entries and bytes, keyed by hashes of the inputs
// (docs/development/architecture.md#caching).
package rendercache

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

const (
	// DefaultMaxEntries bounds the number of results of the process-wide cache. A seed's shoots
	// share a few Flux and kluctl renders (versions x component sets x namespaces) plus one
	// compressed blob per distinct set of controller settings; 256 leaves room for ~240 distinct
	// settings before a shared render is dropped.
	DefaultMaxEntries = 256
	// DefaultMaxBytes bounds the bytes of the process-wide cache. A render takes 150-470 KiB, a
	// compressed blob 15-35 KiB, so 256 blobs take at most ~9 MiB and tenants' settings alone do not
	// reach the bound; renders of many versions, component sets and namespaces do, and then evict,
	// but do not grow the process. The bound is what the chart's memory limit accounts for
	// (docs/operations/configuration.md, "Memory").
	DefaultMaxBytes = 32 << 20
)

// Shared is the cache of the process, shared by every render and every shoot.
var Shared = New(DefaultMaxEntries, DefaultMaxBytes)

// Key identifies a result: the SHA-256 of its inputs.
type Key [sha256.Size]byte

// KeyOf hashes the inputs. Each part is length-prefixed, so that no two lists of parts share a key
// ("a", "bc" is not "ab", "c"). The first part should name the kind of result.
func KeyOf(parts ...string) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// Cache is an LRU of results bounded by entries and bytes. Concurrent callers of one key wait for
// one build; builds of other keys run in parallel, the lock is only held for the bookkeeping.
type Cache struct {
	maxEntries int
	maxBytes   int64

	mu       sync.Mutex
	order    *list.List // of *entry, most recently used first
	entries  map[Key]*list.Element
	bytes    int64
	inflight map[Key]*call
}

type entry struct {
	key   Key
	value any
	size  int64
}

// call is a build in flight; the callers of its key wait for done.
type call struct {
	done  chan struct{}
	value any
	size  int64
	err   error
}

// ErrBuildAborted is what the waiters of a build get when it panicked.
var ErrBuildAborted = errors.New("render aborted")

// New returns a cache that keeps at most maxEntries results and maxBytes bytes.
func New(maxEntries int, maxBytes int64) *Cache {
	return &Cache{
		maxEntries: maxEntries,
		maxBytes:   maxBytes,
		order:      list.New(),
		entries:    map[Key]*list.Element{},
		inflight:   map[Key]*call{},
	}
}

// Get returns the result stored for key or runs build, which returns the result and its size in
// bytes, and stores it. Failures are not kept, so a later call tries again; a result larger than
// the byte bound is returned but not kept. The result is shared between callers and must not be
// modified.
func Get[T any](c *Cache, key Key, build func() (T, int64, error)) (T, error) {
	var zero T
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		value := el.Value.(*entry).value
		c.mu.Unlock()
		return as[T](value)
	}
	if cl, ok := c.inflight[key]; ok {
		c.mu.Unlock()
		<-cl.done
		if cl.err != nil {
			return zero, cl.err
		}
		return as[T](cl.value)
	}
	// The error stays set if build panics, so waiters do not take an empty result for success.
	cl := &call{done: make(chan struct{}), err: ErrBuildAborted}
	c.inflight[key] = cl
	c.mu.Unlock()

	defer func() {
		c.mu.Lock()
		delete(c.inflight, key)
		if cl.err == nil {
			c.add(key, cl.value, cl.size)
		}
		c.mu.Unlock()
		close(cl.done)
	}()
	value, size, err := build()
	cl.value, cl.size, cl.err = value, size, err
	return value, err
}

func as[T any](value any) (T, error) {
	t, ok := value.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("render cache holds a %T where a %T was expected", value, zero)
	}
	return t, nil
}

// add stores a result and drops the least recently used ones beyond the bounds. The caller holds
// the lock.
func (c *Cache) add(key Key, value any, size int64) {
	if size > c.maxBytes {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.bytes -= el.Value.(*entry).size
		c.order.Remove(el)
		delete(c.entries, key)
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, value: value, size: size})
	c.bytes += size
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		oldest := c.order.Back()
		e := oldest.Value.(*entry)
		c.order.Remove(oldest)
		delete(c.entries, e.key)
		c.bytes -= e.size
	}
}

// Len returns the number of stored results.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Bytes returns the size of the stored results.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Contains tells whether a result is stored for key, without marking it used.
func (c *Cache) Contains(key Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}
