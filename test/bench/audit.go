package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// auditEvent is the part of a kube-apiserver audit event the benchmark reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject json.RawMessage `json:"requestObject"`
}

// auditLog is an audit log file read in phases: each read returns the events written since the
// previous one.
type auditLog struct {
	path   string
	offset int64
}

// mark skips everything written so far.
func (a *auditLog) mark() error {
	fi, err := os.Stat(a.path)
	if err != nil {
		return fmt.Errorf("failed reading audit log: %w", err)
	}
	a.offset = fi.Size()
	return nil
}

// read returns the complete events written since the last mark or read of the given user agent
// (prefix).
func (a *auditLog) read(userAgent string) ([]auditEvent, error) {
	f, err := os.Open(a.path)
	if err != nil {
		return nil, fmt.Errorf("failed opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("failed seeking in audit log: %w", err)
	}
	events, consumed, err := parseAudit(f, userAgent)
	a.offset += consumed
	return events, err
}

// parseAudit reads audit events of completed requests of a user agent (prefix) from JSON lines.
// A last line without newline may still be written and is left for the next read; consumed is
// the number of bytes up to it.
func parseAudit(r io.Reader, userAgent string) ([]auditEvent, int64, error) {
	br := bufio.NewReaderSize(r, 1024*1024)
	var (
		events   []auditEvent
		consumed int64
	)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return events, consumed, nil
		}
		if err != nil {
			return nil, consumed, fmt.Errorf("failed reading audit log: %w", err)
		}
		consumed += int64(len(line))
		ev := auditEvent{}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, consumed, fmt.Errorf("invalid audit event: %w", err)
		}
		if ev.Stage != "ResponseComplete" || !strings.HasPrefix(ev.UserAgent, userAgent) {
			continue
		}
		events = append(events, ev)
	}
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Who a write is attributed to.
const (
	ownerExtension   = "shoot-flux actuator"
	ownerGeneric     = "gardener generic reconciler"
	ownerHealthCheck = "gardener health check"
	ownerOther       = "other"
)

// classify names what a write was for and whose code did it. Patches of Extensions are told apart
// by their bodies, which the sandbox's audit policy records: gardener's extension reconciler
// writes the finalizer, removes the operation annotation and sets lastOperation (Processing,
// Succeeded, Error); the shoot-flux actuator patches only providerStatus. gardener's health check
// library is the only one that updates (replaces) the status, to set its conditions.
func classify(ev auditEvent) (what, owner string) {
	if ev.ObjectRef == nil {
		return ev.Verb + " (no object)", ownerOther
	}
	resource := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		resource += "/" + ev.ObjectRef.Subresource
	}
	what = ev.Verb + " " + resource
	body := string(ev.RequestObject)
	switch resource {
	case "extensions":
		switch {
		case strings.Contains(body, `"finalizers"`):
			return what + " (finalizer)", ownerGeneric
		case strings.Contains(body, `"annotations"`):
			return what + " (remove operation annotation)", ownerGeneric
		}
		return what, ownerGeneric
	case "extensions/status":
		switch {
		case ev.Verb == "update":
			return what + " (health check conditions)", ownerHealthCheck
		case strings.Contains(body, `"providerStatus"`):
			return what + " (providerStatus)", ownerExtension
		case strings.Contains(body, `"lastOperation"`):
			return what + " (lastOperation)", ownerGeneric
		}
		return what, ownerGeneric
	case "secrets", "managedresources":
		return what, ownerExtension
	case "leases":
		return what + " (heartbeat)", ownerOther
	}
	return what, ownerOther
}

// writeBreakdown counts writes by what they were for.
type writeBreakdown struct {
	byWhat  map[string]int
	byOwner map[string]int
	failed  int
	total   int
}

func breakdown(events []auditEvent) writeBreakdown {
	b := writeBreakdown{byWhat: map[string]int{}, byOwner: map[string]int{}}
	for _, ev := range events {
		if !isWrite(ev.Verb) {
			continue
		}
		what, owner := classify(ev)
		b.byWhat[what]++
		b.byOwner[owner]++
		b.total++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300 {
			b.failed++
		}
	}
	return b
}

// readBreakdown counts reads by verb and resource.
func readBreakdown(events []auditEvent) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		if isWrite(ev.Verb) || ev.ObjectRef == nil {
			continue
		}
		out[ev.Verb+" "+ev.ObjectRef.Resource]++
	}
	return out
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
