// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"

	"github.com/google/pprof/profile"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Parsers of the benchmark", func() {
	Describe("heapTop", func() {
		It("sums in-use bytes by allocating function, largest first", func() {
			decode := &profile.Function{ID: 1, Name: "encoding/json.(*decodeState).literalStore"}
			cache := &profile.Function{ID: 2, Name: "k8s.io/client-go/tools/cache.(*threadSafeMap).Add"}
			loc := func(id uint64, f *profile.Function) *profile.Location {
				return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
			}
			prof := &profile.Profile{
				SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_space", Unit: "bytes"}},
				Sample: []*profile.Sample{
					{Location: []*profile.Location{loc(1, decode)}, Value: []int64{900, 100}},
					{Location: []*profile.Location{loc(2, cache)}, Value: []int64{10, 300}},
					{Location: []*profile.Location{loc(3, decode)}, Value: []int64{900, 150}},
					{Value: []int64{1, 7}},
				},
			}
			top, total := heapTop(prof, 2)
			Expect(total).To(BeEquivalentTo(557))
			Expect(top).To(Equal([]heapEntry{{function: cache.Name, bytes: 300}, {function: decode.Name, bytes: 250}}))
		})
	})

	Describe("parseMetrics", func() {
		It("reads samples with escaped labels and splits client requests by API server", func() {
			m, err := parseMetrics(strings.NewReader(`# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1000",method="GET"} 7
rest_client_requests_total{code="201",host="127.0.0.1:1000",method="POST"} 2
rest_client_requests_total{code="200",host="127.0.0.1:1000",method="PATCH"} 3
rest_client_requests_total{code="200",host="127.0.0.1:2000",method="GET"} 5
rest_client_requests_total{code="409",host="127.0.0.1:2000",method="PUT"} 1
go_memstats_heap_inuse_bytes 1.5e+07
odd{l="a \"quoted\", value\\with"} 1 1700000000
`))
			Expect(err).NotTo(HaveOccurred())
			Expect(requestCounts(m, "127.0.0.1:1000", "127.0.0.1:2000")).To(Equal(requests{SeedReads: 7, SeedWrites: 5, GardenReads: 5, GardenWrites: 1}))
			Expect(m.value("go_memstats_heap_inuse_bytes", nil)).To(BeEquivalentTo(15000000))
			Expect(m.value("odd", func(l map[string]string) bool { return l["l"] == `a "quoted", value\with` })).To(BeEquivalentTo(1))
		})

		It("rejects malformed lines", func() {
			_, err := parseMetrics(strings.NewReader(`metric{l="unterminated} 1`))
			Expect(err).To(HaveOccurred())
			_, err = parseMetrics(strings.NewReader(`metric notanumber`))
			Expect(err).To(HaveOccurred())
		})
	})

	Describe("classify", func() {
		event := func(verb, resource, subresource, body string) sandbox.AuditEvent {
			ev := sandbox.AuditEvent{Stage: "ResponseComplete", Verb: verb, RequestObject: []byte(body)}
			ev.ObjectRef = &sandbox.AuditObjectRef{Resource: resource, Subresource: subresource}
			return ev
		}

		It("tells the generic reconciler's writes from the actuator's and the health check's", func() {
			b := breakdown([]sandbox.AuditEvent{
				event("patch", "extensions", "", `{"metadata":{"finalizers":["extensions.gardener.cloud/shoot-flux"]}}`),
				event("patch", "extensions", "", `{"metadata":{"annotations":{"gardener.cloud/operation":null}}}`),
				event("patch", "extensions", "status", `{"status":{"lastOperation":{"state":"Processing"}}}`),
				event("patch", "extensions", "status", `{"status":{"providerStatus":{"kind":"FluxStatus"}}}`),
				event("update", "extensions", "status", `{"status":{"lastOperation":{},"providerStatus":{},"conditions":[]}}`),
				event("create", "secrets", "", ""),
				event("update", "managedresources", "", ""),
				event("get", "secrets", "", ""),
			})
			Expect(b.total).To(Equal(7))
			Expect(b.byOwner).To(Equal(map[string]int{ownerGeneric: 3, ownerExtension: 3, ownerHealthCheck: 1}))
		})

		It("counts every write of the extension process to a resource without a rule as the actuator's, by resource", func() {
			scrapeConfig := event("update", "scrapeconfigs", "", `{"spec":{}}`)
			scrapeConfig.ObjectRef.APIGroup = "monitoring.coreos.com"
			b := breakdown([]sandbox.AuditEvent{
				scrapeConfig,
				event("create", "configmaps", "", ""),
				event("patch", "events", "", ""),
				event("update", "leases", "", ""),
				event("create", "secrets", "", ""),
			})
			Expect(b.byOwner).To(Equal(map[string]int{ownerExtension: 4, ownerProcess: 1}))
			Expect(b.ownByResource).To(Equal(map[string]int{"scrapeconfigs.monitoring.coreos.com": 1, "configmaps": 1, "events": 1, "secrets": 1}))
		})
	})

	Describe("parseAudit", func() {
		It("keeps completed requests of the extension's user and leaves an unfinished line for later", func() {
			log := `{"stage":"ResponseComplete","verb":"get","user":{"username":"gardener-extension-shoot-flux"},"userAgent":"gardener-extension-shoot-flux/v0.0.0 (linux/amd64)","objectRef":{"resource":"secrets"}}
{"stage":"ResponseStarted","verb":"watch","user":{"username":"gardener-extension-shoot-flux"},"objectRef":{"resource":"secrets"}}
{"stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"userAgent":"bench/v0.0.0","objectRef":{"resource":"secrets"}}
{"stage":"ResponseComplete","verb":"get","user":{"username":"gardener-ext`
			events, consumed, err := sandbox.ParseAudit(strings.NewReader(log), sandbox.ByUser(extensionUser))
			Expect(err).NotTo(HaveOccurred())
			Expect(events).To(HaveLen(1))
			Expect(consumed).To(BeEquivalentTo(strings.LastIndex(log, "\n") + 1))
		})

		// The self-test of the attribution: a write counts by who made it, not by the client that
		// sent it, so a client of the extension with another user agent cannot hide a write.
		It("counts a write of the extension's user under any user agent, and none of another user under the extension's", func() {
			log := `{"stage":"ResponseComplete","verb":"update","user":{"username":"gardener-extension-shoot-flux"},"userAgent":"Go-http-client/2.0","objectRef":{"resource":"scrapeconfigs","apiGroup":"monitoring.coreos.com"}}
{"stage":"ResponseComplete","verb":"patch","user":{"username":"admin"},"impersonatedUser":{"username":"gardener-extension-shoot-flux"},"userAgent":"other/v1","objectRef":{"resource":"configmaps"}}
{"stage":"ResponseComplete","verb":"update","user":{"username":"admin"},"userAgent":"gardener-extension-shoot-flux/v0.0.0 (linux/amd64)","objectRef":{"resource":"secrets"}}
{"stage":"ResponseComplete","verb":"create","user":{"username":"gardener-extension-shoot-flux"},"userAgent":"Go-http-client/2.0"}
`
			events, _, err := sandbox.ParseAudit(strings.NewReader(log), sandbox.ByUser(extensionUser))
			Expect(err).NotTo(HaveOccurred())
			b := breakdown(events)
			Expect(b.byOwner).To(Equal(map[string]int{ownerExtension: 3}))
			Expect(b.ownByResource).To(Equal(map[string]int{"scrapeconfigs.monitoring.coreos.com": 1, "configmaps": 1, "(no object)": 1}))
		})
	})

	Describe("process information", func() {
		It("gives a kluctl controller's Python renderers the controller's role", func() {
			const self, extension = 1, 2
			procs := map[int]proc{
				self:      {ppid: 0, cmdline: "bench -first-deploy=10"},
				extension: {ppid: self, cmdline: "/tmp/x/gardener-extension-shoot-flux --config=c"},
				10:        {ppid: self, cmdline: "/cache/kluctl-controller/v2.28.2/kluctl controller run --metrics-bind-address=127.0.0.1:1"},
				11:        {ppid: 10, cmdline: "/tmp/pod/tmp/kluctl-cache/go-embed-jinja2/kluctl-python/bin/python3 -c main"},
				12:        {ppid: self, cmdline: "/cache/source-controller/v1.7.4/source-controller --watch-all-namespaces"},
				13:        {ppid: self, cmdline: "git upload-pack repo"},
				14:        {ppid: 13, cmdline: "git pack-objects"},
			}
			Expect(roleOf(procs, self, self, extension)).To(Equal(roleBenchmark))
			Expect(roleOf(procs, extension, self, extension)).To(Equal(roleExtension))
			Expect(roleOf(procs, 10, self, extension)).To(Equal(roleKluctl))
			Expect(roleOf(procs, 11, self, extension)).To(Equal(roleKluctl))
			Expect(roleOf(procs, 12, self, extension)).To(Equal(roleFlux))
			Expect(roleOf(procs, 13, self, extension)).To(Equal(roleOther))
			Expect(roleOf(procs, 14, self, extension)).To(Equal(roleOther))
		})
	})
})
