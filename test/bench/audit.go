// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"sort"
	"strings"

	"github.com/gardener/gardener/pkg/utils/managedresources"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

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
	// ownerProcess are the writes of the extension process that are for no shoot: the leases of
	// its leader election and of gardener's heartbeat.
	ownerProcess = "extension process (leases)"
)

// classify names what a write of the extension process was for and whose code did it: the events
// are the process's own (its identity in the audit log), so every write that is neither gardener's
// reconciler's, its health check's nor a lease is the actuator's, whatever the resource. Patches of Extensions are told apart
// by their bodies, which the sandbox's audit policy records: gardener's extension reconciler
// writes the finalizer, removes the operation annotation and sets lastOperation (Processing,
// Succeeded, Error); the shoot-flux actuator patches only providerStatus. gardener's health check
// library is the only one that updates (replaces) the status, to set its conditions.
func classify(ev sandbox.AuditEvent) (what, owner string) {
	if ev.ObjectRef == nil {
		// Still a write of the extension's user: it counts against "0 writes at rest".
		return ev.Verb + " (no object)", ownerExtension
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
	case "leases":
		return what + " (leader election, heartbeat)", ownerProcess
	}
	return what, ownerExtension
}

// writeBreakdown counts writes by what they were for.
type writeBreakdown struct {
	byWhat  map[string]int
	byOwner map[string]int
	// byManagedResource counts the writes of ManagedResources and their Secrets by the
	// ManagedResource's name.
	byManagedResource map[string]int
	// ownByResource counts the actuator's writes by resource (group/resource).
	ownByResource map[string]int
	// failedByWhat counts the rejected writes (conflict, already exists) by what they were for.
	failedByWhat map[string]int
	failed       int
	total        int
}

func breakdown(events []sandbox.AuditEvent) writeBreakdown {
	b := writeBreakdown{byWhat: map[string]int{}, byOwner: map[string]int{}, byManagedResource: map[string]int{}, ownByResource: map[string]int{}, failedByWhat: map[string]int{}}
	for _, ev := range events {
		if !isWrite(ev.Verb) {
			continue
		}
		what, owner := classify(ev)
		b.byWhat[what]++
		b.byOwner[owner]++
		if owner == ownerExtension {
			b.ownByResource[resourceName(ev.ObjectRef)]++
		}
		if name := managedResourceOf(ev); name != "" {
			b.byManagedResource[name]++
		}
		b.total++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300 {
			b.failed++
			b.failedByWhat[what+" ("+owner+")"]++
		}
	}
	return b
}

// resourceName is the group-qualified resource of a request, with its subresource.
func resourceName(ref *sandbox.AuditObjectRef) string {
	if ref == nil {
		return "(no object)"
	}
	name := ref.Resource
	if ref.APIGroup != "" {
		name += "." + ref.APIGroup
	}
	if ref.Subresource != "" {
		name += "/" + ref.Subresource
	}
	return name
}

// managedResourceOf returns the name of the shoot-flux ManagedResource a write of a
// ManagedResource or of one of its Secrets (gardener's managedresource-<name>-<hash>) is for;
// empty for other writes.
func managedResourceOf(ev sandbox.AuditEvent) string {
	if ev.ObjectRef == nil || ev.ObjectRef.Subresource != "" {
		return ""
	}
	for _, name := range managedResourceNames {
		switch ev.ObjectRef.Resource {
		case "managedresources":
			if ev.ObjectRef.Name == name {
				return name
			}
		case "secrets":
			if strings.HasPrefix(ev.ObjectRef.Name, managedresources.SecretPrefix+name+"-") {
				return name
			}
		}
	}
	return ""
}

// readBreakdown counts reads by verb and resource.
func readBreakdown(events []sandbox.AuditEvent) map[string]int {
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
