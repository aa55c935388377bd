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
	ownerOther       = "other"
)

// classify names what a write was for and whose code did it. Patches of Extensions are told apart
// by their bodies, which the sandbox's audit policy records: gardener's extension reconciler
// writes the finalizer, removes the operation annotation and sets lastOperation (Processing,
// Succeeded, Error); the shoot-flux actuator patches only providerStatus. gardener's health check
// library is the only one that updates (replaces) the status, to set its conditions.
func classify(ev sandbox.AuditEvent) (what, owner string) {
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
	// byManagedResource counts the writes of ManagedResources and their Secrets by the
	// ManagedResource's name.
	byManagedResource map[string]int
	failed            int
	total             int
}

func breakdown(events []sandbox.AuditEvent) writeBreakdown {
	b := writeBreakdown{byWhat: map[string]int{}, byOwner: map[string]int{}, byManagedResource: map[string]int{}}
	for _, ev := range events {
		if !isWrite(ev.Verb) {
			continue
		}
		what, owner := classify(ev)
		b.byWhat[what]++
		b.byOwner[owner]++
		if name := managedResourceOf(ev); name != "" {
			b.byManagedResource[name]++
		}
		b.total++
		if ev.ResponseStatus != nil && ev.ResponseStatus.Code >= 300 {
			b.failed++
		}
	}
	return b
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
