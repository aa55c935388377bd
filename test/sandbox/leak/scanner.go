// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

// Package leak finds private key material where it must never be: in log lines, events and
// Extension statuses. Recorder collects those texts and the private keys the garden holds while
// tests run; Scanner looks for every form in which a key could have been written out.
package leak

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
)

// PrivateKeyMarker is part of the armor of every PEM or OpenSSH private key.
const PrivateKeyMarker = "PRIVATE KEY"

const (
	// minLineLength is the shortest PEM body line taken as a needle: shorter ones (the last line
	// of a key) could match unrelated base64 text by chance.
	minLineLength = 20
	// contextLength is how much text around a finding it shows.
	contextLength = 80
)

// Scanner looks for private keys in texts.
type Scanner struct {
	needles []needle
}

type needle struct {
	text string
	// what describes the needle without revealing it.
	what string
}

// Finding is a text that contains key material.
type Finding struct {
	// Source says where the text came from, e.g. "log" or "seed event".
	Source string
	// What says which form of which key was found; it never contains the key.
	What string
	// Context is the text around the finding with the key material replaced.
	Context string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s in %q", f.Source, f.What, f.Context)
}

// NewScanner returns a scanner for the marker of private keys and for the given keys (the
// identity values of Secrets), each as raw text, base64-encoded and line by line of its PEM body.
func NewScanner(keys map[string][]byte) *Scanner {
	s := &Scanner{needles: []needle{{text: PrivateKeyMarker, what: "the private key marker " + PrivateKeyMarker}}}
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		key := bytes.TrimSpace(keys[name])
		if len(key) == 0 {
			continue
		}
		s.add(string(key), "the private key of "+name)
		s.add(base64.StdEncoding.EncodeToString(keys[name]), "the base64-encoded private key of "+name)
		s.add(base64.StdEncoding.EncodeToString(key), "the base64-encoded private key of "+name)
		for i, line := range bodyLines(key) {
			s.add(line, fmt.Sprintf("line %d of the private key of %s", i+1, name))
		}
	}
	return s
}

func (s *Scanner) add(text, what string) {
	for _, n := range s.needles {
		if n.text == text {
			return
		}
	}
	s.needles = append(s.needles, needle{text: text, what: what})
}

// Needles is the number of strings the scanner looks for.
func (s *Scanner) Needles() int {
	return len(s.needles)
}

// bodyLines are the lines of a PEM block between its armor lines that are long enough to be
// unique.
func bodyLines(key []byte) []string {
	var lines []string
	for _, line := range strings.Split(string(key), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "-----") || len(line) < minLineLength {
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// Scan returns the findings in text; source is recorded in them.
func (s *Scanner) Scan(source, text string) []Finding {
	var findings []Finding
	for _, n := range s.needles {
		i := strings.Index(text, n.text)
		if i < 0 {
			continue
		}
		findings = append(findings, Finding{Source: source, What: n.what, Context: s.context(text, i, n)})
	}
	return findings
}

// context returns up to 80 characters on either side of the needle at position i, with the
// needle and all other needles but the marker masked, so that a failure message does not spread
// the key further.
func (s *Scanner) context(text string, i int, n needle) string {
	before := text[max(0, i-contextLength):i]
	after := text[i+len(n.text) : min(len(text), i+len(n.text)+contextLength)]
	mask := func(t string) string {
		for _, other := range s.needles[1:] {
			t = strings.ReplaceAll(t, other.text, "<key material>")
		}
		return t
	}
	middle := "<key material>"
	if n.text == PrivateKeyMarker {
		middle = PrivateKeyMarker
	}
	return mask(before) + middle + mask(after)
}
