// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// AuditEvent is the part of a kube-apiserver audit event (Cluster.AuditLogPath) the tests read.
type AuditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	// ImpersonatedUser is the user the request acted as, if it impersonated one.
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef      *AuditObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
	RequestObject json.RawMessage `json:"requestObject"`
	// StageTimestamp is when the request reached its stage: for a completed request, when the
	// API server answered it.
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// AuditObjectRef is the object an audited request was about.
type AuditObjectRef struct {
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	APIGroup    string `json:"apiGroup"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// Permission names what a request needed, in RBAC terms: verb, group/resource[/subresource],
// namespace and name.
func (e AuditEvent) Permission() string {
	if e.ObjectRef == nil {
		return e.Verb + " (no object)"
	}
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	if e.ObjectRef.APIGroup != "" {
		resource = e.ObjectRef.APIGroup + "/" + resource
	}
	out := e.Verb + " " + resource
	if e.ObjectRef.Namespace != "" {
		out += " in namespace " + e.ObjectRef.Namespace
	}
	if e.ObjectRef.Name != "" {
		out += " named " + e.ObjectRef.Name
	}
	return out
}

// ByUser selects the requests made as user: authenticated as it, or impersonating it.
func ByUser(user string) func(AuditEvent) bool {
	return func(e AuditEvent) bool {
		if e.ImpersonatedUser != nil {
			return e.ImpersonatedUser.Username == user
		}
		return e.User.Username == user
	}
}

// AuditLog is an audit log file read in phases: each read returns the events written since the
// previous one.
type AuditLog struct {
	Path   string
	offset int64
}

// Mark skips everything written so far.
func (a *AuditLog) Mark() error {
	fi, err := os.Stat(a.Path)
	if err != nil {
		return fmt.Errorf("failed reading audit log: %w", err)
	}
	a.offset = fi.Size()
	return nil
}

// Read returns the completed requests selected by match written since the last Mark or Read.
func (a *AuditLog) Read(match func(AuditEvent) bool) ([]AuditEvent, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return nil, fmt.Errorf("failed opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("failed seeking in audit log: %w", err)
	}
	events, consumed, err := ParseAudit(f, match)
	a.offset += consumed
	return events, err
}

// ParseAudit reads the audit events of completed requests selected by match from JSON lines. A
// last line without newline may still be written and is left for the next read; consumed is the
// number of bytes up to it.
func ParseAudit(r io.Reader, match func(AuditEvent) bool) ([]AuditEvent, int64, error) {
	br := bufio.NewReaderSize(r, 1024*1024)
	var (
		events   []AuditEvent
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
		ev := AuditEvent{}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, consumed, fmt.Errorf("invalid audit event: %w", err)
		}
		if ev.Stage != "ResponseComplete" || !match(ev) {
			continue
		}
		events = append(events, ev)
	}
}
